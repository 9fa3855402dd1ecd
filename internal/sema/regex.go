package sema

import (
	"errors"
	"fmt"
	"regexp"
	resyntax "regexp/syntax"

	"github.com/bpftap/bpftap/internal/regexdfa"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Regular expressions, stap's gen_dfa_table: the pattern of every =~ and !~
// the probes run is compiled in pass 2, after type inference. The walk goes
// through each probe's body and into the functions it calls (each function
// once, at its first call, after the call's arguments), checking a match
// after its operands; a probe's walk stops at its first bad pattern.
//
// A pattern is checked against stap's own grammar (regexdfa.CheckStapSyntax),
// which gives stap's message and position. A pattern stap accepts but Go's
// regexp refuses (`a**`, counts above 1000), which the interpreter could not
// run, is reported too, with Go's reason.

func (e *elab) checkRegexps() {
	called := map[*syntax.Func]bool{}
	for _, p := range e.prog.Probes {
		e.probeRegexps(p.Body, called)
	}
}

// probeRegexps checks the patterns of one probe body; called holds the
// functions already walked.
func (e *elab) probeRegexps(body *syntax.Block, called map[*syntax.Func]bool) {
	failed := false
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		if failed {
			return false
		}
		switch n := n.(type) {
		case *syntax.Binary:
			if n.Op != "=~" && n.Op != "!~" {
				return true
			}
			syntax.Walk(n.X, visit)
			syntax.Walk(n.Y, visit)
			if lit, ok := n.Y.(*syntax.StringLit); ok && !failed {
				failed = e.checkPattern(lit)
			}
			return false
		case *syntax.Call:
			for _, a := range n.Args {
				syntax.Walk(a, visit)
			}
			if f := n.Func; f != nil && f.Decl != nil && f.Decl.Body != nil && !called[f] {
				called[f] = true
				syntax.Walk(f.Decl.Body, visit)
			}
			return false
		}
		return true
	}
	syntax.Walk(body, visit)
}

// checkPattern reports the pattern lit if it cannot be compiled, and tells
// whether it did.
func (e *elab) checkPattern(lit *syntax.StringLit) bool {
	raw := lit.Raw
	if raw == "" {
		raw = lit.Value
	}
	if err := regexdfa.CheckStapSyntax(raw); err != nil {
		origin := "regex"
		if err.Pos < 0 {
			origin = "regexnopos"
		}
		e.rep.errorAt(origin, lit, err.Error())
		return true
	}
	if _, err := regexp.Compile("(?s)" + lit.Value); err != nil {
		reason := err.Error()
		var re *resyntax.Error
		if errors.As(err, &re) {
			reason = fmt.Sprintf("%s: `%s`", re.Code, re.Expr)
		}
		e.rep.errorAt("regexgo", lit, "regex compilation error: bpftap cannot run this pattern: "+reason)
		return true
	}
	return false
}
