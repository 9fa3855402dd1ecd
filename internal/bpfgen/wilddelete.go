package bpfgen

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Wildcard deletes. `delete a[k, *]` deletes every element of a whose
// keys match the keys given, whatever the keys at the `*`s. The program
// packs the given keys into a key (zero at the `*`s), stores its address
// in a stack slot and walks the map with bpf_for_each_map_elem, whose
// callback (a static subprogram, one per global and shape of `*`s)
// compares each element's key with the pattern word by word, the `*`
// fields skipped, and deletes the element when they agree. Strings are
// NUL-padded in keys, so comparing their whole fields compares them.
// Deleting the element the walk is on is what the kernel's hash walk
// allows; an element inserted meanwhile by another CPU may or may not be
// seen, as stap's own locked delete would have ordered it before or after.

// deleteMatching compiles `delete a[keys]` where some keys are `*` (n, the
// statement).
func (g *gen) deleteMatching(n syntax.Node, gl *Global, keys []syntax.Expr) {
	if !g.needs(n.Position(), target.ForEachMapElem, "a delete of many elements in a kernel probe") {
		return
	}
	smark, stack := g.scratchMark(), g.stack
	g.noteChange(gl)
	pattern := g.key(gl, zeroStars(gl, keys))
	slot := g.pushSlot()
	pattern.load(g, asm.R1)
	g.emit(asm.StoreMem(asm.R10, slot, asm.R1, asm.DWord))
	g.forEachElem(gl, g.matchDeleter(gl, keys), slot)
	g.scratchRelease(smark)
	g.stack = stack
}

// zeroStars is keys with each `*` replaced by a zero of its column's type.
func zeroStars(gl *Global, keys []syntax.Expr) []syntax.Expr {
	out := make([]syntax.Expr, len(keys))
	for i, k := range keys {
		out[i] = k
		if _, star := k.(*syntax.Star); !star {
			continue
		}
		if gl.Keys[i].Width == 0 {
			out[i] = &syntax.NumberLit{Typed: syntax.Typed{Pos: k.Position(), T: syntax.TypeLong}}
		} else {
			out[i] = &syntax.StringLit{Typed: syntax.Typed{Pos: k.Position(), T: syntax.TypeString}}
		}
	}
	return out
}

// matchDeleter returns the callback that deletes the elements of gl whose
// keys match the pattern at the address its context holds, but at the
// `*`s of keys; compiled on first use.
func (g *gen) matchDeleter(gl *Global, keys []syntax.Expr) *subprog {
	key := fmt.Sprintf("delete_%s", gl.Ref)
	for _, k := range keys {
		_, star := k.(*syntax.Star)
		key += map[bool]string{true: "_x", false: "_k"}[star]
	}
	return g.callback(key, elemCallbackType(key), func(c *gen) {
		keep := c.newLabel("keep")
		c.emit(
			asm.Mov.Reg(asm.R6, asm.R1), // the map
			asm.Mov.Reg(asm.R7, asm.R2), // the element's key
			asm.LoadMem(asm.R8, asm.R4, 0, asm.DWord),
		)
		c.matchKeys(gl, keys, keyAddr{asm.R7, 0}, keyAddr{asm.R8, 0}, keep)
		c.emit(asm.Mov.Reg(asm.R1, asm.R6), asm.Mov.Reg(asm.R2, asm.R7), asm.FnMapDeleteElem.Call())
		c.mark(keep)
		c.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	})
}
