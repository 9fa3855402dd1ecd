package sema

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// finish drops the globals nothing uses (stap elides them silently), adds the
// end probes that display globals written but never read (stap prints them at
// exit, unless --no-global-var-display), numbers the globals and records the -G overrides.
func (e *elab) finish() {
	var display []*syntax.Var
	kept := e.prog.Globals[:0]
	for _, g := range e.prog.Globals {
		if !g.Read && !g.Written && !e.opts.Unoptimized {
			continue
		}
		if g.Written && !g.Read && !e.opts.NoGlobalDisplay {
			display = append(display, g)
		}
		g.Index = len(kept)
		if g.IsArray && g.MaxEntries == 0 {
			g.MaxEntries = tapset.DefaultLimits().MaxMapEntries
		}
		kept = append(kept, g)
	}
	e.prog.Globals = kept
	for _, g := range display {
		e.prog.Probes = append(e.prog.Probes, displayProbe(g))
	}
	e.overrides()
}

func (e *elab) overrides() {
	for _, o := range e.opts.Overrides {
		name, value, _ := strings.Cut(o, "=")
		for _, g := range e.prog.Globals {
			if g.Name == name {
				if e.prog.Overrides == nil {
					e.prog.Overrides = map[*syntax.Var]string{}
				}
				e.prog.Overrides[g] = value
			}
		}
	}
}

// displayProbe builds `probe end { print g }` in stap's format for a global
// written and never read.
func displayProbe(g *syntax.Var) *Probe {
	pos := g.Pos
	p := &Probe{
		Point:  &syntax.ProbePoint{Pos: pos, Components: []*syntax.Component{{Pos: pos, Name: "end"}}},
		Name:   "end",
		Family: "end",
		Args:   map[string]syntax.Expr{},
		Body:   &syntax.Block{Pos: pos},
	}
	p.User = p.Point
	b := &builder{pos: pos, probe: p}
	switch {
	case !g.IsArray && g.Type == tStats:
		p.Body.Stmts = []syntax.Stmt{b.statsScalar(g)}
	case !g.IsArray:
		p.Body.Stmts = []syntax.Stmt{b.printf(g.Name+"="+valueFormat(g.Type, false)+"\n", b.ident(g))}
	default:
		p.Body.Stmts = []syntax.Stmt{b.arrayLoop(g)}
	}
	return p
}

func valueFormat(t syntax.Type, special bool) string {
	if t == tString {
		return `"%#s"`
	}
	if special {
		return "%#d"
	}
	return "%d"
}

// builder makes typed, resolved nodes for synthesized code.
type builder struct {
	pos   syntax.Pos
	probe *Probe
}

func (b *builder) typed(t syntax.Type) syntax.Typed { return syntax.Typed{Pos: b.pos, T: t} }

func (b *builder) ident(v *syntax.Var) *syntax.Ident {
	return &syntax.Ident{Typed: b.typed(v.Type), Name: v.Name, Var: v}
}

func (b *builder) local(name string, t syntax.Type) *syntax.Var {
	v := &syntax.Var{Name: name, Kind: syntax.VarLocal, Pos: b.pos, Type: t, Index: len(b.probe.Locals), Read: true, Written: true}
	b.probe.Locals = append(b.probe.Locals, v)
	return v
}

func (b *builder) str(s string) *syntax.StringLit {
	return &syntax.StringLit{Typed: b.typed(tString), Value: s}
}

func (b *builder) num(n int64) *syntax.NumberLit {
	return &syntax.NumberLit{Typed: b.typed(tLong), Value: n, Text: "0"}
}

func (b *builder) printf(format string, args ...syntax.Expr) syntax.Stmt {
	return &syntax.ExprStmt{X: &syntax.PrintCall{Typed: b.typed(tUnknown), Name: "printf", Format: b.str(format), Args: args}}
}

func (b *builder) stat(op string, x syntax.Expr) *syntax.StatOp {
	return &syntax.StatOp{Typed: b.typed(tLong), Op: op, X: x}
}

var statOps = []string{"count", "min", "max", "sum", "avg"}

// statsArgs returns " @count=%#d @min=%#d ..." and the extractors of x.
func (b *builder) statsArgs(x func() syntax.Expr) (string, []syntax.Expr) {
	var f strings.Builder
	var args []syntax.Expr
	for _, op := range statOps {
		f.WriteString(" @" + op + "=%#d")
		args = append(args, b.stat(op, x()))
	}
	return f.String(), args
}

func (b *builder) statsScalar(g *syntax.Var) syntax.Stmt {
	format, args := b.statsArgs(func() syntax.Expr { return b.ident(g) })
	cond := &syntax.Binary{Typed: b.typed(tLong), Op: "==", X: b.stat("count", b.ident(g)), Y: b.num(0)}
	return &syntax.IfStmt{Pos: b.pos, Cond: cond,
		Then: b.printf(g.Name + " @count=0x0\n"),
		Else: b.printf(g.Name+format+"\n", args...)}
}

func (b *builder) arrayLoop(g *syntax.Var) syntax.Stmt {
	loop := &syntax.ForeachStmt{Pos: b.pos, Array: b.ident(g), SortCol: 0, SortDir: -1}
	var keyFmt []string
	var keys []syntax.Expr
	for i, kt := range g.Keys {
		k := b.local("__idx"+string(rune('0'+i)), kt)
		loop.Keys = append(loop.Keys, b.ident(k))
		keys = append(keys, b.ident(k))
		keyFmt = append(keyFmt, valueFormat(kt, true))
	}
	head := g.Name + "[" + strings.Join(keyFmt, ",") + "]"
	if g.Type == tStats {
		elem := func() syntax.Expr {
			return &syntax.Index{Typed: b.typed(tStats), Array: b.ident(g), Keys: syntax.Clone(keys)}
		}
		format, args := b.statsArgs(elem)
		loop.Body = b.printf(head+format+"\n", append(syntax.Clone(keys), args...)...)
		return loop
	}
	val := b.local("__val", g.Type)
	loop.Value = b.ident(val)
	loop.Body = b.printf(head+"="+valueFormat(g.Type, g.Type == tString)+"\n", append(keys, b.ident(val))...)
	return loop
}
