package debuginfo

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// KernelMissingError says that the running kernel's DWARF, or its
// module Module's, is not installed: Tried are the places looked in,
// Other the debug files found there that belong to another build of the
// kernel (their build ID is not the running kernel's), which describe
// other addresses.
type KernelMissingError struct {
	Release string
	Module  string
	Tried   []string
	Other   []string
}

func (e *KernelMissingError) Error() string {
	what, whose := "the kernel", "the kernel's"
	if e.Module != "" {
		what, whose = "module "+e.Module, "module "+e.Module+"'s"
	}
	msg := fmt.Sprintf("%s DWARF debuginfo is not installed (looked for %s)", whose, strings.Join(e.Tried, ", "))
	if len(e.Other) > 0 {
		msg = fmt.Sprintf("%s is the DWARF debuginfo of another build of %s (its build ID is not the running one's, %s)",
			strings.Join(e.Other, ", "), what, e.notes())
	}
	return fmt.Sprintf("%s: install the debug package of Linux %s (Debian: linux-image-%s-dbg; Ubuntu: linux-image-%s-dbgsym; Fedora, RHEL: kernel-debuginfo-%s)",
		msg, e.Release, e.Release, e.Release, e.Release)
}

// notes is where the running kernel or module gives its build ID.
func (e *KernelMissingError) notes() string {
	if e.Module != "" {
		return "/sys/module/" + e.Module + "/notes"
	}
	return "/sys/kernel/notes"
}

// kernelDebugFiles are the places distributions install the kernel's
// debug file (its vmlinux with DWARF), by build ID first, as stap and
// perf look for it.
func kernelDebugFiles(release string, id []byte) []string {
	var out []string
	if len(id) > 1 {
		h := hex.EncodeToString(id)
		out = append(out, filepath.Join(DebugRoot, ".build-id", h[:2], h[2:]+".debug"))
	}
	return append(out,
		filepath.Join(DebugRoot, "boot", "vmlinux-"+release),           // Debian, Ubuntu
		filepath.Join(DebugRoot, "lib", "modules", release, "vmlinux"), // Fedora, RHEL, SUSE
		filepath.Join("/boot", "vmlinux-"+release),
		filepath.Join("/lib", "modules", release, "build", "vmlinux"))
}

// OpenKernel reads the DWARF of the running kernel, of release (uname's)
// and build ID id (its notes; nil: not checked), from its debug file. A
// debug file of another build is refused: its addresses are not this
// kernel's (one without a build ID cannot be told, and is taken).
func OpenKernel(release string, id []byte) (*File, error) {
	looked.Add(1)
	return openKernelFile(&KernelMissingError{Release: release, Tried: kernelDebugFiles(release, id)}, "the kernel", id)
}

// OpenModule reads the DWARF of the running kernel's module name, of
// build ID id (its notes in /sys/module/NAME/notes; nil: not checked),
// from its debug file: the module as built, before it was stripped, a
// relocatable object whose sections this package places (relocate.go).
// Debian and Ubuntu install it as
// /usr/lib/debug/lib/modules/RELEASE/kernel/DIR/NAME.ko, Fedora and RHEL
// as .../NAME.ko.debug, where DIR is the module's own directory.
func OpenModule(release, name string, id []byte) (*File, error) {
	looked.Add(1)
	missing := &KernelMissingError{Release: release, Module: name, Tried: moduleDebugFiles(release, name)}
	return openKernelFile(missing, "module "+name, id)
}

// moduleDebugFiles are the debug files of module name under the release's
// debug directory (a module's file name has - where its name has _), or
// where one would be when there is none.
func moduleDebugFiles(release, name string) []string {
	root := filepath.Join(DebugRoot, "lib", "modules", release)
	names := map[string]bool{}
	for _, n := range []string{name, strings.ReplaceAll(name, "_", "-")} {
		names[n+".ko"], names[n+".ko.debug"] = true, true
	}
	var found []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && names[d.Name()] {
			found = append(found, path)
		}
		return nil
	})
	if len(found) == 0 {
		return []string{filepath.Join(root, "kernel", "...", name+".ko")}
	}
	return found
}

// openKernelFile reads the first of missing.Tried that has DWARF and is
// of build ID id, the debug file of what.
func openKernelFile(missing *KernelMissingError, what string, id []byte) (*File, error) {
	for _, path := range missing.Tried {
		e, err := elf.Open(path)
		if err != nil {
			continue
		}
		switch {
		case !hasDWARF(e):
		case id != nil && buildID(e) != nil && !bytes.Equal(buildID(e), id):
			missing.Other = append(missing.Other, path)
		default:
			defer e.Close()
			f := newFile(what, e)
			f.DebugPath = path
			if err := f.readDebugFrame(e); err != nil {
				return nil, err
			}
			if err := f.load(e); err != nil {
				return nil, err
			}
			return f, nil
		}
		e.Close()
	}
	return nil, missing
}
