package sema

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Fprint writes the elaborated program as `stap -p2` prints it without -v: the globals
// with their types, the functions sorted by name with their signatures and
// locals, then every derived probe with the chain of points it came from and
// its locals.
func (p *Program) Fprint(w io.Writer) error {
	var b strings.Builder
	if len(p.Globals) > 0 {
		b.WriteString("# globals\n")
		for _, g := range p.Globals {
			b.WriteString(globalString(g) + "\n")
		}
	}
	funcs := p.listedFuncs()
	if len(funcs) > 0 {
		b.WriteString("# functions\n")
		for _, f := range funcs {
			b.WriteString(funcString(f) + "\n")
			if len(f.Locals) > len(f.Params) {
				writeLocals(&b, f.Locals[len(f.Params):])
			}
		}
	}
	if len(p.Probes) > 0 {
		b.WriteString("# probes\n")
		for _, pr := range p.Probes {
			b.WriteString(pr.header() + "\n")
			writeLocals(&b, append(pr.paramLocals(), pr.Locals...))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String is the -p2 rendering.
func (p *Program) String() string {
	var b strings.Builder
	p.Fprint(&b)
	return b.String()
}

// FunctionCount is how many functions the program calls, script and builtin
// alike, as stap counts them in its pass-2 summary.
func (p *Program) FunctionCount() int { return len(p.listedFuncs()) }

// listedFuncs are the functions the program calls, script and builtin, but
// not the builtins of operators (@kderef: atops.go), which stap does not
// count or list as functions.
func (p *Program) listedFuncs() []*syntax.Func {
	funcs := append([]*syntax.Func(nil), p.Funcs...)
	for _, f := range p.builtinsUsed {
		if !strings.HasPrefix(f.Name, "@") {
			funcs = append(funcs, f)
		}
	}
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].Name < funcs[j].Name })
	return funcs
}

func globalString(g *syntax.Var) string {
	s := g.Name
	if g.Wrap {
		s += "%"
	}
	if g.Decl != nil && g.Decl.Size > 0 {
		s += fmt.Sprintf("[%d]", g.Decl.Size)
	}
	s += ":" + g.Type.String()
	if g.IsArray {
		s += " [" + typeList(g.Keys) + "]"
	}
	return s
}

func typeList(ts []syntax.Type) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

func funcString(f *syntax.Func) string {
	var params []string
	for _, p := range f.Params {
		params = append(params, p.Name+":"+p.Type.String())
	}
	return fmt.Sprintf("%s:%s (%s)", f.Name, f.Result, strings.Join(params, ", "))
}

func writeLocals(b *strings.Builder, locals []*syntax.Var) {
	if len(locals) == 0 {
		return
	}
	b.WriteString("  # locals\n")
	for _, v := range locals {
		b.WriteString("  " + varSig(v) + "\n")
	}
}

// varSig is a local as stap's listings show it: "name:type".
func varSig(v *syntax.Var) string { return v.Name + ":" + v.Type.String() }

// header is "POINT /* <- ALIAS <- ... <- USER POINTS */", with a
// function probe's "/* pc=.dynamic+0x1149 */" after POINT.
func (p *Probe) header() string {
	var chain []string
	for _, a := range p.origin {
		chain = append(chain, aliasString(a))
	}
	if p.userText != "" {
		chain = append(chain, p.userText)
	} else {
		chain = append(chain, p.Name)
	}
	pc := ""
	if p.Attach != nil && p.Attach.PC != "" { // a function probe: where, as stap shows it
		pc = " /* pc=" + p.Attach.PC + " */"
	}
	return pointString(p.Point, true) + pc + " /* <- " + strings.Join(chain, " <- ") + " */"
}

// paramLocals are the arguments the probe reads, named and typed as stap's
// -p2 lists them.
func (p *Probe) paramLocals() []*syntax.Var {
	var vars []*syntax.Var
	for _, i := range p.Params {
		vars = append(vars, &syntax.Var{Name: p.Attach.Args[i].Local, Type: syntax.TypeLong})
	}
	return vars
}
