package debuginfo

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestEntryValue evaluates DW_OP_entry_value(DW_OP_reg5) DW_OP_plus_uconst
// 0x70, 6.1's dfd in __x64_sys_openat's copy of do_sys_open (the pointer
// to pt_regs passed in RDI, plus dfd's offset there): the register holds
// the value the caller passed only where the code that runs the function
// starts, the host's entry for an inlined copy, not the copy's own.
func TestEntryValue(t *testing.T) {
	expr := []byte{opEntryValue, 1, opReg0 + 5, opPlusUconst, 0x70}
	file := &File{order: binary.LittleEndian}
	const host, copyEntry = 0x1000, 0x1026
	for _, tc := range []struct {
		name string
		fn   *Function
		pc   uint64
		ok   bool
	}{
		{"a function at its entry", &Function{Entry: host, file: file}, host, true},
		{"a function after its entry", &Function{Entry: host, file: file}, host + 4, false},
		{"a copy at its own entry", &Function{Entry: copyEntry, inlinedInto: host, file: file}, copyEntry, false},
		{"a copy at the start of its host", &Function{Entry: host, inlinedInto: host, file: file}, host, true},
	} {
		loc, err := tc.fn.evaluate(expr, tc.pc)
		var notHere *NotHereError
		switch {
		case tc.ok && (err != nil || loc != Location{Kind: Memory, Reg: 5, Offset: 0x70}):
			t.Errorf("%s: %+v, %v; want memory at RDI+0x70", tc.name, loc, err)
		case !tc.ok && !errors.As(err, &notHere):
			t.Errorf("%s: %+v, %v; want not here", tc.name, loc, err)
		}
	}
}
