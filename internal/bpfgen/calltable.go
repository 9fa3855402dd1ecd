package bpfgen

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The merged syscall.* entry's dispatch on the call as a table.
//
// sema's merged entry dispatches on the call's number with a balanced
// tree of comparisons whose leaves set the call's own locals: its name
// (a deferred string: the number of its assignment), its argument
// layout, the generic argstr's number, ... (sema's syscalls.go); in the
// first of a split entry, the calls of the second take a tail call
// instead (syscallsplit.go). For the 360 calls of syscall.* that is some
// 3,400 instructions, a path each that the verifier walks, more than
// half of the first program. When every leaf only stores numbers in
// locals, the tree compiles to a lookup in an ARRAY map indexed by the
// call's number (callTableMap), whose element holds what the call's leaf
// stores: its kind (0 for none: `next`; 1 stores; 2 the tail call), then
// a word for each local some leaf stores, 0 where the call's leaf does
// not (the locals start at 0; only the subject's assignment comes
// before the dispatch). About 30 instructions, one path.

// callTableMin is the fewest leaves a dispatch compiles to a table.
const callTableMin = 16

// callTableMaxKey bounds the calls' numbers of a table (its entries).
const callTableMaxKey = 4096

// callTableKind is the first word of a table's element.
const (
	callNone  = 0
	callStore = 1
	callTail  = 2
)

// callCase is a leaf of the dispatch: its key, and what it stores (one
// number per local) or, tail set, the statements of its tail call.
type callCase struct {
	key    int64
	stores []numberStore
	tail   syntax.Stmt
}

// numberStore is a leaf's `v = n`.
type numberStore struct {
	v *syntax.Var
	n int64
}

// number is what c stores in v: 0 when it does not.
func (c callCase) number(v *syntax.Var) int64 {
	for _, s := range c.stores {
		if s.v == v {
			return s.n
		}
	}
	return 0
}

// callTable compiles s as a table when it is the merged entry's dispatch
// on the call, a statement of the probe's body after which its leaves'
// locals are first assigned, whose leaves only store numbers; it tells
// whether it did.
func (g *gen) callTable(s *syntax.IfStmt) bool {
	at := slices.Index(g.probe.Body.Stmts, syntax.Stmt(s))
	if at < 0 || dispatchSubject(s) == nil {
		return false
	}
	var cases []callCase
	if !g.callCases(s, 0, callTableMaxKey, &cases) || len(cases) < callTableMin {
		return false
	}
	columns := callColumns(cases)
	if assignsAny(g.probe.Body.Stmts[:at], columns) {
		return false
	}
	g.emitCallTable(dispatchSubject(s), cases, columns)
	return true
}

// dispatchSubject is the subject of s when s is a node of a dispatch on
// the call's number, nil otherwise.
func dispatchSubject(s syntax.Stmt) *syntax.Ident {
	i, ok := s.(*syntax.IfStmt)
	if !ok {
		return nil
	}
	b, ok := i.Cond.(*syntax.Binary)
	if !ok || b.Op != "<" && b.Op != "==" {
		return nil
	}
	id, ok := b.X.(*syntax.Ident)
	if _, isNum := b.Y.(*syntax.NumberLit); !ok || !isNum || id.Name != sema.SyscallNrVar {
		return nil
	}
	return id
}

// callCases appends to cases the leaves of the dispatch s, whose subject
// is in [lo, hi), and tells whether each is a leaf a table holds. A leaf
// sema tightened (its case alone: tightenDispatches) is the one number
// its range leaves.
func (g *gen) callCases(s syntax.Stmt, lo, hi int64, cases *[]callCase) bool {
	if dispatchSubject(s) == nil {
		return hi == lo+1 && g.addCase(lo, s, cases)
	}
	i := s.(*syntax.IfStmt)
	b := i.Cond.(*syntax.Binary)
	k := b.Y.(*syntax.NumberLit).Value
	if b.Op == "<" {
		return k > lo && k < hi && g.callCases(i.Then, lo, k, cases) && g.callCases(i.Else, k, hi, cases)
	}
	_, next := i.Else.(*syntax.NextStmt)
	return next && k >= lo && k < hi && g.addCase(k, i.Then, cases)
}

// addCase appends the leaf of key whose case is s, and tells whether it
// only stores numbers (or is the tail call).
func (g *gen) addCase(key int64, s syntax.Stmt, cases *[]callCase) bool {
	c := callCase{key: key}
	stmts := []syntax.Stmt{s}
	if b, ok := s.(*syntax.Block); ok {
		stmts = b.Stmts
	}
	if isTailCase(stmts) {
		c.tail = s
	} else {
		for _, st := range stmts {
			v, n, ok := g.storesNumber(st)
			if !ok {
				return false
			}
			c.stores = append(c.stores, numberStore{v, n})
		}
	}
	*cases = append(*cases, c)
	return true
}

// isTailCase tells whether stmts are `__syscall_tail(); next`.
func isTailCase(stmts []syntax.Stmt) bool {
	if len(stmts) != 2 {
		return false
	}
	e, ok := stmts[0].(*syntax.ExprStmt)
	if !ok {
		return false
	}
	call, ok := e.X.(*syntax.Call)
	_, next := stmts[1].(*syntax.NextStmt)
	return ok && call.Name == "__syscall_tail" && next
}

// storesNumber returns the local s stores a number in and the number: a
// long local's `v = N`, or a deferred local's assignment without leaves,
// whose number is the assignment's.
func (g *gen) storesNumber(s syntax.Stmt) (*syntax.Var, int64, bool) {
	e, ok := s.(*syntax.ExprStmt)
	if !ok {
		return nil, 0, false
	}
	a, ok := e.X.(*syntax.Assign)
	if !ok || a.Op != "=" {
		return nil, 0, false
	}
	id, ok := a.LHS.(*syntax.Ident)
	if !ok || id.Var == nil || id.Var.Kind != syntax.VarLocal {
		return nil, 0, false
	}
	switch rhs := a.RHS.(type) {
	case *syntax.NumberLit:
		return id.Var, rhs.Value, id.Var.Type != syntax.TypeString
	case *syntax.Call:
		n := slices.Index(g.m.prog.Deferred[id.Var], rhs.Func) + 1
		return id.Var, int64(n), n > 0 && len(rhs.Args) == 0
	}
	return nil, 0, false
}

// callColumns are the locals the cases store, in the order they first
// store them.
func callColumns(cases []callCase) []*syntax.Var {
	var columns []*syntax.Var
	for _, c := range cases {
		for _, s := range c.stores {
			if !slices.Contains(columns, s.v) {
				columns = append(columns, s.v)
			}
		}
	}
	return columns
}

// assignsAny tells whether stmts assign one of vars.
func assignsAny(stmts []syntax.Stmt, vars []*syntax.Var) bool {
	found := false
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			if a, ok := n.(*syntax.Assign); ok {
				if id, ok := a.LHS.(*syntax.Ident); ok && slices.Contains(vars, id.Var) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// callTableRows are the elements of a table: by key, the kind and the
// columns' numbers.
func callTableRows(cases []callCase, columns []*syntax.Var) map[uint32][]byte {
	rows := map[uint32][]byte{}
	for _, c := range cases {
		row := make([]byte, 8*(1+len(columns)))
		kind := uint64(callStore)
		if c.tail != nil {
			kind = callTail
		}
		binary.NativeEndian.PutUint64(row, kind)
		for i, v := range columns {
			binary.NativeEndian.PutUint64(row[8*(i+1):], uint64(c.number(v)))
		}
		rows[uint32(c.key)] = row
	}
	return rows
}

// emitCallTable compiles the dispatch of cases on subject as a lookup
// in a table of its own.
func (g *gen) emitCallTable(subject *syntax.Ident, cases []callCase, columns []*syntax.Var) {
	size := cases[len(cases)-1].key + 1
	ref := fmt.Sprintf("%s_%d", callTableMap, len(g.m.callTables))
	g.m.callTables = append(g.m.callTables, callTableSpec(ref, size, callTableRows(cases, columns), len(columns)))
	miss, tail, done := g.newLabel("nocall"), g.newLabel("tailcall"), g.newLabel("call")
	g.long(subject)
	key := g.pushSlot()
	g.emit(asm.JGE.Imm(asm.R0, int32(size), miss), // unsigned: a negative number too
		asm.StoreMem(asm.R10, key, asm.R0, asm.Word))
	g.emit(emitLookup(ref, key, miss)...)
	g.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.JEq.Imm(asm.R1, callNone, miss))
	i := slices.IndexFunc(cases, func(c callCase) bool { return c.tail != nil })
	if i >= 0 {
		g.emit(asm.JEq.Imm(asm.R1, callTail, tail))
	}
	for col, v := range columns {
		dst, base := g.local(v), regScratch // a deferred local's blob starts with its assignment's number
		if !dst.deferred {
			base = dst.base()
		}
		g.emit(asm.LoadMem(asm.R1, asm.R0, int16(8*(col+1)), asm.DWord),
			asm.StoreMem(base, int16(dst.off), asm.R1, asm.DWord))
	}
	g.emit(asm.Ja.Label(done))
	if i >= 0 {
		g.mark(tail)
		g.stmt(cases[i].tail)
	}
	g.mark(miss)
	g.next()
	g.mark(done)
	g.popStack(8)
}

// callTableMap names the tables of dispatches on the call (a number
// after it for each).
const callTableMap = "syscall_calls"

// callTableSpec describes a table of size elements of columns words
// after the kind, with rows.
func callTableSpec(ref string, size int64, rows map[uint32][]byte, columns int) Map {
	spec := &ebpf.MapSpec{Name: "syscalls", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(8 * (1 + columns)),
		MaxEntries: uint32(size)}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: k, Value: rows[k]})
	}
	return Map{ref, spec}
}
