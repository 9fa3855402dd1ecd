package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// Arch is a processor the guests run on: the emulator and board that boot
// it, the ports a guest talks on, and the compilers that build for it.
type Arch struct {
	// Name is Debian's and Go's name of it ("amd64", "arm64").
	Name string
	// QEMU is the system emulator, QEMUPackage the Debian package that
	// installs it.
	QEMU, QEMUPackage string
	// Machine are qemu's options that pick the board and the CPU.
	Machine []string
	// Console is the kernel's console: the first serial port, qemu's
	// standard output.
	Console string
	// Results are qemu's options that attach the results port, writing to
	// the file given, and ResultsDevice is that port in the guest.
	Results       func(file string) []string
	ResultsDevice string
	// Modules are the modules the guest loads first, before the results
	// port can be written (their drivers are modules in Debian's kernel).
	Modules []string
	// CC is the C compiler that builds static programs for it, CCPackage
	// the Debian package that installs it.
	CC, CCPackage string
	// Compat is a program of the 32-bit architecture the kernels also
	// run (their compat system calls); nil where the guests have none.
	Compat *CompatProgram
}

// CompatProgram is a 32-bit program without libc, in the guest as
// /usr/bin/Name: testdata/run/cprogs/Name.s assembled by As and linked by
// Ld, each a command and its first arguments (for 32-bit ARM, Debian's
// binutils-arm-linux-gnueabihf; for i386 the host's binutils).
type CompatProgram struct {
	Name   string
	As, Ld []string
}

// AMD64 is x86-64 on qemu's default PC: the results on a second 16550
// serial port.
var AMD64 = &Arch{Name: "amd64", QEMU: "qemu-system-x86_64", QEMUPackage: "qemu-system-x86",
	Machine: []string{"-cpu", "max"}, Console: "ttyS0",
	Results:       func(file string) []string { return []string{"-serial", "file:" + file} },
	ResultsDevice: "/dev/ttyS1", CC: "gcc", CCPackage: "gcc",
	Compat: &CompatProgram{Name: "i386", As: []string{"as", "--32"}, Ld: []string{"ld", "-m", "elf_i386"}}}

// ARM64 is arm64 on qemu's virt board, whose one PL011 UART is the
// console: the results go on a virtio console (hvc0), whose drivers
// (virtio_mmio, virtio_console) are modules in Debian's arm64 kernels.
var ARM64 = &Arch{Name: "arm64", QEMU: "qemu-system-aarch64", QEMUPackage: "qemu-system-arm",
	Machine: []string{"-M", "virt", "-cpu", "max"}, Console: "ttyAMA0",
	Results: func(file string) []string {
		return []string{"-device", "virtio-serial-device", "-chardev", "file,id=results,path=" + file,
			"-device", "virtconsole,chardev=results"}
	},
	ResultsDevice: "/dev/hvc0", Modules: []string{"virtio_mmio", "virtio_console"},
	CC: "aarch64-linux-gnu-gcc", CCPackage: "gcc-aarch64-linux-gnu",
	Compat: &CompatProgram{Name: "arm32", As: []string{"arm-linux-gnueabihf-as"}, Ld: []string{"arm-linux-gnueabihf-ld"}}}

// Arches are the architectures of Kernels, AMD64 first.
var Arches = []*Arch{AMD64, ARM64}

// modules are the modules a kernel image of the architecture keeps (with
// what they depend on): its own, GuestModules and CaseModules.
func (a *Arch) modules() []string {
	return slices.Concat(a.Modules, GuestModules, CaseModules)
}

// BootModules are the modules a guest of the architecture loads at boot,
// in that order (with what they depend on, before them).
func (a *Arch) BootModules() []string { return slices.Concat(a.Modules, GuestModules) }

// cacheSuffix tells the architecture's kernels apart in the cache:
// amd64's directories are the suites' names, as before arm64's came.
func (a *Arch) cacheSuffix() string {
	if a == AMD64 {
		return ""
	}
	return "-" + a.Name
}

// QEMUPath returns the path of the architecture's emulator, or why there
// is none.
func (a *Arch) QEMUPath() (string, error) {
	path, err := exec.LookPath(a.QEMU)
	if err != nil {
		return "", fmt.Errorf("%w: no %s (apt-get install %s)", ErrUnavailable, a.QEMU, a.QEMUPackage)
	}
	return path, nil
}

// Busybox returns a statically linked busybox for the architecture: the
// host's (StaticBusybox) for amd64, else Debian 12's busybox-static for
// it, fetched with apt into the cache once.
func (a *Arch) Busybox(cache string) (string, error) {
	if a == AMD64 {
		return StaticBusybox()
	}
	path := filepath.Join(cache, "busybox-"+a.Name, "busybox")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("%w: no apt-get to fetch busybox-static for %s", ErrUnavailable, a.Name)
	}
	tmp, err := os.MkdirTemp(cache, ".busybox-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	opts, err := aptOptions(tmp, bookworm, a)
	if err != nil {
		return "", err
	}
	for _, args := range [][]string{{"-qq", "update"}, {"-qq", "download", "busybox-static"}} {
		if _, err := run(tmp, "apt-get", append(opts, args...)...); err != nil {
			return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "busybox-static_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %d busybox-static packages in %s", len(debs), tmp)
	}
	root := filepath.Join(tmp, "root")
	if _, err := run(tmp, "dpkg-deb", "-x", debs[0], root); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.Rename(filepath.Join(root, "bin", "busybox"), path)
}

// build assembles src and links it into out.
func (c *CompatProgram) build(src, out string) error {
	for _, args := range [][]string{slices.Concat(c.As, []string{"-o", out + ".o", src}), slices.Concat(c.Ld, []string{"-o", out, out + ".o"})} {
		if msg, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", args[0], filepath.Base(src), err, msg)
		}
	}
	return nil
}
