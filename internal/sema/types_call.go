package sema

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Typing calls: arguments against parameters, results against what the
// caller expects, and the print family against its formats.

func (t *typer) call(x *syntax.Call, want syntax.Type) {
	f := x.Func
	if f == nil {
		return
	}
	t.resolve2(x, funcRef(f), want, true)
	if x.Type() == tStats {
		t.invalid(x, tStats)
	}
	if len(x.Args) != len(f.Params) {
		t.unresolvedAt(x)
		return
	}
	for i, a := range x.Args {
		p := f.Params[i]
		t.expr(a, p.Type)
		at := a.Type()
		if (at == tString || at == tLong) && p.Type == tUnknown {
			p.Type = at
			t.resolved(a, p, i)
		}
		if at == tStats {
			t.invalid(a, at)
		}
		if p.Type == tStats {
			t.invalid(varToken(p), p.Type)
		}
		if at != tUnknown && p.Type != tUnknown && p.Type != at {
			t.mismatchDecl(a, at, p, i, p.Type)
		}
		if at == tUnknown {
			t.unresolvedAt(a)
		}
	}
}

func (t *typer) print(x *syntax.PrintCall) {
	unresolved := 0
	switch {
	case len(x.Args) == 1 && isHist(x.Args[0]):
		t.hist(x.Args[0].(*syntax.Hist))
	case x.Format != nil:
		t.printf(x)
	case x.Name == "print_char": // a C char: stap's C compiler refuses a string
		for _, a := range x.Args {
			t.checkArg(tLong, a)
		}
	default:
		for _, a := range x.Args {
			t.expr(a, tUnknown)
			if a.Type() == tUnknown {
				t.unresolvedAt(a)
				unresolved++
			}
		}
	}
	if unresolved > 0 {
		x.SetType(tUnknown)
		t.unresolvedAt(x)
		return
	}
	if x.Type() == tUnknown {
		ty := tLong
		if x.Name[0] == 's' {
			ty = tString
		}
		t.settle(x, ty)
	}
}

func isHist(x syntax.Expr) bool {
	_, ok := x.(*syntax.Hist)
	return ok
}

func (t *typer) printf(x *syntax.PrintCall) {
	f, err := x.CompiledFormat()
	if err != nil {
		t.throw("format", x, err.Error())
	}
	kinds := f.Args()
	if len(kinds) != len(x.Args) {
		t.e.rep.errorAt("nargs", x, "Wrong number of args to formatted print operator")
		panic(typeAbort{})
	}
	for i, a := range x.Args {
		t.checkArg(kindType(kinds[i]), a)
	}
}

func kindType(k format.Kind) syntax.Type {
	if k == format.KindString {
		return tString
	}
	return tLong
}
