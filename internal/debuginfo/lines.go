package debuginfo

import (
	"cmp"
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
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

// Line is the first address of a source line's code.
type Line struct {
	File string
	Line int
	Addr uint64
}

// Lines are the addresses where the lines first..last of the source
// files file matches (a FilePattern) start, each a statement's start in
// the line table (is_stmt), in address order: a line may start at
// several (in each function and inlined copy that has it, each part of
// a loop), of which a probe takes the lowest in each function or copy.
func (f *File) Lines(file string, first, last int) ([]Line, error) {
	pattern := NewFilePattern(file)
	var out []Line
	r := f.data.Reader()
	for {
		cu, err := f.nextUnit(r)
		if err != nil || cu == nil {
			slices.SortFunc(out, func(a, b Line) int { return cmp.Compare(a.Addr, b.Addr) })
			return out, err
		}
		if cu.Children {
			r.SkipChildren()
		}
		lines, err := f.unitLines(cu, pattern, first, last)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
}

// LinesNear are the Lines of the one unit whose code holds pc (a
// function's entry): a function's lines, found without reading every
// unit's line table (a kernel has thousands).
func (f *File) LinesNear(pc uint64, file string, first, last int) ([]Line, error) {
	r := f.data.Reader()
	cu, err := r.SeekPC(pc)
	switch {
	case errors.Is(err, dwarf.ErrUnknownPC):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	lines, err := f.unitLines(cu, NewFilePattern(file), first, last)
	slices.SortFunc(lines, func(a, b Line) int { return cmp.Compare(a.Addr, b.Addr) })
	return lines, err
}

// unitLines are the Lines of the unit cu, none when its line table names
// no file pattern matches.
func (f *File) unitLines(cu *dwarf.Entry, pattern FilePattern, first, last int) ([]Line, error) {
	if cu.Tag != dwarf.TagCompileUnit {
		return nil, nil
	}
	lr, err := f.data.LineReader(cu)
	if err != nil || lr == nil || !pattern.matchesAny(lr.Files()) {
		return nil, nil
	}
	lines, err := linesIn(lr, pattern, first, last)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.DebugPath, err)
	}
	return lines, nil
}

// linesIn reads one unit's line table for Lines: each statement row of
// the lines asked. A line may start at several addresses: in each
// function, each copy the compiler inlined, each part of a loop; the
// callers keep the lowest of each function or copy.
func linesIn(lr *dwarf.LineReader, pattern FilePattern, first, last int) ([]Line, error) {
	var out []Line
	matches := map[*dwarf.LineFile]bool{}
	var row dwarf.LineEntry
	for {
		if err := lr.Next(&row); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, err
		}
		if row.EndSequence || !row.IsStmt || row.File == nil || row.Line < first || row.Line > last {
			continue
		}
		m, ok := matches[row.File]
		if !ok {
			m = pattern.Matches(row.File.Name)
			matches[row.File] = m
		}
		if m {
			out = append(out, Line{File: row.File.Name, Line: row.Line, Addr: row.Address})
		}
	}
}

// LineAt is the source file and line of the code at pc, as the line table
// of the unit whose ranges hold pc says.
func (f *File) LineAt(pc uint64) (string, int, error) {
	r := f.data.Reader()
	cu, err := r.SeekPC(pc)
	if err != nil {
		return "", 0, err
	}
	lr, err := f.data.LineReader(cu)
	if err != nil || lr == nil {
		return "", 0, cmp.Or(err, dwarf.ErrUnknownPC)
	}
	var row dwarf.LineEntry
	if err := lr.SeekPC(pc, &row); err != nil {
		return "", 0, err
	}
	if row.File == nil {
		return "", 0, dwarf.ErrUnknownPC
	}
	return row.File.Name, row.Line, nil
}
