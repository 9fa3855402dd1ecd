package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Globals are maps shared by every program and by the user side:
//
//	scalar:  ARRAY of 1 element, key u32 0
//	array:   HASH, key = the keys packed in order (8 bytes per long, a
//	         NUL-terminated, zero-padded field per string), max_entries =
//	         the declared size or MAXMAPENTRIES
//	value:   8 bytes per long, a string field, or a statistic (stats.go)
//
// Statistics and globals sema marked for promotion (Var.PerCPU) use the PERCPU_ variants;
// each CPU then updates its own slot. Longs are updated with atomic adds
// where the operator allows (++, --, +=, -=), per-CPU ones too, since
// programs nest (nesting.go); read-modify-write otherwise.
//
// An element is created on first update: insert the zero value with
// BPF_NOEXIST (losing a race to another CPU is harmless), look up again, and
// a second miss means the map is full: stap's array overflow error.
//
// Arrays keyed by the current thread (sema's Var.ByThread) live in
// task-local storage instead: bythread.go.

// Global is the map layout of one global variable.
type Global struct {
	Var  *syntax.Var
	Ref  string // the name its programs reference the map by (Map.Ref)
	Spec *ebpf.MapSpec
	// PerCPU values hold one partial per possible CPU (Spec is PerCPU*).
	PerCPU bool
	// Keys are the fields of a packed key (nil for a scalar, whose key is
	// u32 0); Value is the value's field (Width 0: a long).
	Keys  []ArgField
	Value ArgField
	// Stat is the layout of a statistic's value; nil otherwise.
	Stat *StatLayout
	// Cache is the last-key cache updates go through (cache.go), or nil.
	Cache *Cache
	// ByThread arrays are the current task's storage (bythread.go; Spec
	// is TaskStorage): Keys describe the key a hash would pack, never built.
	ByThread bool
	// Gens: the global is kept in two generations (generations.go); an
	// array's Ref then names Outer, whose elements are maps of Spec.
	Gens  bool
	Outer *ebpf.MapSpec
	// Ring and Heads keep the order a wrapping array's keys were added
	// in (wrap.go); nil for other globals.
	Ring, Heads *Map
	// Changes counts, per CPU, the kernel probes' changes of an array a
	// kernel foreach reads (snapshot.go); nil for other globals.
	Changes *Map
}

// Globals are the layouts of the globals the compiled programs use.
func (m *Module) Globals() []*Global { return m.order }

// global returns the layout of v, computed on first use.
func (m *Module) global(v *syntax.Var) *Global {
	if gl, ok := m.globals[v]; ok {
		return gl
	}
	gl := &Global{Var: v, Ref: "g_" + v.Name}
	gl.PerCPU = v.Type == syntax.TypeStats || v.PerCPU
	keySize := 4
	if v.IsArray {
		keySize = 0
		for i, t := range v.Keys {
			f := ArgField{Offset: keySize}
			if t == syntax.TypeString {
				f.Width = m.keyWidth(v, i)
			}
			gl.Keys = append(gl.Keys, f)
			keySize += fieldSize(f)
		}
		if keySize > maxSmallKey && !m.has(target.BigKeys) {
			keySize = m.narrowKeys(gl.Keys, keySize)
		}
	}
	valueSize := 8
	switch v.Type {
	case syntax.TypeString:
		gl.Value.Width = m.maxStr
		valueSize = fieldSize(gl.Value)
	case syntax.TypeStats:
		gl.Stat = m.statLayout(v)
		valueSize = gl.Stat.Size
	}
	m.zeroSize = max(m.zeroSize, valueSize)
	gl.Spec = &ebpf.MapSpec{Name: v.Name, KeySize: uint32(keySize), ValueSize: uint32(valueSize)}
	switch {
	case !v.IsArray:
		gl.Spec.Type, gl.Spec.MaxEntries = ebpf.Array, 1
	case v.ByThread && m.has(target.TaskStorage) && m.has(target.TaskBTF):
		gl.ByThread = true
		gl.Spec = taskStorageSpec(v.Name, gl.Value)
	default:
		gl.Spec.Type, gl.Spec.MaxEntries = ebpf.Hash, uint32(m.cfg.Limits.MaxMapEntries)
		if v.Decl != nil && v.Decl.Size > 0 {
			gl.Spec.MaxEntries = uint32(v.Decl.Size)
		}
		if m.allocatesAtRunTime() {
			gl.Spec.Flags |= unix.BPF_F_NO_PREALLOC
		}
	}
	if gl.PerCPU {
		gl.Spec.Type = map[ebpf.MapType]ebpf.MapType{ebpf.Array: ebpf.PerCPUArray, ebpf.Hash: ebpf.PerCPUHash}[gl.Spec.Type]
	}
	if v.PerCPU && (v.LiveUser || v.Wrap) && !gl.ByThread {
		// Kept in generations when a handler may touch it while the
		// programs run; and a wrapping array, whose fold keeps its ring's
		// order (the direct reads of one outside generations let a key
		// evicted meanwhile come back from a last-key cache). The others
		// need no flip: nothing reads them before the programs are
		// detached, and their start-up waits for no grace period.
		m.inGenerations(gl)
	}
	if v.Wrap && v.IsArray && !gl.ByThread {
		m.ordered(gl)
	}
	gl.Cache = cacheFor(gl)
	if v.IsArray && !gl.ByThread && gl.Ring == nil && m.foreachInKernel(v) {
		ref := gl.Ref + "_changes"
		gl.Changes = &Map{ref, perCPUArray(v.Name+"_chg", 8, 1)}
	}
	m.globals[v] = gl
	m.order = append(m.order, gl)
	return gl
}

// String describes the global's map, as -p3 lists it.
func (gl *Global) String() string {
	sp := gl.Spec
	if gl.ByThread {
		return fmt.Sprintf("global %s: %v (the current thread's element), value %d bytes after a present word", gl.Var.Name, sp.Type, sp.ValueSize-threadValue)
	}
	desc := fmt.Sprintf("global %s: %v, key %d bytes, value %d bytes, max_entries %d", gl.Var.Name, sp.Type, sp.KeySize, sp.ValueSize, sp.MaxEntries)
	switch {
	case gl.Outer != nil:
		desc += fmt.Sprintf(", one per generation in an %v", gl.Outer.Type)
	case gl.Gens:
		desc += " (an element per generation)"
	}
	return desc
}

// fieldSize is the bytes a key or value field takes (8-aligned).
func fieldSize(f ArgField) int {
	if f.Width == 0 {
		return 8
	}
	return (f.Width + 7) &^ 7
}

// keyWidth is the width of string key i of v: 16 when every key used
// there is execname() (the comm a task has), a literal shorter than 16
// bytes, or a key variable of a foreach over v (which holds a key of the
// map); MAXSTRINGLEN otherwise. A longer string
// that user space uses as a key at run time is refused with a clear error
// (kernelside's storage).
func (m *Module) keyWidth(v *syntax.Var, i int) int {
	comm := true
	fromMap := map[*syntax.Var]bool{} // foreach key variables over v
	visit := func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.ForeachStmt:
			if a, ok := x.Array.(*syntax.Ident); ok && a.Var == v && i < len(x.Keys) {
				fromMap[x.Keys[i].Var] = true
			}
		case *syntax.Index:
			if indexVar(x) == v && i < len(x.Keys) {
				id, ok := x.Keys[i].(*syntax.Ident)
				comm = comm && (fitsComm(x.Keys[i]) || ok && fromMap[id.Var])
			}
		}
		return comm
	}
	for _, p := range m.prog.Probes {
		clear(fromMap)
		syntax.Walk(p.Body, visit)
	}
	clear(fromMap)
	for _, f := range m.prog.Funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			syntax.Walk(f.Decl.Body, visit)
		}
	}
	if comm {
		return commLen
	}
	return m.maxStr
}

// maxSmallKey is the longest hash key before Linux 5.11 (the BPF stack's
// size).
const maxSmallKey = 512

// narrowKeys narrows the string columns of MAXSTRINGLEN of keys, whose
// fields take size bytes, so that the key fits maxSmallKey bytes (where
// the kernel has no longer keys), each the same width: a longer string is
// cut there, as a string is at MAXSTRINGLEN. It returns the new size (the
// old one when narrowing cannot make the key fit: the kernel then refuses
// the map).
func (m *Module) narrowKeys(keys []ArgField, size int) int {
	wide, fixed := 0, size
	for _, f := range keys {
		if f.Width == m.maxStr {
			wide++
			fixed -= fieldSize(f)
		}
	}
	if wide == 0 || (maxSmallKey-fixed)/wide < 16 {
		return size
	}
	width := (maxSmallKey - fixed) / wide &^ 7
	off := 0
	for i := range keys {
		keys[i].Offset = off
		if keys[i].Width == m.maxStr {
			keys[i].Width = width
		}
		off += fieldSize(keys[i])
	}
	return off
}

func fitsComm(k syntax.Expr) bool {
	switch k := k.(type) {
	case *syntax.Call:
		return k.Name == "execname" && len(k.Args) == 0
	case *syntax.StringLit:
		return len(k.Value) < commLen
	}
	return false
}

// commLen is the size of a task's comm (TASK_COMM_LEN).
const commLen = 16

// keyAddr is where a built key lies: R10- or R9-relative.
type keyAddr struct {
	base asm.Register
	off  int32
}

// load emits r = the key's address.
func (k keyAddr) load(g *gen, r asm.Register) {
	g.emit(asm.Mov.Reg(r, k.base), asm.Add.Imm(r, k.off))
}

// key builds the key of v[keys]: for arrays in the scratch area, for
// scalars (u32 0) on the stack. The caller releases both.
func (g *gen) key(gl *Global, keys []syntax.Expr) keyAddr {
	if gl.Keys == nil {
		slot := g.pushSlot()
		g.storeGenOf(gl, slot)
		return keyAddr{asm.R10, int32(slot)}
	}
	base := g.allocScratch(int(gl.Spec.KeySize))
	for i, k := range keys {
		f := gl.Keys[i]
		if f.Width == 0 {
			g.long(k)
			g.emit(asm.StoreMem(regScratch, int16(base+f.Offset), asm.R0, asm.DWord))
			continue
		}
		g.strKey(k, base+f.Offset, f.Width)
	}
	return keyAddr{regScratch, int32(base)}
}

// lookup leaves in R0 the value of v[keys] for this CPU, or 0 when absent.
func (g *gen) lookup(gl *Global, keys []syntax.Expr) keyAddr {
	if gl.ByThread {
		g.threadLookup(gl)
		return keyAddr{}
	}
	k := g.key(gl, keys)
	k.load(g, asm.R2)
	g.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref), asm.FnMapLookupElem.Call())
	return k
}

// lookupOrCreate leaves in regRec the value of v[keys], creating it as
// zero when absent; a full map raises the overflow error at at.
func (g *gen) lookupOrCreate(gl *Global, keys []syntax.Expr, at syntax.Pos) {
	if gl.ByThread {
		g.threadElement(gl)
		return
	}
	smark, stack := g.scratchMark(), g.stack
	g.lookupOrCreateKey(gl, g.key(gl, keys), at)
	g.scratchRelease(smark)
	g.stack = stack
}

// lookupOrCreateKey is lookupOrCreate with the key built at k.
func (g *gen) lookupOrCreateKey(gl *Global, k keyAddr, at syntax.Pos) {
	stack := g.stack
	g.noteChange(gl)
	elements := g.globalMap(gl)
	k.load(g, asm.R2)
	g.emit(elements(asm.R1), asm.FnMapLookupElem.Call())
	have := g.newLabel("have")
	g.emit(asm.JNE.Imm(asm.R0, 0, have))
	if gl.Keys != nil {
		zero := g.pushSlot()
		g.emit(emitLookupIndex(ZeroMap, zero, 0, labelExit)...)
		g.emit(asm.Mov.Reg(asm.R3, asm.R0), elements(asm.R1))
		k.load(g, asm.R2)
		g.emit(asm.Mov.Imm(asm.R4, bpfNoExist), asm.FnMapUpdateElem.Call())
		if gl.Ring != nil && g.needs(at, target.AtomicFetch, "a wrapping array (%) updated in a kernel probe") {
			g.keepOrder(gl, k, elements)
		}
		g.emit(elements(asm.R1))
		k.load(g, asm.R2)
		g.emit(asm.FnMapLookupElem.Call())
	}
	g.emit(asm.JEq.Imm(asm.R0, 0, g.errorSite(tapset.OverflowMessage(gl.Var), at, false)))
	g.mark(have)
	g.emit(asm.Mov.Reg(regRec, asm.R0))
	g.stack = stack
}

const bpfNoExist = 1 // BPF_NOEXIST

// readGlobal loads the long v[keys] (0 when absent) into R0.
func (g *gen) readGlobal(v *syntax.Var, keys []syntax.Expr) {
	gl := g.m.global(v)
	smark, stack := g.scratchMark(), g.stack
	g.lookup(gl, keys)
	done := g.newLabel("absent")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord))
	g.mark(done)
	g.scratchRelease(smark)
	g.stack = stack
}

func (g *gen) readElement(x *syntax.Index) {
	v := indexVar(x)
	if v == nil {
		g.refuse(x.Array, "reading a histogram's bucket")
		return
	}
	g.readGlobal(v, x.Keys)
}

// updateGlobal compiles lv op= rhs (op "" for =) on a global or an
// element (lv an Ident or an Index), leaving the new value in R0, or the
// old one with post. An arithmetic error is raised at the operator (at),
// an array overflow at the element, as stap does.
func (g *gen) updateGlobal(lv syntax.Expr, op string, rhs syntax.Expr, at syntax.Pos, post bool) {
	v, keys := globalOf(lv)
	gl := g.m.global(v)
	g.long(rhs)
	slot := g.pushSlot()
	if gl.Cache != nil && (op == "+" || op == "-") {
		if op == "-" {
			g.emit(asm.Neg.Imm(asm.R0, 0))
		}
		g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
		g.cachedUpdate(gl, keys, slot, lv.Position())
		g.popStack(8)
		g.emit(asm.Mov.Imm(asm.R0, 0)) // the value is never read: Var.PerCPU
		return
	}
	g.emit(asm.StoreMem(asm.R10, slot, asm.R0, asm.DWord))
	g.lookupOrCreate(gl, keys, lv.Position())
	g.emit(asm.LoadMem(asm.R1, asm.R10, slot, asm.DWord))
	g.popStack(8)
	switch {
	case op == "":
		g.emit(asm.StoreMem(regRec, 0, asm.R1, asm.DWord), asm.Mov.Reg(asm.R0, asm.R1))
		return
	case op == "+" || op == "-": // atomic, even per-CPU (nesting.go)
		if op == "-" {
			g.emit(asm.Neg.Imm(asm.R1, 0))
		}
		g.addAndFetch(post)
		return
	}
	g.emit(asm.LoadMem(asm.R0, regRec, 0, asm.DWord))
	g.arith(op, at)
	g.emit(asm.StoreMem(regRec, 0, asm.R0, asm.DWord))
	if post {
		g.emit(undo(op))
	}
}

// globalOf is the global and the keys an lvalue (Ident or Index) names.
func globalOf(lv syntax.Expr) (*syntax.Var, []syntax.Expr) {
	if x, ok := lv.(*syntax.Index); ok {
		return indexVar(x), x.Keys
	}
	return lv.(*syntax.Ident).Var, nil
}

// in compiles `[keys] in a`.
func (g *gen) in(e *syntax.In) {
	id, ok := e.Array.(*syntax.Ident)
	if !ok {
		g.fail(e, "'in' needs an array")
		return
	}
	for _, k := range e.Keys {
		if _, star := k.(*syntax.Star); star {
			g.refuse(k, "a '*' key")
			return
		}
	}
	gl := g.m.global(id.Var)
	if gl.ByThread {
		g.threadIn(gl)
		return
	}
	smark, stack := g.scratchMark(), g.stack
	g.lookup(gl, e.Keys)
	done := g.newLabel("in")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.Mov.Imm(asm.R0, 1))
	g.mark(done)
	g.scratchRelease(smark)
	g.stack = stack
}

// delete compiles `delete a[k]` and `delete scalar`.
func (g *gen) delete(s *syntax.DeleteStmt) {
	switch t := s.Target.(type) {
	case *syntax.Index:
		v := indexVar(t)
		if v == nil {
			g.fail(s, "cannot delete %s in a kernel probe", syntax.ExprString(s.Target))
			return
		}
		gl := g.m.global(v)
		for _, k := range t.Keys {
			if _, star := k.(*syntax.Star); star && !gl.ByThread {
				g.deleteMatching(s, gl, t.Keys)
				return
			}
		}
		if gl.ByThread {
			g.threadDelete(gl)
			return
		}
		smark, stack := g.scratchMark(), g.stack
		g.noteChange(gl)
		g.key(gl, t.Keys).load(g, asm.R2)
		g.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref), asm.FnMapDeleteElem.Call())
		g.scratchRelease(smark)
		g.stack = stack
	case *syntax.Ident:
		if t.Var.Kind != syntax.VarGlobal {
			g.fail(s, "cannot delete %s in a kernel probe", syntax.ExprString(s.Target))
			return
		}
		if t.Var.IsArray || t.Var.Type != syntax.TypeLong {
			g.deleteWhole(s, t.Var)
			return
		}
		g.updateGlobal(t, "", &syntax.NumberLit{Typed: syntax.Typed{T: syntax.TypeLong}}, s.Pos, false)
	default:
		g.fail(s, "cannot delete %s in a kernel probe", syntax.ExprString(s.Target))
	}
}

// addAndFetch adds R1 to the long at regRec, atomically, and leaves in R0
// the long before the add (post) or after it. With BPF_FETCH (Linux 5.12)
// that is the value this add saw; before, a plain atomic add and a load:
// the count stays exact, but the value read may include adds that other
// CPUs (or programs nested on this one) made in between, as a script's
// `x = n++` may see where stap would have locked n.
func (g *gen) addAndFetch(post bool) {
	if g.m.has(target.AtomicFetch) {
		g.emit(asm.Mov.Reg(asm.R0, asm.R1), atomicOp(bpfFetchAdd, regRec, asm.R1, 0)) // R1 = the long before
		if post {
			g.emit(asm.Mov.Reg(asm.R0, asm.R1))
		} else {
			g.emit(asm.Add.Reg(asm.R0, asm.R1))
		}
		return
	}
	g.emit(atomicOp(bpfAdd, regRec, asm.R1, 0), asm.LoadMem(asm.R0, regRec, 0, asm.DWord))
	if post {
		g.emit(asm.Sub.Reg(asm.R0, asm.R1))
	}
}
