package kernel

import (
	"encoding/binary"
	"os"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/debuginfo"
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
	return debuginfo.OpenKernel(strings.TrimSpace(string(release)), id)
})
