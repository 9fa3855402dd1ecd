package elfsym

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// WithLibraries is path and every shared library it needs, transitively,
// each found as the dynamic loader finds it: in the object's RPATH or
// RUNPATH ($ORIGIN is its directory), then as Resolve finds a
// soname.
func WithLibraries(path string) []string {
	files := []string{path}
	seen := map[string]bool{path: true}
	for i := 0; i < len(files); i++ {
		for _, lib := range needed(files[i]) {
			if !seen[lib] {
				seen[lib] = true
				files = append(files, lib)
			}
		}
	}
	return files
}

// LibraryCache keeps WithLibraries' answers by path, for a run that asks
// again for the same executable (a .library point on each function, or
// each of several points): the files do not change while it runs. Its
// zero value is empty and ready; the slices it returns are shared, to be
// read only.
type LibraryCache struct {
	mu sync.Mutex
	by map[string][]string
}

// WithLibraries is elfsym.WithLibraries(path), found once.
func (c *LibraryCache) WithLibraries(path string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if files, ok := c.by[path]; ok {
		return files
	}
	if c.by == nil {
		c.by = map[string][]string{}
	}
	c.by[path] = WithLibraries(path)
	return c.by[path]
}

// needed finds the files of the DT_NEEDED entries of the object at path.
func needed(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.DynString(elf.DT_NEEDED)
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		list, _ := f.DynString(tag)
		for _, l := range list {
			l = strings.ReplaceAll(l, "$ORIGIN", filepath.Dir(path))
			dirs = append(dirs, filepath.SplitList(l)...)
		}
	}
	var files []string
	for _, name := range names {
		if p, ok := findNeeded(name, dirs); ok {
			files = append(files, p)
		}
	}
	return files
}

// findNeeded finds a needed library in dirs, else as the loader would.
func findNeeded(name string, dirs []string) (string, bool) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	p, err := Resolve(name)
	if err != nil {
		return "", false
	}
	// the path the loader maps it under (/lib is /usr/lib on Debian)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p, true
}
