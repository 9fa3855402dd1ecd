package sema

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// $value in procfs probes. The body of a procfs probe (probes/procfs.go)
// reads or sets the file's contents as $value: each $value of the body
// becomes the probe's first local, named "$value" (no script name can
// clash with it), a string, recorded in Probe.Value. The runner stores
// the bytes written before a write probe runs and takes what a read probe
// left after it ran; the local is never elided.

// ValueName is the name of the $value local of procfs probes.
const ValueName = "$value"

// isProcfs tells whether p is a procfs probe.
func isProcfs(p *Probe) bool { return !p.Kernel && p.Family == probes.ProcfsFamily }

// declareValue declares the $value local of a procfs probe in s and
// makes each $value of body a use of it.
func (s *scope) declareValue(p *Probe, body *syntax.Block) {
	s.e.checkValueUses(probes.Procfs(p.Point.Components).Write, body)
	v := &syntax.Var{Name: ValueName, Kind: syntax.VarLocal, Pos: body.Pos, Type: syntax.TypeString, Index: len(s.list)}
	s.locals[v.Name], s.list, p.Value = v, append(s.list, v), v
	rewriteExprs(body, func(x syntax.Expr) (syntax.Expr, bool) {
		if t, ok := x.(*syntax.TargetVar); ok && isValue(t) {
			return &syntax.Ident{Typed: syntax.Typed{Pos: t.Pos, T: syntax.TypeString}, Name: ValueName, Var: v}, true
		}
		return x, false
	})
}

// isValue tells whether t is a procfs probe's $value.
func isValue(t *syntax.TargetVar) bool {
	return t.Name == ValueName && len(t.Components) == 0 && !t.AddrOf && t.Pretty == 0
}

// checkValueUses refuses, as stap does in pass 2, an assignment to $value
// in a write probe (it holds the bytes written) and a read of it in a read
// probe (the probe sets it; it may only be the target of '=' or '.=').
func (e *elab) checkValueUses(write bool, body *syntax.Block) {
	set := map[*syntax.TargetVar]bool{}
	syntax.Walk(body, func(n syntax.Node) bool {
		if t, ok := assignTarget(n).(*syntax.TargetVar); ok && isValue(t) {
			if write {
				e.rep.errorAt("procfs", t, "procfs $value variable is read-only in a procfs write probe")
			}
			a, ok := n.(*syntax.Assign)
			set[t] = ok && (a.Op == "=" || a.Op == ".=")
		}
		if t, ok := n.(*syntax.TargetVar); ok && isValue(t) && !write && !set[t] {
			e.rep.errorAt("procfs", t, "procfs $value variable cannot be read in a procfs read probe")
		}
		return true
	})
}

// checkProcfsFiles refuses a file with two read probes (one reader gets
// one $value), as stap does. A file may have a read probe and write
// probes both: package procfs serves it as a file of its own (fuse.go).
func (e *elab) checkProcfsFiles() {
	read := map[string]*Probe{}
	for _, p := range e.prog.Probes {
		if !isProcfs(p) {
			continue
		}
		f := probes.Procfs(p.Point.Components)
		if f.Write {
			continue
		}
		if q := read[f.Name]; q != nil {
			e.rep.errorAt("procfs", p.Point.Components[0], fmt.Sprintf("only one read procfs probe can exist for procfs path %q (the other at %s)", f.Name, q.Point.Pos))
			continue
		}
		read[f.Name] = p
	}
}
