package sema

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Prints tells whether a probe of p that probes accepts prints, in its
// body or in a function it calls: a call of the print family other than
// its sprint forms, or of a builtin that output says writes. (bpfgen
// sizes the ring by what kernel probes print; the driver tells a run
// that prints nothing before its end.)
func (p *Program) Prints(probes func(*Probe) bool, output func(*tapset.Builtin) bool) bool {
	seen := map[*syntax.Func]bool{}
	var prints func(syntax.Node) bool
	prints = func(n syntax.Node) bool {
		return syntax.Any(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.PrintCall:
				return !strings.HasPrefix(n.Name, "s")
			case *syntax.Call:
				if b := Builtin(n); b != nil && output(b) {
					return true
				}
				if f := n.Func; f != nil && f.Decl != nil && !seen[f] {
					seen[f] = true
					return prints(f.Decl.Body)
				}
			}
			return false
		})
	}
	for _, pr := range p.Probes {
		if probes(pr) && prints(pr.Body) {
			return true
		}
	}
	return false
}
