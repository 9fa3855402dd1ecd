package ksym

import (
	"bufio"
	"cmp"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Module is the address range [Start, End) of the kernel proper (Name
// "kernel") or of a loaded module: modname() names an address by it.
type Module struct {
	Start, End uint64
	Name       string
}

// Modules are the ranges of the kernel and of its modules, in address
// order. The kernel's runs from its first text symbol to the end of its
// last; a module's from its first symbol to the end of its last, or, where
// /proc/modules gives them, from its base over its size. kallsyms lists
// BPF programs and trampolines under pseudo-modules ([bpf],
// [__builtin__ftrace]): those are no modules, and their addresses belong
// to none, as in stap.
func (t *Table) Modules() []Module { return t.modules }

// Modname is modname(addr): the name of the module holding addr, or false.
func (t *Table) Modname(addr uint64) (string, bool) {
	i, found := slices.BinarySearchFunc(t.modules, addr, func(m Module, a uint64) int {
		switch {
		case m.End <= a:
			return -1
		case m.Start > a:
			return 1
		}
		return 0
	})
	if !found {
		return "", false
	}
	return t.modules[i].Name, true
}

// spans computes the modules of a sorted symbol list: each module's span,
// its last symbol counted as one byte when its size is unknown.
func spans(syms []Symbol) []Module {
	byName := map[string]int{}
	var mods []Module
	for _, s := range syms {
		if s.Module == "bpf" || strings.HasPrefix(s.Module, "__builtin__") {
			continue
		}
		end := s.Addr + max(s.Size, 1)
		if i, ok := byName[s.Module]; ok {
			mods[i].End = max(mods[i].End, end)
			continue
		}
		byName[s.Module] = len(mods)
		mods = append(mods, Module{Start: s.Addr, End: end, Name: s.Module})
	}
	return mods
}

// withLoaded replaces the spans of the modules /proc/modules lists
// ("NAME SIZE REFS DEPS STATE ADDR") by their base and size, and sorts
// the result.
func withLoaded(mods []Module, r io.Reader) []Module {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			continue
		}
		size, err1 := strconv.ParseUint(f[1], 10, 64)
		base, err2 := strconv.ParseUint(strings.TrimPrefix(f[5], "0x"), 16, 64)
		if err1 != nil || err2 != nil || base == 0 {
			continue
		}
		m := Module{Start: base, End: base + size, Name: f[0]}
		if i := slices.IndexFunc(mods, func(x Module) bool { return x.Name == m.Name }); i >= 0 {
			mods[i] = m
		} else {
			mods = append(mods, m)
		}
	}
	slices.SortFunc(mods, func(a, b Module) int { return cmp.Compare(a.Start, b.Start) })
	return mods
}

// loadedModules reads /proc/modules into t's module ranges (a kernel
// without modules has no such file).
func (t *Table) loadedModules() {
	f, err := os.Open("/proc/modules")
	if err != nil {
		return
	}
	defer f.Close()
	t.modules = withLoaded(t.modules, f)
}
