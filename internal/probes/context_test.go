package probes

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/probes/probestest"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestContext resolves each context expression of testdata/context.txt
// ("SYSTEM:EVENT EXPR => result") in a probe on that tracepoint of the fake
// kernel and compares the Access (or error) with the expectation.
func TestContext(t *testing.T) {
	eachTracepointCase(t, "testdata/context.txt", func(ctx *Context, expr string) string {
		return describeAccess(t, ctx, expr)
	})
}

// eachTracepointCase runs the lines of a testdata file, "SYSTEM:EVENT EXPR
// => WANT" ('#' starts a comment), comparing what got makes of EXPR in a
// probe on that tracepoint of the fake kernel with WANT.
func eachTracepointCase(t *testing.T, path string, got func(ctx *Context, expr string) string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k := probestest.New()
	tps, _ := k.Tracepoints()
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, want, _ := strings.Cut(line, " => ")
		name, expr, _ := strings.Cut(in, " ")
		matched, _ := kernelMatch(tps, name)
		a, err := attachTracepoint(k, matched, false)
		if err != nil {
			t.Fatal(err)
		}
		if g := got(&Context{kernel: k, Attach: a}, expr); g != want {
			t.Errorf("%s:\n got %s\nwant %s", in, g, want)
		}
	}
}

func kernelMatch(tps []*kernel.Tracepoint, name string) (*kernel.Tracepoint, bool) {
	for _, tp := range tps {
		if tp.String() == name {
			return tp, true
		}
	}
	return nil, false
}

func describeAccess(t *testing.T, ctx *Context, expr string) string {
	src := syntax.NewSource("<test>", "probe begin { x = "+expr+" }")
	file, err := syntax.Parse(src, nil)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	x := file.Decls[0].(*syntax.ProbeDecl).Body.Stmts[0].(*syntax.ExprStmt).X.(*syntax.Assign).RHS
	var a *Access
	var cerr *ContextError
	switch x := x.(type) {
	case *syntax.TargetVar:
		a, cerr = ctx.Var(x)
	case *syntax.Cast:
		a, cerr = ctx.Cast(x)
	}
	if cerr != nil {
		return fmt.Sprintf("error@%d: %s", cerr.Step, cerr.Msg)
	}
	s := accessString(a)
	if ctx.Attach.Kind == attach.Tracepoint && a.Param >= 0 {
		s += " loc=" + locString(ctx.Attach.Args[a.Param].Loc)
	}
	return s
}

// locString shows a location as OFFSET/SIZE and its flags.
func locString(l attach.Loc) string {
	s := fmt.Sprintf("%d/%d", l.Offset, l.Size)
	for _, f := range []struct {
		on   bool
		name string
	}{{l.Signed, "signed"}, {l.Address, "address"}, {l.DataLoc, "data_loc"}, {l.Deref, fmt.Sprintf("deref@%d", l.Base)}} {
		if f.on {
			s += "," + f.name
		}
	}
	return s
}

func accessString(a *Access) string {
	s := fmt.Sprintf("%s param=%d", a.Type, a.Param)
	if a.Path != nil {
		s += fmt.Sprintf(" offsets=%v size=%d signed=%v kind=%d", a.Path.Offsets, a.Path.Size, a.Path.Signed, a.Path.Kind)
	}
	if a.Address {
		s += " address"
	}
	if a.Name != "" {
		s += " name=" + a.Name
	}
	if a.Format != "" {
		s += fmt.Sprintf(" format=%q args=%d", a.Format, len(a.Args))
	}
	return s
}

// TestPretty expands the pretty-printed expressions of
// testdata/pretty.txt ("SYSTEM:EVENT EXPR => FORMAT | ARGS") on the fake
// kernel's tracepoints: the sprintf format and its arguments, or "refused"
// where the point cannot expand it. A @cast expands on the kernel alone
// (PrettyCast).
func TestPretty(t *testing.T) {
	eachTracepointCase(t, "testdata/pretty.txt", func(ctx *Context, expr string) string {
		file, err := syntax.Parse(syntax.NewSource("<test>", "probe begin { x = "+expr+" }"), nil)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var e syntax.Expr
		ok := false
		switch x := file.Decls[0].(*syntax.ProbeDecl).Body.Stmts[0].(*syntax.ExprStmt).X.(*syntax.Assign).RHS.(type) {
		case *syntax.TargetVar:
			e, ok = ctx.Pretty(x)
		case *syntax.Cast:
			e, ok = PrettyCast(ctx.kernel, x)
		}
		if !ok {
			return "refused"
		}
		return prettyString(e.(*syntax.PrintCall))
	})
}

// prettyString is "FORMAT | ARGS" of a pretty-printing sprintf, a
// variable's own (in $$parms$) in brackets with its OnFault text.
func prettyString(e *syntax.PrintCall) string {
	var texts []string
	for _, a := range e.Args {
		if inner, ok := a.(*syntax.PrintCall); ok {
			texts = append(texts, "["+prettyString(inner)+"]")
		} else {
			texts = append(texts, syntax.ExprString(a))
		}
	}
	s := e.Format.Value + " | " + strings.Join(texts, ", ")
	if e.OnFault != "" {
		s += " or " + e.OnFault
	}
	return s
}
