package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/ksym"
)

// Debuginfo is the running kernel's DWARF, from its debug package, read
// on first use (debuginfo.OpenKernel): the vmlinux of this release whose
// build ID is the one the kernel's notes (/sys/kernel/notes) give.
var Debuginfo = sync.OnceValues(func() (*debuginfo.File, error) {
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return nil, err
	}
	var id []byte
	if notes, err := os.ReadFile("/sys/kernel/notes"); err == nil {
		id = debuginfo.NoteBuildID(notes, binary.NativeEndian)
	}
	f, err := debuginfo.OpenKernel(strings.TrimSpace(string(release)), id)
	if err == nil {
		f.LoadOffset = sync.OnceValues(func() (int64, error) { return loadOffset(f) })
	}
	return f, err
})

// loadOffset is how far the running kernel was moved from the link-time
// addresses of its debug file f (KASLR): where /proc/kallsyms puts its
// text (_stext) less where f's symbol table does.
func loadOffset(f *debuginfo.File) (int64, error) {
	link, ok := f.DataSymbol("_stext")
	if !ok {
		return 0, fmt.Errorf("%s has no symbol _stext", f.DebugPath)
	}
	loaded, ok := ksym.AddressIn("_stext", "")
	if !ok {
		return 0, errors.New("/proc/kallsyms gives no address for _stext (kptr_restrict hides the kernel's addresses from this user)")
	}
	return int64(loaded - link), nil
}
