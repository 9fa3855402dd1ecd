package bpfgen

import (
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// usymname(addr), usymdata(addr) and umodname(addr) in a kernel probe. A
// user address means something only in its process, whose mappings the
// kernel cannot name and user space may read too late (the process exited
// before the map holding the value was read). So a kernel probe makes a
// symbol token, a short string naming the address the way a stack token
// names a stack (stacks.go), which user space replaces with the symbol's
// text wherever it reads a string the kernel made, and wherever in the
// string the token stands ("u:".umodname(a).":".usymname(a) is two).
// Tokens are ordinary strings in the kernel: a key (`p[usymname(uaddr())]
// <<< 1` counts per address there), a value, a piece of a concatenation.
// Keys with the same text are merged in user space as stacks' are.
//
// When the address is the first frame of the task's user stack (uaddr():
// where a sample interrupted the process, a probed function's entry) the
// kernel also reads that frame as a build-id frame (bpf_get_stack with
// BPF_F_USER_BUILD_ID): the build id of the file it lies in and its offset
// there, which name the code without the process. Any other address, or a
// frame whose build id the kernel could not read, is named by the process
// (its tgid) and the address, symbolized through that process's mappings
// while it lives. A token is
//
//	ESC, the form (SymName, SymData, SymModule), the kind
//	(symKindFrame or symKindAddress), the tgid in 4 digits, the address
//	in 11, the build id in 28 (its first 16 bytes as two words of 11,
//	then the last 4 bytes in 6), the file offset in 11, NUL
//
// with 6-bit digits offset by '@' (low digits first; an address token's
// build id and offset all '@'), so that one address of one process is one
// token.

// SymForm is what a symbol token stands for.
type SymForm byte

const (
	SymName   SymForm = 'n' // usymname()
	SymData   SymForm = 'd' // usymdata()
	SymModule SymForm = 'm' // umodname()
	// usymfile(), usymline(), usymfileline(): from the file's DWARF
	SymFile     SymForm = 'f'
	SymLine     SymForm = 'l'
	SymFileLine SymForm = 'L'
)

// The kinds of symbol token.
const (
	symKindAddress = '@' // tgid and address
	symKindFrame   = 'A' // a build-id frame too
)

// The layout of a symbol token: each field's offset and digits.
const (
	symTgidAt, symTgidDigits     = 3, 4
	symAddrAt, symAddrDigits     = symTgidAt + symTgidDigits, 11
	symBuildIDAt                 = symAddrAt + symAddrDigits
	symBuildIDDigits             = 11 + 11 + 6
	symOffsetAt, symOffsetDigits = symBuildIDAt + symBuildIDDigits, 11
	// SymTokenLen is the length of a symbol token, without its NUL.
	SymTokenLen = symOffsetAt + symOffsetDigits
)

// SymToken is what a symbol token names.
type SymToken struct {
	Form SymForm
	Tgid uint32
	Addr uint64
	// Frame: BuildID and Offset name the address's code.
	Frame   bool
	BuildID [20]byte
	Offset  uint64
}

// SymTokens tells whether a program makes symbol tokens.
func (m *Module) SymTokens() bool { return m.symTokens }

// ParseSymToken recognizes a symbol token at the start of s.
func ParseSymToken(s string) (tok SymToken, ok bool) {
	if len(s) < SymTokenLen || s[0] != tokenMark {
		return SymToken{}, false
	}
	switch SymForm(s[1]) {
	case SymName, SymData, SymModule, SymFile, SymLine, SymFileLine:
	default:
		return SymToken{}, false
	}
	if !digits(s[2:SymTokenLen]) {
		return SymToken{}, false
	}
	tok.Form, tok.Frame = SymForm(s[1]), s[2] == symKindFrame
	tok.Tgid = uint32(tokenNumber(s[symTgidAt:], symTgidDigits))
	tok.Addr = tokenNumber(s[symAddrAt:], symAddrDigits)
	id := s[symBuildIDAt:]
	for i, w := range []uint64{tokenNumber(id, 11), tokenNumber(id[11:], 11), tokenNumber(id[22:], 6)} {
		for j := 0; j < 8 && 8*i+j < len(tok.BuildID); j++ {
			tok.BuildID[8*i+j] = byte(w >> (8 * j))
		}
	}
	tok.Offset = tokenNumber(s[symOffsetAt:], symOffsetDigits)
	return tok, true
}

// tokenNumber decodes n 6-bit digits of s, the lowest first.
func tokenNumber(s string, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<6 | uint64(s[i]-'@')&63
	}
	return v
}

// bpfUserBuildID is bpf_get_stack's BPF_F_USER_BUILD_ID.
const bpfUserBuildID = 1 << 11

// symToken compiles usymname(addr) and its kin: the token of the address
// in form.
func (g *gen) symToken(form SymForm, c *syntax.Call) value {
	g.m.symTokens = true
	v := g.strSlot(SymTokenLen + 1)
	mark := g.scratchMark()
	addr := g.longArgs(c.Args[0])[0]
	frame := g.allocScratch(BuildIDFrameSize)
	asAddress, done := g.newLabel("usym_addr"), g.newLabel("usym")
	g.emit(
		asm.StoreImm(regScratch, int16(v.off), tokenMark, asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+1), int64(form), asm.Byte),
		asm.StoreImm(regScratch, int16(v.off+SymTokenLen), 0, asm.Byte),
	)
	g.halfOf(asm.FnGetCurrentPidTgid, true)
	g.sixBitDigits(v.off+symTgidAt, symTgidDigits)
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(addr), asm.DWord))
	g.sixBitDigits(v.off+symAddrAt, symAddrDigits)
	g.firstUserFrame(frame, addr, asAddress)
	g.emit(asm.StoreImm(regScratch, int16(v.off+2), symKindFrame, asm.Byte))
	for i, w := range []struct{ at, digits int }{{0, 11}, {11, 11}, {22, 6}} {
		g.emit(asm.LoadMem(asm.R0, regScratch, int16(frame+4+8*i), asm.DWord))
		if i == 2 {
			g.emit(asm.Mov.Reg32(asm.R0, asm.R0)) // the id's last 4 bytes
		}
		g.sixBitDigits(v.off+symBuildIDAt+w.at, w.digits)
	}
	g.emit(asm.LoadMem(asm.R0, regScratch, int16(frame+24), asm.DWord))
	g.sixBitDigits(v.off+symOffsetAt, symOffsetDigits)
	g.emit(asm.Ja.Label(done))
	g.mark(asAddress)
	g.emit(asm.StoreImm(regScratch, int16(v.off+2), symKindAddress, asm.Byte))
	for i := symBuildIDAt; i < SymTokenLen; i++ {
		g.emit(asm.StoreImm(regScratch, int16(v.off+i), '@', asm.Byte))
	}
	g.mark(done)
	g.scratchRelease(mark)
	return v
}

// firstUserFrame reads the first frame of the user stack as a build-id
// frame into frame in the scratch area, and jumps to other unless it is
// one (a build id and an offset) of the address at scratch cell addr.
func (g *gen) firstUserFrame(frame, addr int, other string) {
	g.emit(
		asm.Mov.Reg(asm.R1, regCtx),
		asm.Mov.Reg(asm.R2, regScratch),
		asm.Add.Imm(asm.R2, int32(frame)),
		asm.Mov.Imm(asm.R3, BuildIDFrameSize),
		asm.Mov.Imm(asm.R4, bpfUserStack|bpfUserBuildID),
		asm.FnGetStack.Call(),
		asm.JNE.Imm(asm.R0, BuildIDFrameSize, other),
		asm.LoadMem(asm.R1, regScratch, int16(frame), asm.Word),
		asm.JNE.Imm(asm.R1, BuildIDFrameValid, other),
	)
	g.stackFrame(bpfUserStack, 0)
	g.emit(
		asm.LoadMem(asm.R1, regScratch, int16(addr), asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R1, other),
	)
}

// sixBitDigits writes n 6-bit digits of R0, the lowest first, each offset
// by '@', at off in the scratch area. Clobbers R1.
func (g *gen) sixBitDigits(off, n int) {
	for i := 0; i < n; i++ {
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, int32(6*i)),
			asm.And.Imm(asm.R1, 63),
			asm.Add.Imm(asm.R1, '@'),
			asm.StoreMem(regScratch, int16(off+i), asm.R1, asm.Byte),
		)
	}
}
