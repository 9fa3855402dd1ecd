package bpfgen

import (
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Sets of points that share one program. A wildcard over the functions of
// a file (process("P").function("*")) derives a probe per function, each
// with a copy of the same code; its points form an attach.Set. The set is
// compiled once, from its first probe, and attached to every point with
// one uprobe_multi link, whose cookie for each point is the point's index
// in the set. What differs between the points (pp(), probefunc(),
// $$name) is read from the program's table of points, PointsMap, at the
// cookie's element; under -t each point has its own statistic, at the
// timing index of the set's first plus the cookie.
//
//	element i:  pp() of point i | its function's name | ppfunc() of pp(), each NUL-padded

// PointsMap is the name under which a set's program references its table
// of points.
const PointsMap = "points"

// pointColumn is a column of the table of points.
type pointColumn int

const (
	columnPP     pointColumn = iota // pp(): the concrete probe point
	columnName                      // probefunc() and $$name: the function
	columnPPFunc                    // ppfunc(): the function pp() names
	columns
)

// pointTable is the table of points of a set's program.
type pointTable struct {
	texts  [][columns]string // by cookie: pp(), the name, ppfunc()
	widths [columns]int      // of each column, a multiple of 8 with room for a NUL
}

func newPointTable(ps []*sema.Probe, maxStr int) *pointTable {
	t := &pointTable{}
	for _, p := range ps {
		row := [columns]string{p.Name, p.Attach.Event, tapset.PPFunc(p.Name)}
		for c, s := range row {
			if len(s) >= maxStr {
				row[c] = s[:maxStr-1]
			}
			t.widths[c] = max(t.widths[c], (len(row[c])+8)&^7)
		}
		t.texts = append(t.texts, row)
	}
	return t
}

// offset is where column c lies in an element.
func (t *pointTable) offset(c pointColumn) int {
	off := 0
	for _, w := range t.widths[:c] {
		off += w
	}
	return off
}

// spec describes the table, filled, read-only for programs (the kernel
// then knows its contents while verifying).
func (t *pointTable) spec() *ebpf.MapSpec {
	size := t.offset(columns)
	spec := &ebpf.MapSpec{Name: "points", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size),
		MaxEntries: uint32(len(t.texts)), Flags: unix.BPF_F_RDONLY_PROG}
	for i, row := range t.texts {
		v := make([]byte, size)
		for c, text := range row {
			copy(v[t.offset(pointColumn(c)):], text)
		}
		spec.Contents = append(spec.Contents, ebpf.MapKV{Key: uint32(i), Value: v})
	}
	return spec
}

// compileSet compiles the probes of one attach.Set into one program: the
// first's code, attached at every probe's point.
func (m *Module) compileSet(ps []*sema.Probe) (*Program, error) {
	g := newGen(m, ps[0])
	g.points, g.together = newPointTable(ps, m.maxStr), m.mayRecordTwice(ps[:1])
	if m.cfg.Timing {
		g.timeSlot = g.pushStack(16)
	}
	base := m.programs
	m.programs += len(ps)
	if err := g.section(ps[0], base); err != nil {
		return nil, err
	}
	prog, err := g.program()
	if err != nil {
		return nil, err
	}
	prog.Probe, prog.Attach = ps[0], setPoint(ps)
	prog.Maps = append(prog.Maps, Map{PointsMap, g.points.spec()})
	for i, p := range ps {
		prog.Sections = append(prog.Sections, Section{Probe: p, TimingIndex: base + i})
	}
	return prog, nil
}

// setPoint is the point a set's program attaches to: the first probe's,
// with the places of all, in cookie order: their file offsets (uprobes)
// or their functions (kprobes).
func setPoint(ps []*sema.Probe) *attach.Point {
	a := *ps[0].Attach
	a.Offsets, a.Symbols = nil, nil
	for _, p := range ps {
		if a.Path != "" {
			a.Offsets = append(a.Offsets, p.Attach.Offset)
		} else {
			a.Symbols = append(a.Symbols, p.Attach.Event)
		}
	}
	return &a
}

// pointText compiles a string that names the running point: the literal
// lit, or, in a set's program, column c of the table at the cookie.
func (g *gen) pointText(c pointColumn, lit string) value {
	g.ownProbe() // the table is the probe's: code that reads it is inlined
	if g.points == nil {
		return g.strLit(lit)
	}
	off, width := g.points.offset(c), g.points.widths[c]
	v := g.strSlot(width)
	slot := g.pushSlot()
	g.cookieInto(slot, 0)
	g.emit(emitLookup(PointsMap, slot, labelDone)...)
	for i := 0; i < width; i += 8 {
		g.emit(asm.LoadMem(asm.R1, asm.R0, int16(off+i), asm.DWord),
			asm.StoreMem(regScratch, int16(v.off+i), asm.R1, asm.DWord))
	}
	g.popStack(8)
	return v
}

// cookieInto stores the point's cookie plus base at stack slot, a u32
// key.
func (g *gen) cookieInto(slot int16, base int32) {
	g.emit(asm.Mov.Reg(asm.R1, regCtx), asm.FnGetAttachCookie.Call(),
		asm.Add.Imm(asm.R0, base), asm.StoreMem(asm.R10, slot, asm.R0, asm.Word))
}
