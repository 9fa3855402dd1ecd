package interp

import (
	"fmt"
	"strconv"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Prepared is the part of an interpreter that depends on its program
// alone: prepare's compiled formats and regular expressions, the
// statement counter and the default nesting bound (nesting.go). Prepare
// makes it apart from New, which may take it (Config.Prepared), so that
// the driver makes it while the kernel verifies the programs, rather
// than after: syscall.*'s takes a millisecond. One New takes one Prepared
// (the statement counter caches as the interpreter runs).
type Prepared struct {
	prog     *sema.Program
	formats  map[*syntax.PrintCall]*format.Format
	captures map[*syntax.PrintCall]bool
	regexps  map[*syntax.Binary]*regexpProg
	actions  *actionCounter
	nesting  int
	err      error // what prepare refused, which New returns
}

// Prepare prepares prog for New.
func Prepare(prog *sema.Program) *Prepared {
	in := &Interp{prog: prog, formats: map[*syntax.PrintCall]*format.Format{},
		captures: map[*syntax.PrintCall]bool{}, regexps: map[*syntax.Binary]*regexpProg{}}
	err := in.prepare()
	return &Prepared{prog: prog, formats: in.formats, captures: in.captures, regexps: in.regexps,
		actions: newActionCounter(prog), nesting: defaultNesting(prog), err: err}
}

// prepare compiles what the program's nodes need at run time: printf formats
// (kernel probes' too, for their print records, with the calls whose records
// carry captured arguments, and those of the deferred string locals'
// functions) and regular expressions, and
// refuses statistics whose shape (sema.StatShape) the runtime cannot build.
func (in *Interp) prepare() error {
	var err error
	visit := func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.PrintCall:
			err = in.compilePrint(n)
			in.noteCaptures(n)
		case *syntax.Binary:
			if n.Op == "=~" || n.Op == "!~" {
				err = in.compileRegexp(n)
			}
		case *syntax.Hist:
			err = in.shapeError(n.X)
		case *syntax.StatOp:
			err = in.shapeError(n.X)
		}
		return true
	}
	for _, p := range in.prog.Probes {
		syntax.Walk(p.Body, visit)
		if p.Cond != nil {
			syntax.Walk(p.Cond, visit)
		}
	}
	for _, f := range in.prog.Funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			syntax.Walk(f.Decl.Body, visit)
		}
	}
	for _, sites := range in.prog.Deferred {
		for _, f := range sites {
			syntax.Walk(f.Decl.Body, visit)
		}
	}
	return err
}

// noteCaptures records the print-family calls with an argument calling a
// Captured builtin or reading a deferred string local (sema.DeferPrinted),
// whose kernel records KernelPrint completes.
func (in *Interp) noteCaptures(n *syntax.PrintCall) {
	for _, a := range n.Args {
		if c, ok := a.(*syntax.Call); ok && isCaptured(c) || in.deferredSites(a) != nil {
			in.captures[n] = true
		}
	}
}

func (in *Interp) compilePrint(n *syntax.PrintCall) error {
	f, err := sema.PrintFormat(n)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Format.Pos, err)
	}
	in.formats[n] = f
	return nil
}

// shapeError is the error of the shape of the statistic x names, if any.
func (in *Interp) shapeError(x syntax.Expr) error {
	if v := sema.StatVar(x); v != nil {
		return in.prog.StatShape(v).Err
	}
	return nil
}

// initGlobals creates the storage of every global (the driver's, or memory)
// and applies initialisers and -G overrides.
func (in *Interp) initGlobals() error {
	in.globals = make([]Storage, len(in.prog.Globals))
	for i, v := range in.prog.Globals {
		st, err := in.storage(v)
		if err != nil {
			return err
		}
		in.globals[i] = st
		if st.Scalar == nil {
			continue
		}
		val, set, err := in.startValue(v)
		if err != nil {
			return err
		}
		if set {
			st.Scalar.Store(val)
		}
	}
	return nil
}

// startValue is the value scalar global v starts the run with: its -G
// value, else its initialiser; set is false when it has neither (0 or "").
func (in *Interp) startValue(v *syntax.Var) (val Value, set bool, err error) {
	if text, ok := in.prog.Overrides[v]; ok {
		o, err := overrideValue(v, text)
		if err != nil {
			return Value{}, false, err
		}
		return Value{Int: o.Int, Str: in.clip(o.Str)}, true, nil
	}
	if v.Init != nil {
		return in.literal(v.Init), true, nil
	}
	return Value{}, false, nil
}

// storage returns the storage of global v: the driver's if it supplies one,
// which must match the variable's kind, or memory.
func (in *Interp) storage(v *syntax.Var) (Storage, error) {
	g := in.describe(v)
	var st Storage
	if in.cfg.Storage != nil {
		st = in.cfg.Storage(g)
	}
	if st == (Storage{}) {
		return MemoryStorage(g), nil
	}
	isStat := v.Type == syntax.TypeStats
	if (st.Array != nil) != v.IsArray || (st.Statistic != nil) != (isStat && !v.IsArray) ||
		(st.Scalar != nil) != (!isStat && !v.IsArray) {
		return Storage{}, fmt.Errorf("storage of global %s does not match its kind", v.Name)
	}
	return st, nil
}

// MemoryStorage is the in-memory storage of global g, the interpreter's
// own; each of its three kinds is also a Folder.
func MemoryStorage(g Global) Storage {
	switch {
	case g.Var.IsArray:
		return Storage{Array: newMemArray(g.Var.Keys, int(g.Capacity), g.Var.Wrap, g.NewStat)}
	case g.NewStat != nil:
		return Storage{Statistic: memStatistic{g.NewStat()}}
	}
	return Storage{Scalar: &memScalar{}}
}

func (in *Interp) literal(e syntax.Expr) Value {
	if s, ok := e.(*syntax.StringLit); ok {
		return Value{Str: in.clip(s.Value)}
	}
	n, _ := sema.LiteralLong(e)
	return Value{Int: n}
}

func overrideValue(v *syntax.Var, text string) (Value, error) {
	if v.Type == syntax.TypeString {
		return Value{Str: text}, nil
	}
	n, err := strconv.ParseInt(text, 0, 64)
	if err != nil {
		return Value{}, fmt.Errorf("invalid value %q for global %s", text, v.Name)
	}
	return Value{Int: n}, nil
}

// clip makes s a valid string value: cut at MAXSTRINGLEN-1 bytes and at the
// first NUL byte.
func (in *Interp) clip(s string) string { return format.StringValue(s, in.maxStringLen()) }

// maxStringLen is the MAXSTRINGLEN in force.
func (in *Interp) maxStringLen() int { return int(in.limits.MaxStringLen) }
