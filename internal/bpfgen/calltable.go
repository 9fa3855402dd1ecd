package bpfgen

import (
	"encoding/binary"
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
// (a string, or a deferred one's assignment number), its argument
// layout, the generic argstr's number, ... (sema's syscalls.go); in the
// first of a split entry, the calls of the second take a tail call
// instead (syscallsplit.go). For the 360 calls of syscall.* that is some
// 3,400 instructions, a path each that the verifier walks, more than
// half of the first program. When every leaf only stores constants in
// locals, the tree compiles to a lookup in an ARRAY map indexed by the
// call's number (callTableMap), whose element holds what the call's leaf
// stores: its kind (0 for none: `next`; 1 stores; 2 the tail call), then
// for each local some leaf stores its bytes (a number's word, a string
// and its NUL in whole words), zeros where the call's leaf does not
// store it (0 and "": the locals' first values; only the subject's
// assignment comes before the dispatch). A few instructions a local, one
// path.

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

// callCase is a leaf of the dispatch: its key, and what it stores or,
// tail set, the statements of its tail call.
type callCase struct {
	key    int64
	stores []constStore
	tail   syntax.Stmt
}

// constStore is a leaf's `v = CONSTANT`: the bytes it writes in v's slot
// (a number's 8; a string's, its NUL and zeros to a multiple of 8).
type constStore struct {
	v     *syntax.Var
	bytes []byte
}

// stored is what c writes in v's slot: nil when it does not.
func (c callCase) stored(v *syntax.Var) []byte {
	for _, s := range c.stores {
		if s.v == v {
			return s.bytes
		}
	}
	return nil
}

// callColumn is a local some leaf stores, where its bytes lie in a
// table's element (after the kind) and how many.
type callColumn struct {
	v          *syntax.Var
	off, width int
}

// callTable compiles s as a table when it is the merged entry's dispatch
// on the call, a statement of the probe's body after which its leaves'
// locals are first assigned, whose leaves only store constants; it tells
// whether it did.
func (g *gen) callTable(s *syntax.IfStmt) bool {
	at := slices.Index(g.probe.Body.Stmts, syntax.Stmt(s))
	if at < 0 || !onCall(s) {
		return false
	}
	var cases []callCase
	if !dispatchCases(s, sema.SyscallNrVar, 0, callTableMaxKey, func(key int64, c syntax.Stmt) bool { return g.addCase(key, c, &cases) }) ||
		len(cases) < callTableMin {
		return false
	}
	columns := callColumns(cases)
	if assignsAny(g.probe.Body.Stmts[:at], columns) {
		return false
	}
	g.emitCallTable(s.Cond.(*syntax.Binary).X, cases, columns)
	return true
}

// onCall tells whether s is a node of a dispatch on the call's number.
func onCall(s syntax.Stmt) bool {
	d, ok := sema.AsDispatchNode(s)
	return ok && d.Subject == sema.SyscallNrVar
}

// dispatchCases calls leaf with the key and case of each leaf of the
// dispatch s on subject, whose subject is in [lo, hi), and tells whether
// s is such a dispatch and leaf accepted every case. A leaf sema
// tightened (its case alone: tightenDispatches) is the one number its
// range leaves.
func dispatchCases(s syntax.Stmt, subject string, lo, hi int64, leaf func(int64, syntax.Stmt) bool) bool {
	d, ok := sema.AsDispatchNode(s)
	switch {
	case !ok || d.Subject != subject:
		return hi == lo+1 && leaf(lo, s)
	case d.Op == "<":
		return d.Key > lo && d.Key < hi && dispatchCases(d.Then, subject, lo, d.Key, leaf) &&
			dispatchCases(d.Else, subject, d.Key, hi, leaf)
	}
	_, next := d.Else.(*syntax.NextStmt)
	return next && d.Key >= lo && d.Key < hi && leaf(d.Key, d.Then)
}

// addCase appends the leaf of key whose case is s, and tells whether it
// only stores constants (or is the tail call).
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
			store, ok := g.storesConstant(st)
			if !ok {
				return false
			}
			c.stores = append(c.stores, store)
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

// storesConstant returns what s stores when it is a leaf's `v = CONSTANT`:
// a long local's number, a string local's literal (one that fits its
// slot), or a deferred local's assignment without leaves, whose number is
// the assignment's.
func (g *gen) storesConstant(s syntax.Stmt) (constStore, bool) {
	a, v := localAssign(s)
	if v == nil {
		return constStore{}, false
	}
	deferred := g.m.prog.Deferred[v] != nil
	switch rhs := a.RHS.(type) {
	case *syntax.NumberLit:
		return constStore{v, binary.NativeEndian.AppendUint64(nil, uint64(rhs.Value))}, v.Type != syntax.TypeString
	case *syntax.StringLit:
		text := make([]byte, (len(rhs.Value)+8)&^7) // its NUL, zeros to a word
		copy(text, rhs.Value)
		return constStore{v, text}, v.Type == syntax.TypeString && !deferred && len(text) <= g.local(v).width
	case *syntax.Call:
		n := slices.Index(g.m.prog.Deferred[v], rhs.Func) + 1
		return constStore{v, binary.NativeEndian.AppendUint64(nil, uint64(n))}, n > 0 && len(rhs.Args) == 0
	}
	return constStore{}, false
}

// callColumns are the locals the cases store, in the order they first
// store them, each as wide as the most a case stores in it.
func callColumns(cases []callCase) []callColumn {
	var columns []callColumn
	for _, c := range cases {
		for _, s := range c.stores {
			i := slices.IndexFunc(columns, func(col callColumn) bool { return col.v == s.v })
			if i < 0 {
				i, columns = len(columns), append(columns, callColumn{v: s.v})
			}
			columns[i].width = max(columns[i].width, len(s.bytes))
		}
	}
	off := 8 // after the kind
	for i := range columns {
		columns[i].off, off = off, off+columns[i].width
	}
	return columns
}

// rowSize is the size of a table's element: the kind, then columns.
func rowSize(columns []callColumn) int {
	if n := len(columns); n > 0 {
		return columns[n-1].off + columns[n-1].width
	}
	return 8
}

// assignsAny tells whether stmts assign one of columns' locals.
func assignsAny(stmts []syntax.Stmt, columns []callColumn) bool {
	found := false
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			if a, ok := n.(*syntax.Assign); ok {
				if id, ok := a.LHS.(*syntax.Ident); ok {
					found = found || slices.ContainsFunc(columns, func(c callColumn) bool { return c.v == id.Var })
				}
			}
			return !found
		})
	}
	return found
}

// callTableRows are the elements of a table: by key, the kind and the
// columns' bytes.
func callTableRows(cases []callCase, columns []callColumn) map[uint32][]byte {
	rows := map[uint32][]byte{}
	for _, c := range cases {
		row := make([]byte, rowSize(columns))
		kind := uint64(callStore)
		if c.tail != nil {
			kind = callTail
		}
		binary.NativeEndian.PutUint64(row, kind)
		for _, col := range columns {
			copy(row[col.off:], c.stored(col.v))
		}
		rows[uint32(c.key)] = row
	}
	return rows
}

// emitCallTable compiles the dispatch of cases on subject as a lookup
// in a table of its own.
func (g *gen) emitCallTable(subject syntax.Expr, cases []callCase, columns []callColumn) {
	size := cases[len(cases)-1].key + 1
	ref := g.m.callTableRef()
	g.m.callTables = append(g.m.callTables, callTableSpec(ref, "syscalls", size, rowSize(columns), callTableRows(cases, columns)))
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
	for _, col := range columns {
		dst, base := g.local(col.v), regScratch // strings and a deferred local's blob live there
		if !dst.str && !dst.deferred {
			base = dst.base()
		}
		for w := 0; w < col.width; w += 8 {
			g.emit(asm.LoadMem(asm.R1, asm.R0, int16(col.off+w), asm.DWord),
				asm.StoreMem(base, int16(dst.off+w), asm.R1, asm.DWord))
		}
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

// callTableSpec describes a table, name, of size elements of valueSize
// bytes, with rows.
func callTableSpec(ref, name string, size int64, valueSize int, rows map[uint32][]byte) Map {
	spec := &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(valueSize),
		MaxEntries: uint32(size)}
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: k, Value: rows[k]})
	}
	return Map{ref, spec}
}
