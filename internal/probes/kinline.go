package probes

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/syntax"
)

// kernel.function("F").inline and kernel.function("F").label("L"), and
// module("M").function("F") likewise, from the DWARF of the kernel or of
// its module M (the kernel's debug package), as the user points of the same
// names (ustatement.go): a kprobe at the entry of each copy of the
// functions F matches that the compiler inlined into another (found in
// every unit: a header's static inline function is inlined anywhere), or
// at each label L (a wildcard) of the traceable functions F matches. The
// $vars are the copy's, or those in scope at the label. Each kprobe is on
// the symbol whose code holds the address, at its offset there
// (kernelSite); a copy in a function no kprobe reaches by name (a static
// function whose name others share) is left out, as is a point without
// any with the reason.
func kernelInlineFamily(k KernelInfo) *Family {
	return &Family{Name: "kernel.function.dwarf", Kernel: true,
		Paths: []string{"kernel.function(string).inline", "kernel.function(string).label(string)",
			"module(string).function(string).inline", "module(string).function(string).label(string)"},
		Expand: func(p *Point) ([]*Point, error) { return kernelInlineOrLabel(k, p) }}
}

func kernelInlineOrLabel(k KernelInfo, p *Point) ([]*Point, error) {
	pattern := p.Arg("function").(*syntax.StringLit).Value
	if strings.Contains(pattern, "@") {
		return nil, errorf("cannot probe %s: bpftap takes .inline and .label on functions named without a file (kernel.function(\"NAME\"))", p.Name())
	}
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	module, err := dwarfModule(p)
	if err != nil {
		return nil, err
	}
	file, err := k.Debuginfo(module)
	if err != nil {
		return nil, errorf("cannot probe %s: %v", p.Name(), err)
	}
	dbg := kernelDwarf{file, module}
	var sites []kernelSite
	var what string
	if label, ok := p.Arg("label").(*syntax.StringLit); ok {
		sites, err = kernelLabels(k, p, dbg.File, pattern, label.Value)
		what = fmt.Sprintf("no label %s in a traceable function matching %s", label.Value, pattern)
	} else {
		sites, err = kernelInlined(dbg.File, pattern)
		what = "no inlined copy of a function matching " + pattern
	}
	if err != nil {
		return nil, errorf("cannot probe %s: %v", p.Name(), err)
	}
	var out []*Point
	var unreached string
	for _, s := range sites {
		q, why, err := s.probe(k, s.point(p), dbg, regs, len(out) == 0)
		switch {
		case err != nil:
			return nil, err
		case why != "":
			unreached = why
			continue
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		if unreached != "" {
			what += " that a kprobe reaches (" + unreached + ")"
		}
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (%s's DWARF (%s) has %s)", dbg.Path, dbg.DebugPath, what)
		}}
	}
	return out, nil
}

// point names the probe at the site: the inlined copy's function, as
// stap's pp() does (kernel.function("do_sys_open").inline), or the
// function and its label.
func (s kernelSite) point(p *Point) *Point {
	if s.inline != nil {
		return concretePoint(p, "function", s.inline.Name)
	}
	return concretePoint(concretePoint(p, "function", s.fn.Name), "label", s.label)
}

// kernelInlined are the sites of the inlined copies of the functions
// pattern matches, at each copy's entry.
func kernelInlined(dbg *debuginfo.File, pattern string) ([]kernelSite, error) {
	copies, err := dbg.Inlined(func(name string) bool {
		matched, _ := filepath.Match(pattern, name)
		return matched
	})
	if err != nil {
		return nil, err
	}
	var sites []kernelSite
	for _, inl := range copies {
		entry, host, err := dbg.EntryContaining(inl.Entry)
		if err != nil {
			continue // a copy in no function the DWARF describes
		}
		sites = append(sites, kernelSite{addr: inl.Entry, fn: elfsym.Func{Name: host, Addr: entry}, inline: inl})
	}
	return sites, nil
}

// kernelLabels are the sites of the labels that pattern matches in the
// traceable functions fnPattern matches, in name order per function.
func kernelLabels(k KernelInfo, p *Point, dbg *debuginfo.File, fnPattern, pattern string) ([]kernelSite, error) {
	fns, err := matchFunctions(k, p, fnPattern, false)
	if err != nil {
		return nil, err
	}
	var sites []kernelSite
	for _, fn := range fns {
		for _, entry := range dbg.FunctionSymbols(fn.Name) {
			d, err := dbg.FunctionAt(entry)
			if err != nil {
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(d.Labels)) {
				if matched, _ := filepath.Match(pattern, name); matched {
					sites = append(sites, kernelSite{addr: d.Labels[name], fn: elfsym.Func{Name: fn.Name, Addr: entry}, label: name})
				}
			}
		}
	}
	return sites, nil
}
