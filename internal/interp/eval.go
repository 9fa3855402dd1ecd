package interp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// eval evaluates e to a value of its type.
func (in *Interp) eval(e syntax.Expr) Value {
	if e.Type() == syntax.TypeString {
		return Value{Str: in.evalStr(e)}
	}
	return Value{Int: in.evalLong(e)}
}

// evalVoid evaluates e for its effects.
func (in *Interp) evalVoid(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.Call:
		in.call(e)
	case *syntax.PrintCall:
		in.print(e)
	case *syntax.Assign:
		in.assign(e)
	default:
		in.eval(e)
	}
}

func (in *Interp) evalLong(e syntax.Expr) int64 {
	switch e := e.(type) {
	case *syntax.NumberLit:
		return e.Value
	case *syntax.Ident:
		return in.load(e).Int
	case *syntax.Index:
		return in.loadIndex(e).Int
	case *syntax.Unary:
		return in.unary(e)
	case *syntax.IncDec:
		return in.incDec(e)
	case *syntax.Binary:
		return in.binaryLong(e)
	case *syntax.Assign:
		return in.assign(e).Int
	case *syntax.Ternary:
		if in.evalLong(e.Cond) != 0 {
			return in.evalLong(e.Then)
		}
		return in.evalLong(e.Else)
	case *syntax.In:
		return b2i(in.contains(e))
	case *syntax.Call:
		return in.call(e).Int
	case *syntax.StatOp:
		return in.statOp(e)
	case *syntax.PrintCall:
		in.print(e)
		return 0
	case *syntax.Cast, *syntax.Autocast:
		return in.kernelData(e)
	}
	throw(fmt.Sprintf("%s cannot be evaluated in a user-side probe", describe(e)), e.Position())
	return 0
}

// concat evaluates a chain of concatenations, a . b . c ..., left to
// right into one buffer, cut at MAXSTRINGLEN-1 bytes: what cutting each
// step gives (the operands hold no NUL), without copying the prefix again
// at each step (a Prometheus line is a dozen of them).
func (in *Interp) concat(e *syntax.Binary) string {
	base := len(in.parts)
	s := strings.Join(in.concatParts(e), "")
	in.parts = in.parts[:base]
	return s
}

// concatParts evaluates the operands of a chain of concatenations left
// to right, cuts them where their concatenation reaches MAXSTRINGLEN-1
// bytes, and pushes them on in.parts (a stack, as an operand may be a
// concatenation of its own); it returns them, and the caller pops them.
func (in *Interp) concatParts(e *syntax.Binary) []string {
	base := len(in.parts)
	var room [16]syntax.Expr
	ops := room[:0]
	for {
		ops = append(ops, e.Y)
		x, ok := e.X.(*syntax.Binary)
		if !ok || x.Op != "." {
			ops = append(ops, e.X)
			break
		}
		e = x
	}
	left := in.maxStringLen() - 1
	for i := len(ops) - 1; i >= 0; i-- {
		s := in.evalStr(ops[i])
		s = s[:min(len(s), max(left, 0))]
		left -= len(s)
		in.parts = append(in.parts, s)
	}
	return in.parts[base:]
}

func (in *Interp) evalStr(e syntax.Expr) string {
	switch e := e.(type) {
	case *syntax.StringLit:
		return in.clip(e.Value)
	case *syntax.Ident:
		return in.load(e).Str
	case *syntax.Index:
		return in.loadIndex(e).Str
	case *syntax.Binary: // concatenation
		return in.concat(e)
	case *syntax.Assign:
		return in.assign(e).Str
	case *syntax.Ternary:
		if in.evalLong(e.Cond) != 0 {
			return in.evalStr(e.Then)
		}
		return in.evalStr(e.Else)
	case *syntax.Call:
		return in.call(e).Str
	case *syntax.PrintCall:
		return in.print(e)
	}
	throw(fmt.Sprintf("%s cannot be evaluated in a user-side probe", describe(e)), e.Position())
	return ""
}

// describe names a construct the interpreter cannot run (context variables
// and the like, which only kernel probes have).
func describe(e syntax.Expr) string {
	switch e := e.(type) {
	case *syntax.TargetVar:
		return "context variable " + e.Name
	case *syntax.AtOp:
		return "@" + e.Name
	}
	return fmt.Sprintf("%T", e)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// global returns the storage of v, or nil for a local.
func (in *Interp) global(v *syntax.Var) *Storage {
	if v.Kind != syntax.VarGlobal {
		return nil
	}
	return &in.globals[v.Index]
}

// load reads a scalar variable; store writes one. Locals take the short
// path, and so do globals kept in memory.
func (in *Interp) load(id *syntax.Ident) Value {
	if v := id.Var; v.Kind != syntax.VarGlobal {
		return in.fr.locals[v.Index]
	}
	return in.loadGlobal(id.Var)
}

func (in *Interp) loadGlobal(v *syntax.Var) Value {
	s := in.globals[v.Index].Scalar
	if m, ok := s.(*memScalar); ok {
		return m.v
	}
	return s.Load()
}

func (in *Interp) store(id *syntax.Ident, x Value) {
	if v := id.Var; v.Kind == syntax.VarGlobal {
		in.storeGlobal(v, x)
	} else {
		in.fr.locals[v.Index] = x
	}
}

func (in *Interp) storeGlobal(v *syntax.Var, x Value) {
	s := in.globals[v.Index].Scalar
	if m, ok := s.(*memScalar); ok {
		m.v = x
		return
	}
	s.Store(x)
}

// evalKeys evaluates the keys of an index or slice onto the value stack
// (values are valid strings already); wild reports a `*`. The caller
// releases them when done with them.
func (in *Interp) evalKeys(exprs []syntax.Expr) (k Key, wild bool) {
	base := len(in.stack)
	for _, e := range exprs {
		var v Value
		if _, ok := e.(*syntax.Star); ok {
			wild = true
		} else {
			v = in.eval(e)
		}
		in.stack = append(in.stack, v)
	}
	return in.stack[base:len(in.stack):len(in.stack)], wild
}

// release pops vals, the values pushed last, off the value stack. The stack
// spares evaluation an allocation for every key tuple, argument list and
// frame of locals: what is pushed is popped in reverse order, except when an
// error unwinds, after which try/catch and the next handler cut the stack
// back to their own depth. A view of pushed values stays valid when later
// pushes move the stack.
func (in *Interp) release(vals []Value) { in.stack = in.stack[:len(in.stack)-len(vals)] }

// sliceMatch reports whether an element's key matches a slice pattern.
func sliceMatch(elem, pattern Key, exprs []syntax.Expr) bool {
	for i, e := range exprs {
		if _, ok := e.(*syntax.Star); ok {
			continue
		}
		if elem[i] != pattern[i] {
			return false
		}
	}
	return true
}

// arrayOf returns the storage of the global array e names.
func (in *Interp) arrayOf(e syntax.Expr) Array {
	if id, ok := e.(*syntax.Ident); ok {
		if g := in.global(id.Var); g != nil && g.Array != nil {
			return g.Array
		}
	}
	throw("not an array", e.Position())
	return nil
}

func (in *Interp) loadIndex(e *syntax.Index) Value {
	if h, ok := e.Array.(*syntax.Hist); ok {
		return Value{Int: in.histBucket(h, e)}
	}
	arr := in.arrayOf(e.Array)
	k, _ := in.evalKeys(e.Keys)
	v, _ := arr.Get(k)
	in.release(k)
	return v
}

// storeError raises the error of a store into the array e indexes: an
// overflow near the array's name, or the storage's own error.
func (in *Interp) storeError(e *syntax.Index, err error) {
	switch {
	case errors.Is(err, ErrOverflow):
		throw(tapset.OverflowMessage(e.Array.(*syntax.Ident).Var), e.Pos)
	default:
		throw(err.Error(), e.Pos)
	}
}

func (in *Interp) contains(e *syntax.In) bool {
	arr := in.arrayOf(e.Array)
	k, wild := in.evalKeys(e.Keys)
	defer in.release(k)
	if !wild {
		_, ok := arr.Get(k)
		return ok
	}
	for _, el := range arr.Elements() {
		if sliceMatch(el.Key, k, e.Keys) {
			return true
		}
	}
	return false
}

func (in *Interp) unary(e *syntax.Unary) int64 {
	x := in.evalLong(e.X)
	switch e.Op {
	case "-":
		return -x
	case "!":
		return b2i(x == 0)
	case "~":
		return ^x
	}
	return x
}

func (in *Interp) binaryLong(e *syntax.Binary) int64 {
	switch e.Op {
	case "&&":
		return b2i(in.evalLong(e.X) != 0 && in.evalLong(e.Y) != 0)
	case "||":
		return b2i(in.evalLong(e.X) != 0 || in.evalLong(e.Y) != 0)
	case "=~", "!~":
		return in.regexpMatch(e)
	}
	if e.X.Type() == syntax.TypeString {
		return b2i(compareStrings(e.Op, in.evalStr(e.X), in.evalStr(e.Y)))
	}
	x := in.evalLong(e.X)
	y := in.evalLong(e.Y)
	return arith(e.Op, x, y, e.Pos)
}

func compareStrings(op, x, y string) bool {
	switch op {
	case "==":
		return x == y
	case "!=":
		return x != y
	case "<":
		return x < y
	case "<=":
		return x <= y
	case ">":
		return x > y
	}
	return x >= y
}

// arith applies a binary operator to longs; at is where a division by 0 is
// reported.
func arith(op string, x, y int64, at syntax.Pos) int64 {
	switch op {
	case "+":
		return x + y
	case "-":
		return x - y
	case "*":
		return x * y
	case "/", "%":
		if y == 0 {
			throw(tapset.MsgDivisionByZero, at)
		}
		if op == "/" {
			return x / y
		}
		return x % y
	case "&":
		return x & y
	case "|":
		return x | y
	case "^":
		return x ^ y
	case "<<":
		return x << (y & 63)
	case ">>":
		return x >> (y & 63)
	case ">>>":
		return int64(uint64(x) >> (y & 63))
	case "==":
		return b2i(x == y)
	case "!=":
		return b2i(x != y)
	case "<":
		return b2i(x < y)
	case "<=":
		return b2i(x <= y)
	case ">":
		return b2i(x > y)
	case ">=":
		return b2i(x >= y)
	}
	throw("unknown operator "+op, at)
	return 0
}

// assign evaluates `LHS op RHS`: the right side first (for an indexed left
// side, its keys before that), then the read-modify-write of the left side.
func (in *Interp) assign(e *syntax.Assign) Value {
	if e.Op == "<<<" {
		return Value{Int: in.accumulate(e)}
	}
	switch lhs := e.LHS.(type) {
	case *syntax.Ident:
		if e.Op == ".=" && in.isValue(lhs.Var) {
			return in.appendToValue(lhs, e.RHS)
		}
		rhs := in.eval(e.RHS)
		var old Value
		if e.Op != "=" {
			old = in.load(lhs)
		}
		x := in.combine(e, old, rhs)
		in.store(lhs, x)
		return x
	case *syntax.Index:
		k, _ := in.evalKeys(lhs.Keys)
		rhs := in.eval(e.RHS)
		arr := in.arrayOf(lhs.Array)
		var old Value
		if e.Op != "=" {
			old, _ = arr.Get(k)
		}
		x := in.combine(e, old, rhs)
		if err := arr.Set(k, x); err != nil {
			in.storeError(lhs, err)
		}
		in.release(k)
		return x
	}
	throw("invalid assignment target", e.Pos)
	return Value{}
}

// appendToValue is `$value .= rhs`: a concatenation's operands are
// appended one by one (procfs.go).
func (in *Interp) appendToValue(value *syntax.Ident, rhs syntax.Expr) Value {
	base := len(in.parts)
	parts := []string{""}
	if b, ok := rhs.(*syntax.Binary); ok && b.Op == "." {
		parts = in.concatParts(b)
	} else {
		parts[0] = in.evalStr(rhs)
	}
	x := Value{Str: in.appendValue(in.load(value).Str, parts)}
	in.parts = in.parts[:base]
	in.store(value, x)
	return x
}

// combine computes the value an assignment stores; old is the left side's
// value, read unless the operator is `=`.
func (in *Interp) combine(e *syntax.Assign, old, rhs Value) Value {
	switch e.Op {
	case "=":
		return Value{Int: rhs.Int, Str: in.clip(rhs.Str)}
	case ".=":
		return Value{Str: in.clip(old.Str + rhs.Str)}
	}
	op := e.Op[:len(e.Op)-1]
	return Value{Int: arith(op, old.Int, rhs.Int, e.RHS.Position())}
}

// accumulate is `S <<< V`.
func (in *Interp) accumulate(e *syntax.Assign) int64 {
	switch lhs := e.LHS.(type) {
	case *syntax.Ident:
		v := in.evalLong(e.RHS)
		g := in.global(lhs.Var)
		if g == nil || g.Statistic == nil {
			throw("not a statistic", lhs.Pos)
		}
		g.Statistic.Add(v)
		return v
	case *syntax.Index:
		k, _ := in.evalKeys(lhs.Keys)
		v := in.evalLong(e.RHS)
		if err := in.arrayOf(lhs.Array).Add(k, v); err != nil {
			in.storeError(lhs, err)
		}
		in.release(k)
		return v
	}
	throw("invalid statistics target", e.Pos)
	return 0
}

func (in *Interp) incDec(e *syntax.IncDec) int64 {
	delta := int64(1)
	if e.Op == "--" {
		delta = -1
	}
	var old int64
	switch x := e.X.(type) {
	case *syntax.Ident:
		old = in.load(x).Int
		in.store(x, Value{Int: old + delta})
	case *syntax.Index:
		k, _ := in.evalKeys(x.Keys)
		arr := in.arrayOf(x.Array)
		v, _ := arr.Get(k)
		old = v.Int
		if err := arr.Set(k, Value{Int: old + delta}); err != nil {
			in.storeError(x, err)
		}
		in.release(k)
	default:
		throw("invalid increment target", e.Pos)
	}
	if e.Prefix {
		return old + delta
	}
	return old
}

// aggregate returns the statistic an aggregate expression names, or nil for
// a missing array element.
func (in *Interp) aggregate(x syntax.Expr) *format.Stat {
	switch x := x.(type) {
	case *syntax.Ident:
		if g := in.global(x.Var); g != nil && g.Statistic != nil {
			return g.Statistic.Total()
		}
		throw("not a statistic", x.Pos)
	case *syntax.Index:
		k, _ := in.evalKeys(x.Keys)
		s := in.arrayOf(x.Array).Stat(k)
		in.release(k)
		return s
	}
	return nil
}

func (in *Interp) statOp(e *syntax.StatOp) int64 {
	s := in.aggregate(e.X)
	if s == nil {
		if e.Op == "count" || e.Op == "sum" {
			return 0
		}
		throw(tapset.MsgEmptyAggregate, e.Pos)
	}
	v, err := s.Get(e.Op)
	if err != nil {
		throw(err.Error(), e.Pos)
	}
	return v
}

// histBucket is `@hist_*(S)[N]`: the count of bucket N.
func (in *Interp) histBucket(h *syntax.Hist, e *syntax.Index) int64 {
	s := in.aggregate(h.X)
	if s == nil || s.Count == 0 {
		throw(tapset.MsgEmptyAggregate, e.Pos)
	}
	n := in.evalLong(e.Keys[0])
	if n < 0 || n >= int64(len(s.Counts)) {
		throw("histogram index out of range", e.Pos)
	}
	return s.Counts[n]
}
