package debuginfo

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// KernelMissingError says that the running kernel's DWARF is not
// installed: Tried are the places looked in, Other the debug files found
// there that belong to another build of the kernel (their build ID is not
// the running kernel's), which describe other addresses.
type KernelMissingError struct {
	Release string
	Tried   []string
	Other   []string
}

func (e *KernelMissingError) Error() string {
	msg := fmt.Sprintf("the kernel's DWARF debuginfo is not installed (looked for %s)", strings.Join(e.Tried, ", "))
	if len(e.Other) > 0 {
		msg = fmt.Sprintf("%s is the DWARF debuginfo of another build of the kernel (its build ID is not the running kernel's, /sys/kernel/notes)", strings.Join(e.Other, ", "))
	}
	return fmt.Sprintf("%s: install the debug package of Linux %s (Debian: linux-image-%s-dbg; Ubuntu: linux-image-%s-dbgsym; Fedora, RHEL: kernel-debuginfo-%s)",
		msg, e.Release, e.Release, e.Release, e.Release)
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
	missing := &KernelMissingError{Release: release, Tried: kernelDebugFiles(release, id)}
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
			f := newFile("the kernel", e)
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
