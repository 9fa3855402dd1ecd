package debuginfo

import (
	"debug/dwarf"
	"errors"
	"io"
)

// AfterPrologue is the address of fn's first instruction after its
// prologue: that of the second row of its compilation unit's line table
// within the function (the first after its entry), as gdb and stap find
// it; the entry itself when the table has no such row.
func (fn *Function) AfterPrologue() (uint64, error) {
	lr, err := fn.file.data.LineReader(fn.unit.entry)
	if err != nil || lr == nil {
		return fn.Entry, err
	}
	var row dwarf.LineEntry
	if err := lr.SeekPC(fn.Entry, &row); err != nil {
		if errors.Is(err, dwarf.ErrUnknownPC) {
			return fn.Entry, nil
		}
		return 0, err
	}
	for {
		if err := lr.Next(&row); err != nil {
			if err == io.EOF {
				return fn.Entry, nil
			}
			return 0, err
		}
		if row.EndSequence {
			return fn.Entry, nil
		}
		if row.Address > fn.Entry && row.IsStmt {
			return row.Address, nil
		}
	}
}

// FrameBased tells whether any of fn's parameters is placed in its frame
// by its prologue (unoptimized code): a single location expression that
// starts from the frame base, which a probe at the entry cannot read yet.
func (fn *Function) FrameBased() bool {
	for _, p := range fn.Params {
		if len(p.loc.expr) > 0 && p.loc.expr[0] == opFbreg {
			return true
		}
	}
	return false
}
