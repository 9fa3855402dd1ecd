package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/ksym"
)

// Debuginfo is the running kernel's DWARF, from its debug package, read
// on first use (debuginfo.OpenKernel): the vmlinux of this release whose
// build ID is the one the kernel's notes (/sys/kernel/notes) give.
var Debuginfo = sync.OnceValues(func() (*debuginfo.File, error) {
	release, err := osRelease()
	if err != nil {
		return nil, err
	}
	f, err := debuginfo.OpenKernel(release, buildID("/sys/kernel/notes"))
	if err == nil {
		offset := sync.OnceValues(func() (int64, error) { return loadOffset(f) })
		f.Loaded = func(link uint64) (uint64, error) {
			o, err := offset()
			return uint64(int64(link) + o), err
		}
	}
	return f, err
})

// ModuleDebuginfo is the DWARF of the loaded module name (a - in it
// stands for _, as in the module's file name), from the kernel's debug
// package, read on first use (debuginfo.OpenModule): the module's debug
// file whose build ID is the one its notes (/sys/module/NAME/notes) give.
func ModuleDebuginfo(name string) (*debuginfo.File, error) {
	name = strings.ReplaceAll(name, "-", "_")
	open, _ := moduleDebuginfo.LoadOrStore(name, sync.OnceValues(func() (*debuginfo.File, error) { return openModuleDebuginfo(name) }))
	return open.(func() (*debuginfo.File, error))()
}

var moduleDebuginfo sync.Map // module name: func() (*debuginfo.File, error)

func openModuleDebuginfo(name string) (*debuginfo.File, error) {
	dir := filepath.Join(moduleDir, name)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("module %s is not loaded (there is no %s)", name, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "initstate")); err != nil {
		return nil, fmt.Errorf("module %s is built into the kernel (%s has no initstate): its code and DWARF are the kernel's; name it kernel, not module(%q)", name, dir, name)
	}
	release, err := osRelease()
	if err != nil {
		return nil, err
	}
	f, err := debuginfo.OpenModule(release, name, buildID(filepath.Join(dir, "notes", ".note.gnu.build-id")))
	if err == nil {
		f.Loaded = func(link uint64) (uint64, error) { return sectionLoaded(f, name, link) }
	}
	return f, err
}

// sectionLoaded is where the running module name holds what its debug
// file f places at link: the address of the section that holds it
// (/sys/module/NAME/sections/SECTION, which only root reads as it is)
// plus its offset there.
func sectionLoaded(f *debuginfo.File, name string, link uint64) (uint64, error) {
	sec, off, ok := f.SectionAt(link)
	if !ok {
		return 0, fmt.Errorf("%s places nothing of module %s at %#x", f.DebugPath, name, link)
	}
	path := filepath.Join(moduleDir, name, "sections", sec)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cannot tell where module %s's %s section is: %w", name, sec, err)
	}
	base, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(data)), "0x"), 16, 64)
	if err != nil || base == 0 {
		return 0, fmt.Errorf("%s gives no address (%q): only root sees where a module is", path, strings.TrimSpace(string(data)))
	}
	return base + off, nil
}

// osRelease is the running kernel's release, as uname gives it.
func osRelease() (string, error) {
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(release)), err
}

// buildID is the GNU build ID in the notes file at path (nil: none read,
// which then is not checked).
func buildID(path string) []byte {
	notes, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return debuginfo.NoteBuildID(notes, binary.NativeEndian)
}

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
