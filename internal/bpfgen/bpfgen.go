// Package bpfgen compiles the kernel probes of an elaborated script into BPF
// programs: cilium/ebpf asm instructions with labels and named map
// references, and the layouts of everything they share with user space
// (maps.go, globals.go, stats.go, record.go), with the Go codec of those
// layouts (codec.go). It emits and describes; creating maps and loading
// programs is package kernelside's work, attaching them package bpfrt's.
//
// # Shape of a program
//
// A Module holds what every program of one script shares: the maps of the
// globals, the ring buffer that carries output and errors to user space, the
// table of output formats and the table of error sites. Module.Compile turns
// one probe body into a Program, reading the probe's arguments where its
// attach point (package attach) says they lie:
//
//	prologue: R6 = ctx; target filter; R9 = this program's per-CPU scratch
//	          area; long locals zeroed; the loop action counter zeroed
//	body:     statements, each expression leaving its long value in R0
//	exit:     R0 = 0; exit
//	errors:   R7 = error id; a record {kind error, id, arg} is sent; exit
//
// Long temporaries live on the stack (8-byte slots, a stack discipline);
// long locals in stack slots; strings never on the stack but in fixed slots
// of the scratch area, so a string value is a compile-time slot (offset and
// width) and string code is straight-line helper calls on R9-relative
// addresses. Every instruction carries the script position it was compiled
// from (Program.Pos), so a verifier rejection names a script line.
//
// # Semantics
//
// Arithmetic wraps as stap's does on 64-bit longs; shifts take their count
// modulo 64; / and % are the ISA v4 signed sdiv/smod (on kernels before
// 6.6, which lack them, the magnitudes divided unsigned and the sign set:
// isa.go), after a test for 0 that raises stap's "division by 0" error
// record and ends the probe. Loops
// charge one action per iteration to a counter bounded by MAXACTION, which
// is stap's limit and what lets the verifier prove termination; reaching it
// raises "MAXACTION exceeded". Globals: see globals.go; statistics:
// stats.go; output records: record.go; context functions: context.go.
package bpfgen

import (
	"fmt"
	"slices"
	"sync"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf/asm"
)

// Config holds the limits and choices a Module compiles with.
type Config struct {
	// Limits are the run-time limits (-D); MAXACTION, MAXMAPENTRIES,
	// MAXSTRINGLEN and MAXSTACKS left 0 take their defaults.
	Limits tapset.Limits
	// RingSize is the size of the ring buffer in bytes, a power of two
	// (0: DefaultRingSize, or QuietRingSize when no kernel probe prints).
	RingSize int
	// Target adds a process filter: a program runs only for processes
	// whose tgid is a key of the map TargetMap. -x and -c do not set it:
	// as in stap they only give target(), and a script that wants its
	// target alone tests pid() == target(), in the kernel; the tests use
	// it to keep to their own workload on a busy machine.
	Target bool
	// TargetPID is the value of target(): the pid of -x or -c, 0 if none.
	TargetPID int64
	// Timing makes every program measure its runs (-t; see timing.go).
	Timing bool
	// RealtimeOffset is added to the monotonic clock (bpf_ktime_get_ns) for
	// gettimeofday_*: the wall-clock time minus the monotonic time, in ns.
	RealtimeOffset int64
	// KernelSymbols is the shape of SymbolMap (symbols.go), asked for
	// when a program uses it.
	KernelSymbols func() RangeTable
	// KernelModules is the shape of ModuleMap (symbols.go), asked for
	// when a program uses it.
	KernelModules func() RangeTable
	// KernelCode is the shape of CodeMap (stacks.go's stackAt), asked for
	// when a program uses it.
	KernelCode func() RangeTable
	// FindsTasks tells whether a program at an attach point may find a
	// task by its pid (kernelside.CanFindTasks), as task_backtrace() of
	// another task than the running thread does; nil: every one may.
	FindsTasks func(*attach.Point) error
	// Kernel is the kernel the programs are for: its features, its
	// architecture and its BTF (target.go). Required.
	Kernel *target.Kernel
}

func (c *Config) defaults(prog *sema.Program) {
	l, d := &c.Limits, tapset.DefaultLimits()
	if l.MaxAction <= 0 {
		l.MaxAction = d.MaxAction
	}
	if l.MaxMapEntries <= 0 {
		l.MaxMapEntries = d.MaxMapEntries
	}
	if l.MaxStringLen <= 0 {
		l.MaxStringLen = d.MaxStringLen
	}
	if l.MaxStacks <= 0 {
		l.MaxStacks = d.MaxStacks
	}
	if c.RingSize <= 0 {
		c.RingSize = defaultRingSize(prog)
	}
}

// Module compiles the kernel probes of one program.
type Module struct {
	cfg     Config
	maxStr  int // MAXSTRINGLEN: the width of a string slot, NUL included
	prog    *sema.Program
	globals map[*syntax.Var]*Global
	order   []*Global // in the program's global order
	// Outputs are the print records, by id; Errors the error sites, by id.
	Outputs  []*Output
	Errors   []*ErrorSite
	zeroSize int
	syscalls bool // a program reads SyscallMap
	// syscallTextMaps: the ARRAYs of text by system call number the
	// programs read (SyscallFuncMap, ...)
	syscallTextMaps map[string]bool
	// syscallNative: a program reads SyscallNativeMap
	syscallNative bool
	// syscallSets are the sets of __syscall_in, in SyscallSetMap's order
	syscallSets []string
	// callTables are the tables of the dispatches on the call (calltable.go)
	callTables []Map
	stacks     bool // a program takes stacks into StackMap
	// userStacks: a program takes user stacks into BuildIDStackMap too
	userStacks bool
	// taskStacks: a program takes context tasks' kernel stacks into
	// TaskStackMap
	taskStacks bool
	// symTokens: a program makes symbol tokens (usymbols.go)
	symTokens bool
	symbols   bool       // a program searches SymbolMap
	symtab    RangeTable // its shape
	modules   bool       // a program searches ModuleMap
	modtab    RangeTable // its shape
	code      bool       // a program searches CodeMap
	// perfCounters: a program reads the counters' maps (PerfCounterMap)
	perfCounters bool
	codetab      RangeTable // its shape
	guards       bool       // a program takes NestMap's guard
	skips        bool       // a program counts in SkipMap
	unread       bool       // a program counts in UnreadMap
	together     bool       // a program keeps its runs' records together (RunMap)
	records      recordCounter
	gens         bool              // a global is kept in generations (GenMap)
	programs     int               // compiled so far
	uses         func() *wholeUses // what kernel code uses whole, walked on the first call (shared by shards)
	// regexData holds the tables of the patterns of =~ (regex.go), each at
	// its regexBase.
	regexData  []byte
	regexBase  map[string]int
	regexOrder []regexEntry // the patterns in the order they were added
	// facts are what the code reads from the target kernel's BTF.
	facts *kernelFacts
}

// New returns a module for prog; the layouts of globals are decided as
// programs use them.
func New(prog *sema.Program, cfg Config) *Module {
	cfg.defaults(prog)
	return &Module{cfg: cfg, maxStr: int(cfg.Limits.MaxStringLen), prog: prog, globals: map[*syntax.Var]*Global{},
		uses: sync.OnceValue(func() *wholeUses { return walkWholeUses(prog) }), facts: newKernelFacts(cfg.Kernel)}
}

// Program is one compiled probe.
type Program struct {
	Probe        *sema.Probe
	Instructions asm.Instructions
	// Pos is the script position each instruction was compiled from.
	Pos []syntax.Pos
	// Maps are the maps of this program alone: its per-CPU scratch area
	// (ScratchMap), when it needs one.
	Maps []Map
	// Sections are the probes whose code the program runs, in order, each
	// with its element of TimingMap (-t); Probe is among them (the one the
	// others join: programProbe).
	Sections []Section
	// Attach is where the program attaches: Probe's attach point, or, for
	// the program of a set, the point that stands for all of its points.
	Attach *attach.Point
	// Sleepable: the program is loaded sleepable (BPF_F_SLEEPABLE), its
	// user string reads fault pages in (sleepable.go); NoFaultIn says why
	// a uprobe program's user string reads cannot ("" when they can, or
	// it reads none).
	Sleepable bool
	NoFaultIn string
}

// Section is one probe's part of a program.
type Section struct {
	Probe       *sema.Probe
	TimingIndex int
}

// Error is a construct the code generator cannot compile, at its position.
type Error struct {
	Pos syntax.Pos
	Msg string
	// Err is the error Msg reports, if any: a *target.MissingError when
	// the target kernel lacks what the construct needs.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Msg) }

func (e *Error) Unwrap() error { return e.Err }

// Compile compiles p, a kernel probe, for its attach point.
func (m *Module) Compile(p *sema.Probe) (*Program, error) {
	return m.CompileGroup([]*sema.Probe{p})
}

// CompileGroup compiles probes that share a program into it: the points
// of one attach.Set, whose code is compiled once (sets.go), or probes
// that share an attach point (one, and those that sema.Probe.Joins to
// it), each probe's code a section of the program in script order, which
// runs when the probe's Skip test is false, with its own locals, its own
// -t statistic, and its `next` ending the section.
func (m *Module) CompileGroup(ps []*sema.Probe) (*Program, error) {
	if a := ps[0].Attach; a != nil && a.Set != nil {
		return m.compileSet(ps)
	}
	lead := programProbe(ps)
	g := newGen(m, lead)
	g.grouped, g.together = len(ps) > 1, m.mayRecordTwice(ps)
	if m.cfg.Timing {
		g.timeSlot = g.pushStack(16) // the start time, then the map key
	}
	g.reserveCompatSlot(lead.Attach)
	g.reserveVerdictSlot(lead.Attach)
	var sections []Section
	for _, p := range ps {
		sections = append(sections, Section{Probe: p, TimingIndex: m.programs})
		m.programs++
		if err := g.section(p, sections[len(sections)-1].TimingIndex); err != nil {
			return nil, err
		}
	}
	g.probe = lead // the prologue's position
	prog, err := g.program()
	if err != nil {
		return nil, err
	}
	prog.Probe, prog.Sections, prog.Attach = lead, sections, lead.Attach
	return prog, nil
}

// programProbe is the probe a group's program stands for: the one the
// others join (sema.Probe.Joins), which a probe the script declares
// before it may precede in the group; the first when none joins another.
func programProbe(ps []*sema.Probe) *sema.Probe {
	if i := slices.IndexFunc(ps, func(p *sema.Probe) bool { return p.Joins == nil }); i >= 0 {
		return ps[i]
	}
	return ps[0]
}

// RingSize is the size of the module's ring buffer in bytes.
func (m *Module) RingSize() int { return m.cfg.RingSize }

// MaxStringLen is MAXSTRINGLEN, NUL included, as the programs use it.
func (m *Module) MaxStringLen() int { return m.maxStr }

// MaxStacks is the number of stacks each stack map keeps (MAXSTACKS).
func (m *Module) MaxStacks() int64 { return m.cfg.Limits.MaxStacks }

// PosOf maps an instruction index (the one a verifier rejection names) to
// its script position; the zero Pos when unknown.
func (p *Program) PosOf(insn int) syntax.Pos {
	if insn < 0 || insn >= len(p.Pos) {
		return syntax.Pos{}
	}
	return p.Pos[insn]
}
