package usdt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
)

// arm64Registers are the general-purpose registers of arm64 by the names
// its assembler gives them: x0-x30 and sp (8 bytes), w0-w30 (the low 4
// bytes of the x register), each at its struct pt_regs slot (package
// arch).
var arm64Registers = func() map[string]*Reg {
	m := map[string]*Reg{"sp": {Name: "sp", Slot: arch.ARM64.SP, Size: 8}}
	for i := range 31 {
		slot := arch.ARM64.Registers["x"+strconv.Itoa(i)].Offset
		for prefix, size := range map[string]int{"x": 8, "w": 4} {
			name := prefix + strconv.Itoa(i)
			m[name] = &Reg{Name: name, Slot: slot, Size: size}
		}
	}
	return m
}()

// parseARM64Operand parses an operand as GCC writes arm64 markers'
// operands: a register ("x1", "w2"), an immediate ("5", "-7"; "#5"
// too), or a memory operand, a 64-bit base register and an optional
// offset ("[x0]", "[sp, 36]", "[x29, #-8]").
func parseARM64Operand(s string) (Operand, string) {
	if s == "" {
		return Operand{}, "an empty operand"
	}
	if r := arm64Registers[s]; r != nil {
		return Operand{Kind: Register, Reg: r}, ""
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		return parseARM64Memory(inner)
	}
	if n, ok := parseNumber(strings.TrimPrefix(s, "#")); ok {
		return Operand{Kind: Immediate, Disp: n}, ""
	}
	return Operand{}, fmt.Sprintf("%q is not a register, a number or [BASE, OFFSET]", s)
}

// parseARM64Memory parses the part of a memory operand after its '['.
func parseARM64Memory(s string) (Operand, string) {
	op := Operand{Kind: Memory}
	inner, closed := strings.CutSuffix(s, "]")
	parts := strings.Split(inner, ",")
	if !closed || len(parts) > 2 {
		return op, "an address that is not [BASE] or [BASE, OFFSET]"
	}
	base := strings.TrimSpace(parts[0])
	if op.Reg = arm64Registers[base]; op.Reg == nil || op.Reg.Size != 8 {
		return op, fmt.Sprintf("%q is not a 64-bit register", base)
	}
	if len(parts) == 2 {
		offset := strings.TrimPrefix(strings.TrimSpace(parts[1]), "#")
		var ok bool
		if strings.HasPrefix(offset, ":lo12:") {
			// GCC's -O1 and above address a global as the page adrp put
			// in the base plus its low 12 bits, which the assembler
			// resolves in instructions but not in the note's text.
			return op, fmt.Sprintf("offset %s is the low 12 bits of %s's address, which the note leaves unresolved", offset, offset[len(":lo12:"):])
		}
		if op.Disp, ok = parseNumber(offset); !ok {
			return op, fmt.Sprintf("offset %q is not a number", offset)
		}
	}
	return op, ""
}
