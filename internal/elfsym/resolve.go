package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// ErrNotFound: Resolve found no file for the name.
var ErrNotFound = errors.New("not found")

// NotRegularError: the name is a FIFO, a device, a directory or a
// socket, which cannot hold an ELF object (and reading a FIFO would wait
// for a writer).
type NotRegularError struct {
	Path string
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.Path, fileKind(e.Mode))
}

// fileKind names a file type that is not a regular file's.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// Resolve finds the file a process probe names: a name with a `/` is a
// path (made absolute); a shared library's name (it holds ".so") is looked
// up as the dynamic loader looks up a soname: the directories of
// LD_LIBRARY_PATH, then /etc/ld.so.cache, then the standard directories;
// any other name is a command, searched in PATH.
func Resolve(name string) (string, error) {
	switch {
	case strings.Contains(name, "/"):
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		info, err := os.Stat(abs)
		if err != nil {
			return "", ErrNotFound
		}
		if !info.Mode().IsRegular() {
			return "", &NotRegularError{abs, info.Mode()}
		}
		return abs, nil
	case strings.Contains(name, ".so"):
		return findLibrary(name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", ErrNotFound
	}
	return filepath.Abs(p)
}

// ResolveAll is Resolve for a name that may be a glob pattern (it holds
// *, ? or [): every regular file the pattern matches that is an ELF
// executable or shared object of the host's machine (not a relocatable
// object, a core file or another machine's), each once however many
// links name it, in lexical order, as stap globs a process probe's PATH
// (stapprobes(3stap); PATH and the loader's directories are not searched
// then). Execute permission is not asked for (stap 4.8 globs a copy of
// bash without it too, and Debian's libm.so.6 has none). A name without a
// pattern, or a path that exists as written (/usr/bin/[), is Resolve's
// one file.
func ResolveAll(name string) ([]string, error) {
	if _, err := os.Stat(name); err == nil || !strings.ContainsAny(name, "*?[") {
		file, err := Resolve(name)
		if err != nil {
			return nil, err
		}
		return []string{file}, nil
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	matches, err := filepath.Glob(abs)
	if err != nil {
		return nil, err
	}
	var files []string
	var seen []os.FileInfo
	for _, m := range matches {
		info, err := os.Stat(m)
		if err != nil || !info.Mode().IsRegular() || !hostObject(m) ||
			slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, info) }) {
			continue
		}
		seen = append(seen, info)
		files = append(files, m)
	}
	if len(files) == 0 {
		return nil, ErrNotFound
	}
	return files, nil
}

// libraryDirs are the directories the loader searches last, after its cache.
var libraryDirs = []string{"/lib/" + multiarch(), "/usr/lib/" + multiarch(), "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// multiarch is Debian's multiarch directory of the host: x86_64-linux-gnu.
func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	}
	return runtime.GOARCH + "-linux-gnu"
}

// findLibrary looks a soname up as ld.so does, keeping only files of the
// host's machine (the cache lists 32-bit libraries too).
func findLibrary(soname string) (string, error) {
	var candidates []string
	for _, dir := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if dir != "" {
			candidates = append(candidates, filepath.Join(dir, soname))
		}
	}
	candidates = append(candidates, cachedLibraries(soname)...)
	for _, dir := range libraryDirs {
		candidates = append(candidates, filepath.Join(dir, soname))
	}
	for _, c := range candidates {
		if hostObject(c) {
			return c, nil
		}
	}
	return "", ErrNotFound
}

// hostObject tells whether path is an executable or a shared object for
// the machine bpftap runs on (not a relocatable object or a core file).
func hostObject(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386}[runtime.GOARCH]
	return f.Machine == want && (f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN)
}

// ldCache is the dynamic loader's cache of sonames.
const ldCache = "/etc/ld.so.cache"

// cachedLibraries returns the paths ld.so.cache gives for soname, in its
// order. The cache (glibc's "new" format, glibc-ld.so.cache1.1) is a
// 48-byte header holding the number of entries, then entries of 24 bytes
// whose second and third words are the offsets, from the start of the file,
// of the soname and of the path (ldconfig -p lists the same).
func cachedLibraries(soname string) []string {
	data, err := os.ReadFile(ldCache)
	if err != nil {
		return nil
	}
	const magic, header, entry = "glibc-ld.so.cache1.1", 48, 24
	start := bytes.Index(data, []byte(magic)) // after an old-format cache, if one precedes it
	if start < 0 || len(data) < start+header {
		return nil
	}
	cache := data[start:]
	n := int(binary.LittleEndian.Uint32(cache[20:]))
	var paths []string
	for i := range n {
		e := header + i*entry
		if e+entry > len(cache) {
			break
		}
		key := cString(cache, binary.LittleEndian.Uint32(cache[e+4:]))
		if key == soname {
			paths = append(paths, cString(cache, binary.LittleEndian.Uint32(cache[e+8:])))
		}
	}
	return paths
}

// cString is the NUL-terminated string at off of b ("" when out of range).
func cString(b []byte, off uint32) string {
	if int(off) >= len(b) {
		return ""
	}
	s := b[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}
