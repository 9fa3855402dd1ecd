package guest

import (
	"bytes"
	"cmp"
	"debug/elf"
	_ "embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// initScript is the guest's /init.
//
//go:embed init.sh
var initScript []byte

// Initramfs is what goes into a guest's initial root file system.
type Initramfs struct {
	Busybox string // a statically linked busybox
	// Applets is the busybox whose --list-full lists the applets to link,
	// "" for Busybox (which may be another architecture's).
	Applets string
	Bpftap  string            // a statically linked bpftap, as /bin/bpftap
	Tests   map[string]string // Go test binaries by package name, as /tests/NAME.test
	// TestData are the testdata directories of those packages by name, as
	// /tests/NAME/testdata (the binary runs in /tests/NAME).
	TestData map[string]string
	// TestFlags are more flags for those binaries by name (no spaces within
	// a flag), as /tests/NAME.flags.
	TestFlags map[string][]string
	Cases     []*Case // as /cases/NAME.cmd and the files in /cases/NAME
	// Modules are kernel modules by name, as /modules/NAME.ko.
	Modules map[string]string
	// Config is the kernel's configuration, as /boot/config-RELEASE (init
	// names it after the running kernel).
	Config string
	// Boot are the Modules /init loads before anything runs, in that
	// order (as /modules/boot).
	Boot []string
	// CaseModules are, by case name, the Modules /init loads before that
	// case, in that order, those not loaded yet (as /cases/NAME.modules).
	CaseModules map[string][]string
	// Files are more host files by their path in the guest (usr/bin/x), for
	// what a bench needs beside bpftap (a workload, another tracer and its
	// shared libraries).
	Files map[string]string
	// Debuginfo, when set, are the debug files of the kernel and its
	// modules (Image.Debuginfo) by where the debug package installs them,
	// as /debuginfo/N, which init links there (as /debuginfo/links lists)
	// for the cases that read them (Case.Debuginfo) and removes after
	// each: the others run as on a machine without the debug package.
	Debuginfo map[string]string
	// Bench, when set, is a host program or script copied to /bench/run,
	// which init runs before the cases and tests with no time limit of its
	// own (the boot's context bounds it), framed as the run "bench run".
	Bench string
	// Slack multiplies the guest's time limits (CaseTimeout or a case's
	// own, TestBinaryTimeout): an emulated guest runs slower by its own
	// clock when the host is busy. 0 is 1.
	Slack int
}

// The guest's time limits by its clock, in seconds, before Slack: a
// case's, unless its timeout directive says, and a Go test binary's.
const (
	CaseTimeout       = 150
	TestBinaryTimeout = 240
)

// caseLimit is the time limit of case k in the guest, in seconds.
func (r *Initramfs) caseLimit(k *Case) int { return max(r.Slack, 1) * cmp.Or(k.Timeout, CaseTimeout) }

// LongestLimit is the longest time limit of a run in the guest: longer
// than that, a run is hung (the guest's own timeout has failed).
func (r *Initramfs) LongestLimit() time.Duration {
	longest := 0
	if len(r.Tests) > 0 {
		longest = max(r.Slack, 1) * TestBinaryTimeout
	}
	for _, k := range r.Cases {
		longest = max(longest, r.caseLimit(k))
	}
	return time.Duration(longest) * time.Second
}

// AddModules puts the modules named by boot, and those r's cases ask for
// (Case.Modules), with every module they depend on, into r: Modules holds
// only the modules some load needs, so that a boot whose cases want none
// of CaseModules carries none of them.
func (r *Initramfs) AddModules(img *Image, boot ...string) error {
	order, err := img.LoadOrder(boot...)
	if err != nil {
		return err
	}
	r.Boot = order
	r.Modules = map[string]string{}
	r.CaseModules = map[string][]string{}
	for _, k := range r.Cases {
		if len(k.Modules) == 0 {
			continue
		}
		if r.CaseModules[k.Name], err = img.LoadOrder(k.Modules...); err != nil {
			return fmt.Errorf("case %s: %v", k.Name, err)
		}
		order = append(order, r.CaseModules[k.Name]...)
	}
	for _, m := range order {
		r.Modules[m] = img.Modules[m]
	}
	return nil
}

// StaticBusybox finds busybox on PATH and checks that it needs no dynamic
// loader (Debian's busybox-static package installs one).
func StaticBusybox() (string, error) {
	path, err := exec.LookPath("busybox")
	if err != nil {
		return "", fmt.Errorf("%w: no busybox (apt-get install busybox-static)", ErrUnavailable)
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%w: %s is dynamically linked (apt-get install busybox-static)", ErrUnavailable, path)
		}
	}
	return path, nil
}

// Write writes the initramfs to path as an uncompressed newc cpio archive
// (the kernel unpacks it faster than a compressed one under emulation).
func (r *Initramfs) Write(path string) error {
	lister := cmp.Or(r.Applets, r.Busybox)
	applets, err := exec.Command(lister, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %v", lister, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := newCPIOWriter(f)
	for _, dir := range []string{"proc", "sys", "dev", "tmp", "root", "cases", "tests", "modules"} {
		c.Dir(dir)
	}
	c.Bytes("init", 0o755, initScript)
	c.Bytes("etc/hostname", 0o644, []byte("bpftap-guest\n"))
	c.Bytes("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	c.Bytes("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	c.File("bin/busybox", r.Busybox)
	for _, applet := range strings.Fields(string(applets)) {
		if applet != "bin/busybox" {
			c.Symlink(applet, "/bin/busybox")
		}
	}
	c.File("bin/bpftap", r.Bpftap)
	if r.Config != "" {
		c.File("boot/config", r.Config)
	}
	for name, ko := range r.Modules {
		c.File("modules/"+name+".ko", ko)
	}
	c.Bytes("modules/boot", 0o644, []byte(strings.Join(r.Boot, " ")+"\n"))
	for name, mods := range r.CaseModules {
		c.Bytes("cases/"+name+".modules", 0o644, []byte(strings.Join(mods, " ")+"\n"))
	}
	for name, bin := range r.Tests {
		c.File("tests/"+name+".test", bin)
	}
	for name := range r.Tests {
		c.Bytes("tests/"+name+".timeout", 0o644, []byte(strconv.Itoa(max(r.Slack, 1)*TestBinaryTimeout)+"\n"))
	}
	for name, flags := range r.TestFlags {
		c.Bytes("tests/"+name+".flags", 0o644, []byte(strings.Join(flags, " ")+"\n"))
	}
	for name, dir := range r.TestData {
		if err := addTree(c, "tests/"+name+"/testdata", dir); err != nil {
			return err
		}
	}
	for name, src := range r.Files {
		c.File(strings.TrimPrefix(name, "/"), src)
	}
	if r.Bench != "" {
		c.File("bench/run", r.Bench)
	}
	var links []string
	for i, at := range slices.Sorted(maps.Keys(r.Debuginfo)) {
		c.File(fmt.Sprintf("debuginfo/%d", i), r.Debuginfo[at])
		links = append(links, fmt.Sprintf("/debuginfo/%d %s\n", i, at))
	}
	if len(links) > 0 {
		c.Bytes("debuginfo/links", 0o644, []byte(strings.Join(links, "")))
	}
	for _, k := range r.Cases {
		if k.Debuginfo && len(links) > 0 {
			c.Bytes("cases/"+k.Name+".debuginfo", 0o644, nil)
		}
		c.Bytes("cases/"+k.Name+".cmd", 0o644, []byte(k.Run+"\n"))
		c.Bytes("cases/"+k.Name+".timeout", 0o644, []byte(strconv.Itoa(r.caseLimit(k))+"\n"))
		c.Dir("cases/" + k.Name)
		for _, file := range k.Files {
			c.Bytes("cases/"+k.Name+"/"+file.Name, 0o755, file.Data)
		}
	}
	if err := c.Close(); err != nil {
		return err
	}
	return f.Close()
}

// addTree adds the regular files, directories and symbolic links under the
// host directory src as dst.
func addTree(c *cpioWriter, dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		name := filepath.ToSlash(filepath.Join(dst, rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			c.Symlink(name, target)
		case d.IsDir():
			c.Dir(name)
		case d.Type().IsRegular():
			c.File(name, path)
		}
		return nil
	})
}

// BuildStatic builds what runs in a guest of arch from the repository at
// repo into dir: a static bpftap, and a static test binary of each package
// (a path like ./internal/bpfrt) by name (bpfrt; internal/probes/attach is
// probes_attach). It returns the test binaries and the testdata
// directories they need.
func BuildStatic(repo, dir string, arch *Arch, pkgs []string) (bpftap string, tests, testdata map[string]string, err error) {
	bpftap = filepath.Join(dir, "bpftap")
	goTool := func(args ...string) error { return goTool(repo, arch, args...) }
	if err := goTool("build", "-o", bpftap, "./cmd/bpftap"); err != nil {
		return "", nil, nil, err
	}
	tests, testdata = map[string]string{}, map[string]string{}
	for _, pkg := range pkgs {
		name := strings.ReplaceAll(strings.TrimPrefix(filepath.Clean(pkg), "internal/"), "/", "_")
		bin := filepath.Join(dir, name+".test")
		if err := goTool("test", "-c", "-o", bin, pkg); err != nil {
			return "", nil, nil, err
		}
		tests[name] = bin
		if st, err := os.Stat(filepath.Join(repo, pkg, "testdata")); err == nil && st.IsDir() {
			testdata[name] = filepath.Join(repo, pkg, "testdata")
		}
	}
	return bpftap, tests, testdata, nil
}

// goTool runs the go command in repo with cgo off, so that what it builds
// is static and runs on a guest with no C library, for arch.
func goTool(repo string, arch *Arch, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch.Name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return nil
}

// GuestPrograms are the C programs of testdata/run/cprogs the cases trace,
// built static on the host (the guest has no C library) as /usr/bin/NAME,
// with DWARF (-g): scale (a function called with a 64-bit argument, for
// uprobes and uretprobes), ticks (USDT markers with arguments, one
// semaphore), request (parameters, locals and a global read by name) and
// perfcount (page faults, context switches and CPU time to count).
var GuestPrograms = []string{"scale", "ticks", "request", "perfcount"}

// UserFiles returns the files the cases use besides bpftap, by their path
// in the guest: GuestPrograms and the arch's Compat program, built for
// arch into dir, and the repository's examples as /examples/NAME. A
// program that does not build is an error (gcc and libc6-dev,
// gcc-aarch64-linux-gnu, binutils-arm-linux-gnueabihf: .ci/run installs
// them).
func UserFiles(repo, dir string, arch *Arch) (map[string]string, error) {
	files := map[string]string{}
	for _, name := range GuestPrograms {
		out := filepath.Join(dir, name)
		cmd := exec.Command(arch.CC, "-static", "-g", "-O2", "-o", out, filepath.Join(repo, "testdata", "run", "cprogs", name+".c"))
		if arch != AMD64 {
			// sys/sdt.h is the same text for every architecture; the
			// cross compiler's include path does not have it.
			cmd.Args = append(cmd.Args, "-idirafter", "/usr/include/x86_64-linux-gnu")
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s %s: %v\n%s", arch.CC, name, err, msg)
		}
		files["usr/bin/"+name] = out
	}
	if c := arch.Compat; c != nil {
		out := filepath.Join(dir, c.Name)
		if err := c.build(filepath.Join(repo, "testdata", "run", "cprogs", c.Name+".s"), out); err != nil {
			return nil, err
		}
		files["usr/bin/"+c.Name] = out
	}
	examples, err := filepath.Glob(filepath.Join(repo, "examples", "*.stp"))
	if err != nil {
		return nil, err
	}
	for _, ex := range examples {
		files["examples/"+filepath.Base(ex)] = ex
	}
	return files, nil
}
