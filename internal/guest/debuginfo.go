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

// DebugModules are the modules whose DWARF the guests have beside the
// kernel's (Image.Debuginfo), by their directory in the kernel's tree:
// binfmt_misc, which every guest loads (GuestModules) and every exec
// runs (load_misc_binary).
var DebugModules = map[string]string{"binfmt_misc": "fs"}

// ModuleDebugPath is where Debian's debug package installs the module's
// debug file (debuginfo.OpenModule looks there).
func (img *Image) ModuleDebugPath(module string) string {
	return filepath.Join("/usr/lib/debug/lib/modules", img.Release(), "kernel", DebugModules[module], module+".ko")
}

// Debuginfo returns the DWARF of the kernel and of DebugModules for the
// guests of cases that read it (Case.Debuginfo), by where the debug
// package installs each: from Debian's linux-image-RELEASE-dbg (0.9-1
// GB, of which the vmlinux is the 11th file, the modules' 5-6 GB follow)
// the vmlinux, kept in the cache with only its debug sections and notes
// (the build ID bpftap checks), without the relocations 6.1's carries
// (237-330 MB, which a guest's initramfs holds), and the modules' debug
// files as they are (relocatable objects, whose relocations the DWARF
// needs). Fetched once, as Fetch fetches.
func (img *Image) Debuginfo() (map[string]string, error) {
	if img.Arch != AMD64 {
		return nil, fmt.Errorf("the guests have the kernel's DWARF on amd64 only (the host's objcopy strips amd64's vmlinux)")
	}
	files := map[string]string{img.DebugPath(): filepath.Join(img.Dir, "vmlinux.debug")}
	for m := range DebugModules {
		files[img.ModuleDebugPath(m)] = filepath.Join(img.Dir, "debug-modules", m+".ko")
	}
	var missing []string
	for at, cached := range files {
		if _, err := os.Stat(cached); err != nil {
			missing = append(missing, at)
		}
	}
	if len(missing) == 0 {
		return files, nil
	}
	if err := img.fetchDebuginfo(missing, files); err != nil {
		return nil, err
	}
	return files, nil
}

// fetchDebuginfo extracts the files at the paths missing from the debug
// package into the cache, where files says.
func (img *Image) fetchDebuginfo(missing []string, files map[string]string) error {
	tmp, err := os.MkdirTemp(img.Dir, ".debug-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	opts, err := img.apt(tmp)
	if err != nil {
		return err
	}
	pkg := filepath.Base(img.Dir) + "-dbg"
	if _, err := run(tmp, "apt-get", append(opts, "-qq", "download", pkg)...); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download left %d packages %s in %s", len(debs), pkg, tmp)
	}
	// tar stops once it has found each member (dpkg-deb then dies of
	// the closed pipe)
	extract := `deb=$1; shift; dpkg-deb --fsys-tarfile "$deb" | tar -x --occurrence=1 -f - "$@"`
	args := []string{"-c", extract, "sh", debs[0]}
	for _, at := range missing {
		args = append(args, "."+at)
	}
	if _, err := run(tmp, "sh", args...); err != nil {
		return err
	}
	for _, at := range missing {
		dst := files[at]
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		src := filepath.Join(tmp, at)
		if at == img.DebugPath() {
			if _, err := run(tmp, "objcopy", "--only-keep-debug", "--remove-section=.rela*", src, "vmlinux.debug"); err != nil {
				return err
			}
			src = filepath.Join(tmp, "vmlinux.debug")
		}
		if err := os.Rename(src, dst); err != nil {
			return err
		}
	}
	return nil
}
