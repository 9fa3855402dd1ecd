package probes

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/usdt"
)

// process("PATH").mark("NAME"), process("PATH").provider("P").mark("NAME")
// and the same without ("PATH"): the static markers of sys/sdt.h (USDT),
// read from the file's .note.stapsdt (package usdt). Each marker is a
// uprobe at its file offset, with its semaphore, if it has one, raised by
// the kernel while the probe is attached (ref_ctr_offset); its arguments
// are $arg1 ... $argN, loaded from where the marker's operands say
// (registers, memory, constants), $$name and $$provider its names, $$parms
// and $$vars all of them ("$arg1=%#x $arg2=%#x", stap's). NAME and P may
// hold wildcards; a "-" in NAME stands for "__", as in stap (dtrace spells
// function__entry function-entry). PATH is resolved as for
// process.function.
func processMarkFamily(k KernelInfo, cfg Config, files *objectCache) *Family {
	var paths []string
	for _, base := range []string{"process(string)", "process"} {
		paths = append(paths, base+".mark(string)", base+".provider(string).mark(string)")
	}
	return &Family{Name: "process.mark", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return expandMark(k, cfg, files, p) }}
}

func expandMark(k KernelInfo, cfg Config, files *objectCache, p *Point) ([]*Point, error) {
	return eachFile(p, cfg, files, func(file string, prologue *syntax.Block) ([]*Point, error) {
		return marksOfFile(k, p, file, prologue)
	})
}

// marksOfFile expands point p on the markers of one file, its probes
// starting with prologue.
func marksOfFile(k KernelInfo, p *Point, file string, prologue *syntax.Block) ([]*Point, error) {
	f, err := usdt.Open(file)
	if err != nil {
		return nil, errorf("cannot read the markers of %s: %v", file, err)
	}
	spec, _ := p.Arg("mark").(*syntax.StringLit)
	name := strings.ReplaceAll(spec.Value, "-", "__")
	provider := "*"
	if lit, ok := p.Arg("provider").(*syntax.StringLit); ok {
		provider = lit.Value
	}
	var out []*Point
	for _, m := range f.Probes {
		if !globMatch(provider, m.Provider) || !globMatch(name, m.Name) {
			continue
		}
		a, refused := markPoint(f, file, m)
		q, err := fileProbe(k, concretePoint(p, "provider", m.Provider), prologue, file, "mark", m.Name, a, len(out) == 0)
		if err != nil {
			return nil, err
		}
		q.Context.refused = refused
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, &Error{Msg: "no match", Absence: programAbsence(file, "marker", name),
			detail: func() string { return markNames(f, file, provider, name) }}
	}
	out[0].Plan = fmt.Sprintf("%s: %d marker(s) of %s, each a uprobe", p.Name(), len(out), file)
	return out, nil
}

// globMatch matches a marker's name or provider against a pattern.
func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// markPoint is the attach point of marker m of f: a uprobe at its offset,
// its arguments where its operands lie. An argument the program cannot
// read (its operand does not parse, or names a symbol the file lacks) is
// left out and refused says why, by its $name: the marker serves the
// others.
func markPoint(f *usdt.File, file string, m *usdt.Probe) (a *attach.Point, refused map[string]string) {
	a = &attach.Point{Kind: attach.Uprobe, Event: m.Name, Provider: m.Provider, Path: file, Offset: m.Offset,
		RefCtrOffset: m.SemaphoreOffset, PC: fmt.Sprintf("%#x", m.PC),
		// a marker's probe reads registers as a function's does, and
		// probefunc() names the marker
		Regs: true, User: true, Func: &attach.Func{Name: m.Name}}
	refused = map[string]string{}
	for i, arg := range m.Args {
		name := fmt.Sprintf("arg%d", i+1)
		loc, err := attach.Loc{}, arg.Err
		if err == nil {
			loc, err = f.Loc(m, arg)
		}
		if err != nil {
			why := err.Error()
			if ae, ok := err.(*usdt.ArgError); ok {
				why += ": " + ae.Reason
			}
			refused["$"+name] = fmt.Sprintf("marker %s:%s cannot give $%s: %s", m.Provider, m.Name, name, why)
			continue
		}
		a.Args = append(a.Args, attach.Arg{Name: name, Local: "__sdt_" + name, Loc: loc})
	}
	return a, refused
}

// markNames says what a mark that matched nothing could have named: the
// markers of the providers that match, else the providers.
func markNames(f *usdt.File, file, provider, name string) string {
	if len(f.Probes) == 0 {
		return fmt.Sprintf(" (%s has no sys/sdt.h markers)", file)
	}
	var names, providers []string
	for _, m := range f.Probes {
		if globMatch(provider, m.Provider) {
			names = append(names, m.Name)
		}
		if !slices.Contains(providers, m.Provider) {
			providers = append(providers, m.Provider)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf(" (providers of %s: %s)", file, strings.Join(providers, ", "))
	}
	return similarNames("markers", name, names)
}
