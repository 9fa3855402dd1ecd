package bpfgen

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Callbacks: static subprograms that a helper calls, bpf_for_each_map_elem
// (wildcard and whole deletes, foreach's selection) and bpf_loop
// (foreach's walk of a wrapping array's ring). Each is compiled once per
// program, on first use, by a gen of its own sharing the program's
// subprograms; it has its own stack frame and reaches the caller's data
// only through the context the helper passes, a pointer to a stack slot of
// the caller that holds an address.

// callback returns the callback named name with BTF prototype fn, compiled
// by body on first use.
func (g *gen) callback(name string, fn *btf.Func, body func(c *gen)) *subprog {
	if sp, ok := g.subs.byKey[name]; ok {
		return sp
	}
	sp := &subprog{label: name}
	g.subs.byKey[name] = sp
	g.staticSubprog(sp, fn, func(c *gen) func() {
		body(c)
		return func() {}
	})
	return sp
}

// forEachElem calls callback sp on every element of gl's map with
// bpf_for_each_map_elem, its context the stack slot ctx.
func (g *gen) forEachElem(gl *Global, sp *subprog, ctx int16) {
	g.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(gl.Ref))
	g.callWith(asm.FnForEachMapElem, sp, ctx)
}

// loopCall calls bpf_loop(R1, sp, ctx, 0): callback sp for R1 indexes, its
// context the stack slot ctx.
func (g *gen) loopCall(sp *subprog, ctx int16) { g.callWith(asm.FnLoop, sp, ctx) }

// callWith calls helper(R1, sp, ctx, 0), a helper taking callback sp and
// its context, the stack slot ctx.
func (g *gen) callWith(helper asm.BuiltinFunc, sp *subprog, ctx int16) {
	g.emit(
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(sp.label),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, int32(ctx)),
		asm.Mov.Imm(asm.R4, 0),
		helper.Call(),
	)
}

// elemCallbackType is the BTF prototype of a callback of
// bpf_for_each_map_elem (a wildcard delete's, a foreach's).
func elemCallbackType(name string) *btf.Func {
	ptr := &btf.Pointer{Target: &btf.Void{}}
	return &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: longType, Params: []btf.FuncParam{
		{Name: "map", Type: ptr}, {Name: "key", Type: ptr}, {Name: "value", Type: ptr}, {Name: "ctx", Type: ptr}}}}
}

// loopCallbackType is the BTF prototype of a callback of bpf_loop.
func loopCallbackType(name string) *btf.Func {
	u32 := &btf.Int{Name: "u32", Size: 4}
	ptr := &btf.Pointer{Target: &btf.Void{}}
	return &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: longType, Params: []btf.FuncParam{
		{Name: "index", Type: u32}, {Name: "ctx", Type: ptr}}}}
}
