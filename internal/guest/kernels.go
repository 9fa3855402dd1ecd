package guest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Kernel is a Debian kernel a guest boots.
type Kernel struct {
	// Name is how cases name the kernel ("6.1", "6.12"): its version,
	// whatever its architecture.
	Name string
	// Arch is the processor it runs on.
	Arch *Arch
	// Suite is the Debian release whose linux-image-ARCH picks the package.
	Suite string
	// Sources is the apt sources line the package comes from; empty means the
	// host's own apt sources (the host is Debian 12 on amd64).
	Sources string
	// Package is the prefix the chosen package's name must have, so that a
	// host of another release does not pass its kernel off as this one.
	Package string
}

// String names the kernel and, but for amd64's, its architecture:
// "6.1", "6.1-arm64".
func (k Kernel) String() string {
	if k.Arch == AMD64 {
		return k.Name
	}
	return k.Name + "-" + k.Arch.Name
}

// Kernels are the guest kernels, oldest first: Debian 11's 5.10 (the
// oldest long-term kernel SystemTap users run: BPF memory charged to
// RLIMIT_MEMLOCK, no bpf_get_current_task_btf, no global functions with
// pointer arguments, no atomics with fetch, no bpf_for_each_map_elem;
// docs/kernels.md), Debian 12's 6.1 (kprobes, fentry, no kprobe-multi) and
// Debian 13's 6.12 (kprobe-multi and kprobe sessions too).
//
// Each is there for arm64 too, under the same name, from the same suite's
// arm64 packages (ARM64: 5.10 and 6.1 have no ftrace direct calls there,
// so no fentry).
var Kernels = []Kernel{
	{Name: "5.10", Arch: AMD64, Suite: "bullseye", Package: "linux-image-5.10.", Sources: bullseye},
	{Name: "6.1", Arch: AMD64, Suite: "bookworm", Package: "linux-image-6.1."},
	{Name: "6.12", Arch: AMD64, Suite: "trixie", Package: "linux-image-6.12.", Sources: trixie},
	{Name: "5.10", Arch: ARM64, Suite: "bullseye", Package: "linux-image-5.10.", Sources: bullseye},
	// the host's lists hold amd64's packages only
	{Name: "6.1", Arch: ARM64, Suite: "bookworm", Package: "linux-image-6.1.", Sources: bookworm},
	{Name: "6.12", Arch: ARM64, Suite: "trixie", Package: "linux-image-6.12.", Sources: trixie},
}

// The apt sources of the suites. bookworm's debian-archive-keyring
// (2023.3+deb12u2) holds bullseye's and trixie's signing keys, so these
// lists are verified like the host's own.
const (
	bullseye = "deb http://deb.debian.org/debian bullseye main"
	bookworm = "deb http://deb.debian.org/debian bookworm main"
	trixie   = "deb http://deb.debian.org/debian trixie main"
)

// Image is a kernel unpacked in the cache.
type Image struct {
	Kernel
	Dir     string // the cache directory of the package
	Vmlinuz string
	Config  string
	// Modules are the modules the cache holds, uncompressed, by name:
	// GuestModules, CaseModules and every module they depend on.
	Modules map[string]string
	// Builtin are those of them the kernel has built in (modules.builtin):
	// there is nothing to load.
	Builtin map[string]bool
}

// GuestModules are the modules every guest loads at boot, with what they
// depend on: binfmt_misc, whose load_misc_binary every execve calls, gives
// tests a module function to probe and a module's BTF to read; scsi_mod
// (after scsi_common) is the SCSI mid layer that scsi.* probes.
var GuestModules = []string{"binfmt_misc", "scsi_mod"}

// CaseModules are the modules a case may ask for (its modules directive),
// loaded before it with what they depend on, in order: the NFS server
// (nfsd: sunrpc, grace, lockd, nfs_acl, auth_rpcgss) and client (nfsv3,
// nfsv4: nfs, netfs or fscache, dns_resolver). They cost a guest's boot
// nothing unless a case of that boot asks for them.
var CaseModules = []string{"nfsd", "nfsv3", "nfsv4"}

// ErrUnavailable marks the failures that mean a guest cannot be had on this
// machine (no apt, no network, no such package), as opposed to a bug.
var ErrUnavailable = errors.New("no guest on this machine")

// CacheDir is where kernel images are kept across runs: $BPFTAP_GUEST_CACHE,
// else /var/cache/bpftap-guest when it can be written, else the user's cache.
func CacheDir() (string, error) {
	if dir := os.Getenv("BPFTAP_GUEST_CACHE"); dir != "" {
		return dir, os.MkdirAll(dir, 0o755)
	}
	dir := "/var/cache/bpftap-guest"
	if err := os.MkdirAll(dir, 0o755); err == nil {
		return dir, nil
	}
	user, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(user, "bpftap-guest")
	return dir, os.MkdirAll(dir, 0o755)
}

// Fetch returns k's image from the cache, downloading and unpacking it first
// when the cache has none. A cached image is used as it is (delete the cache
// directory to fetch the newest). Two runs may fetch at once: each works in a
// temporary directory of its own and renames the result into place, and the
// loser of the race uses the winner's image.
func (k Kernel) Fetch(cache string) (*Image, error) {
	suite := filepath.Join(cache, k.Suite+k.Arch.cacheSuffix())
	if img := k.cached(suite); img != nil {
		return img, nil
	}
	if err := os.MkdirAll(suite, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(suite, ".fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pkg, err := k.download(tmp)
	if err != nil {
		return nil, err
	}
	staged := filepath.Join(tmp, "image")
	if err := unpack(tmp, staged, k.Arch.modules()); err != nil {
		return nil, err
	}
	dst := filepath.Join(suite, pkg)
	err = os.Rename(staged, dst)
	if err != nil && k.cached(suite) == nil {
		// An entry from before the cache kept modules: replace it.
		os.RemoveAll(dst)
		err = os.Rename(staged, dst)
	}
	if err != nil && k.cached(suite) == nil {
		return nil, err
	}
	if img := k.cached(suite); img != nil {
		return img, nil
	}
	return nil, fmt.Errorf("%s: no kernel in %s after unpacking", pkg, suite)
}

// cached returns the image in the suite's cache directory, the newest when
// there are several, or nil. An entry without GuestModules and CaseModules
// (cached before the guests loaded them) is no image.
func (k Kernel) cached(suite string) *Image {
	dirs, _ := filepath.Glob(filepath.Join(suite, k.Package+"*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if img := k.image(dirs[i]); img != nil {
			return img
		}
	}
	return nil
}

// image returns the image in dir when it is complete, or nil.
func (k Kernel) image(dir string) *Image {
	img := &Image{Kernel: k, Dir: dir, Modules: map[string]string{}, Builtin: map[string]bool{}}
	img.Vmlinuz = filepath.Join(dir, "vmlinuz")
	img.Config = filepath.Join(dir, "config")
	if _, err := os.Stat(img.Vmlinuz); err != nil {
		return nil
	}
	kos, _ := filepath.Glob(filepath.Join(dir, "modules", "*.ko"))
	for _, ko := range kos {
		img.Modules[strings.TrimSuffix(filepath.Base(ko), ".ko")] = ko
	}
	builtin, _ := os.ReadFile(filepath.Join(dir, "modules", "builtin"))
	for _, m := range strings.Fields(string(builtin)) {
		img.Builtin[m] = true
	}
	for _, m := range k.Arch.modules() {
		if img.Modules[m] == "" && !img.Builtin[m] {
			return nil
		}
	}
	return img
}

// apt readies apt to fetch k's suite's packages into dir (its lists
// updated where the suite is not the host's) and returns its options.
func (k Kernel) apt(dir string) ([]string, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, fmt.Errorf("%w: no apt-get to fetch Debian %s's kernel", ErrUnavailable, k.Suite)
	}
	opts, err := aptOptions(dir, k.Sources, k.Arch)
	if err != nil {
		return nil, err
	}
	if k.Sources != "" {
		if _, err := run(dir, "apt-get", append(opts, "-qq", "update")...); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return opts, nil
}

// download puts the kernel's .deb in dir and returns the package's name.
func (k Kernel) download(dir string) (string, error) {
	opts, err := k.apt(dir)
	if err != nil {
		return "", err
	}
	meta := "linux-image-" + k.Arch.Name
	show, err := run(dir, "apt-cache", append(opts, "show", "--no-all-versions", meta)...)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	pkg := imageDependency(show)
	if !strings.HasPrefix(pkg, k.Package) {
		return "", fmt.Errorf("%w: %s of %s depends on %q, not %s*", ErrUnavailable, meta, k.Suite, pkg, k.Package)
	}
	if _, err := run(dir, "apt-get", append(opts, "-qq", "download", pkg)...); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return pkg, nil
}

// aptOptions are the options that point apt at the sources line and the
// architecture, with lists and archives of its own under dir; with no
// sources line, the host's own (amd64). The host's apt setup is only read.
func aptOptions(dir, sources string, arch *Arch) ([]string, error) {
	opts := []string{"-o", "APT::Sandbox::User=root"}
	if sources == "" {
		return opts, nil
	}
	list := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(list, []byte(sources+"\n"), 0o644); err != nil {
		return nil, err
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return append(opts,
		"-o", "APT::Architecture="+arch.Name, "-o", "APT::Architectures::="+arch.Name,
		// the host's installed packages are of another architecture
		"-o", "Dir::State::status=/dev/null",
		"-o", "Dir::Etc::sourcelist="+list,
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists="+filepath.Join(dir, "lists"),
		"-o", "Dir::Cache="+filepath.Join(dir, "cache")), nil
}

// imageDependency returns the linux-image package the metapackage's record
// (apt-cache show) depends on.
func imageDependency(record []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(record))
	for sc.Scan() {
		deps, ok := strings.CutPrefix(sc.Text(), "Depends:")
		if !ok {
			continue
		}
		for _, dep := range strings.Split(deps, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(dep), " ")
			if strings.HasPrefix(name, "linux-image-") {
				return name
			}
		}
	}
	return ""
}

// unpack extracts the .deb in dir with dpkg-deb -x and moves what a guest
// needs into staged: vmlinuz, config, and the modules named (the
// architecture's modules()) with what they depend on, uncompressed, in
// modules/ (the other modules are left out: 6.1's take 400 MB).
func unpack(dir, staged string, modules []string) error {
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download left %d packages in %s", len(debs), dir)
	}
	root := filepath.Join(dir, "root")
	if _, err := run(dir, "dpkg-deb", "-x", debs[0], root); err != nil {
		return err
	}
	kernels, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(kernels) != 1 {
		return fmt.Errorf("%s: %d kernels in /boot", debs[0], len(kernels))
	}
	version := strings.TrimPrefix(filepath.Base(kernels[0]), "vmlinuz-")
	if err := os.Mkdir(staged, 0o755); err != nil {
		return err
	}
	for src, dst := range map[string]string{
		kernels[0]: "vmlinuz",
		filepath.Join(root, "boot", "config-"+version): "config",
	} {
		if err := os.Rename(src, filepath.Join(staged, dst)); err != nil {
			return err
		}
	}
	tree := filepath.Join(root, "lib", "modules", version)
	if _, err := os.Stat(tree); err != nil { // trixie's packages install under /usr
		tree = filepath.Join(root, "usr", "lib", "modules", version)
	}
	return unpackModules(tree, filepath.Join(staged, "modules"), modules)
}

// unpackModules copies the modules named from the package's module tree
// to dst, and the modules they depend on (their .modinfo's depends, read
// once each is copied), decompressing those compressed with xz; those of
// them the kernel has built in (its modules.builtin) are listed in
// dst/builtin instead. The package has no modules.dep: depmod writes it on
// installation.
func unpackModules(tree, dst string, modules []string) error {
	found, err := moduleFiles(tree)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	builtin := builtinModules(tree)
	var inKernel []string
	queue := slices.Clone(modules)
	done := map[string]bool{}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if done[m] {
			continue
		}
		done[m] = true
		src, ok := found[m]
		switch {
		case !ok && builtin[m]:
			inKernel = append(inKernel, m)
			continue
		case !ok:
			return fmt.Errorf("module %s is not in %s", m, tree)
		}
		out := filepath.Join(dst, m+".ko")
		if err := uncompressed(tree, src, out); err != nil {
			return err
		}
		deps, err := moduleDepends(out)
		if err != nil {
			return err
		}
		queue = append(queue, deps...)
	}
	return os.WriteFile(filepath.Join(dst, "builtin"), []byte(strings.Join(inKernel, "\n")+"\n"), 0o644)
}

// moduleFiles finds the module files under tree, by module name.
func moduleFiles(tree string) (map[string]string, error) {
	found := map[string]string{}
	err := filepath.WalkDir(tree, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if name, ok := strings.CutSuffix(strings.TrimSuffix(d.Name(), ".xz"), ".ko"); ok {
			found[moduleName(name)] = path
		}
		return nil
	})
	return found, err
}

// builtinModules are the modules the kernel has built in, by name, from
// the package's modules.builtin (kernel/drivers/char/virtio_console.ko).
func builtinModules(tree string) map[string]bool {
	data, _ := os.ReadFile(filepath.Join(tree, "modules.builtin"))
	builtin := map[string]bool{}
	for _, line := range strings.Fields(string(data)) {
		builtin[moduleName(strings.TrimSuffix(filepath.Base(line), ".ko"))] = true
	}
	return builtin
}

// uncompressed moves the module src to out, decompressing it when it is
// compressed with xz.
func uncompressed(tree, src, out string) error {
	if !strings.HasSuffix(src, ".xz") {
		return os.Rename(src, out)
	}
	if _, err := exec.LookPath("xz"); err != nil {
		return fmt.Errorf("%w: no xz to decompress %s (apt-get install xz-utils)", ErrUnavailable, src)
	}
	data, err := run(tree, "xz", "-dc", src)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// moduleName is the name the kernel knows a module file by: dashes in a
// file's name are underscores in the module's.
func moduleName(file string) string {
	return strings.ReplaceAll(file, "-", "_")
}

// moduleDepends returns the modules the module file ko needs loaded
// before it: the depends= entry of its .modinfo section.
func moduleDepends(ko string) ([]string, error) {
	f, err := elf.Open(ko)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .modinfo section", ko)
	}
	info, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", ko, err)
	}
	for _, entry := range bytes.Split(info, []byte{0}) {
		if deps, ok := bytes.CutPrefix(entry, []byte("depends=")); ok && len(deps) > 0 {
			return strings.Split(string(deps), ","), nil
		}
	}
	return nil, nil
}

// LoadOrder returns the modules named and every module they depend on, in
// an order insmod can load them: each after those it depends on.
func (img *Image) LoadOrder(names ...string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(m string) error
	visit = func(m string) error {
		if seen[m] {
			return nil
		}
		seen[m] = true
		if img.Builtin[m] {
			return nil // in the kernel already
		}
		ko := img.Modules[m]
		if ko == "" {
			return fmt.Errorf("module %s is not in %s (the modules a case may ask for are GuestModules and CaseModules)", m, img.Dir)
		}
		deps, err := moduleDepends(ko)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		order = append(order, m)
		return nil
	}
	for _, m := range names {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// run runs a command in dir and returns its standard output; an error
// carries the command's standard error.
func run(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// Features returns the lines of the kernel's configuration that decide
// which kinds of kernel probes it offers.
func (img *Image) Features() string {
	data, err := os.ReadFile(img.Config)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		for _, opt := range []string{"KPROBES", "KPROBE_EVENTS", "FPROBE", "FUNCTION_TRACER", "DEBUG_INFO_BTF", "BPF_LSM"} {
			if strings.HasPrefix(line, "CONFIG_"+opt+"=") || line == "# CONFIG_"+opt+" is not set" {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String()
}
