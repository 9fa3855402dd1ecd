package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Release is the kernel's release as uname gives it (6.1.0-56-amd64):
// the image package's name without its prefix.
func (img *Image) Release() string {
	return strings.TrimPrefix(filepath.Base(img.Dir), "linux-image-")
}

// DebugPath is where Debian's debug package installs the kernel's vmlinux
// with DWARF, in the guest as on a host (debuginfo.OpenKernel looks there).
func (img *Image) DebugPath() string {
	return "/usr/lib/debug/boot/vmlinux-" + img.Release()
}

// Debuginfo returns the kernel's DWARF for the guests of cases that read
// it (Case.Debuginfo): the vmlinux of Debian's debug package
// (linux-image-RELEASE-dbg, 0.9-1 GB, of which the vmlinux is the 11th
// file), kept in the cache with only its debug sections and notes (the
// build ID bpftap checks), without the relocations 6.1's carries: 237-330
// MB, which a guest's initramfs holds. Fetched once, as Fetch fetches.
func (img *Image) Debuginfo() (string, error) {
	if img.Arch != AMD64 {
		return "", fmt.Errorf("the guests have the kernel's DWARF on amd64 only (the host's objcopy strips amd64's vmlinux)")
	}
	dst := filepath.Join(img.Dir, "vmlinux.debug")
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp(img.Dir, ".debug-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	opts, err := img.apt(tmp)
	if err != nil {
		return "", err
	}
	pkg := filepath.Base(img.Dir) + "-dbg"
	if _, err := run(tmp, "apt-get", append(opts, "-qq", "download", pkg)...); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download left %d packages %s in %s", len(debs), pkg, tmp)
	}
	// tar stops at the first match: the rest of the 5-6 GB stream is
	// modules' debug files (dpkg-deb then dies of the closed pipe)
	vmlinux := "." + img.DebugPath()
	extract := `dpkg-deb --fsys-tarfile "$1" | tar -x --occurrence=1 -f - "$2"`
	if _, err := run(tmp, "sh", "-c", extract, "sh", debs[0], vmlinux); err != nil {
		return "", err
	}
	if _, err := run(tmp, "objcopy", "--only-keep-debug", "--remove-section=.rela*", vmlinux, "vmlinux.debug"); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "vmlinux.debug"), dst); err != nil {
		return "", err
	}
	return dst, nil
}
