package sema

import (
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Program is the elaborated script: every probe resolved to a concrete probe point
// with its alias prologues and epilogues merged into its body (each derived probe
// owns a deep copy of the code, so annotations never alias), every identifier bound
// to a *syntax.Var, every call to a *syntax.Func, every expression typed.
//
// A Program is kept across runs (Encode, Decode: internal/snapshot) without
// what only pass 2 and its listings (-p2, -l, -L) read: the fields tagged
// `snapshot:"-"`, which a decoded Program has zero.
type Program struct {
	// Files are the user's script first, then the tapset files that were used.
	Files   []*syntax.File `snapshot:"-"`
	Globals []*syntax.Var  // in declaration order; Var.Index is the position here
	Probes  []*Probe       // in the order stap runs them (see Probe.Sequence)
	Funcs   []*syntax.Func // script and tapset functions that are called, in first-use order
	// Warnings are stap's pass-2 warnings (elided variables, ...), already formatted.
	Warnings []string
	// Plans say how probe points that expand to many probes were served
	// (one program for the entries of many system calls), for -v.
	Plans []string
	// SuppressedWarnings counts the warnings stap would not repeat (without
	// -v); SuppressedText renders stap's trailer about them.
	SuppressedWarnings int
	// Overrides are the -G settings: the value (as written) each global takes
	// when the script starts, to be converted to the global's type.
	Overrides map[*syntax.Var]string
	// Unresolved, in a listing (Options.Listing), renders the errors met:
	// those of the points that derived no probe, then those of the
	// probes' code, as stap renders them.
	Unresolved string

	// Targets records how a kernel probe computes each context expression
	// ($var chains, $$parms, $$name, @cast) of its body: see probes.Access.
	// Keys are the *syntax.TargetVar and *syntax.Cast nodes.
	Targets map[syntax.Expr]*probes.Access
	// PerfCounters are the counters of the perf.*.counter("NAME") points,
	// which @perf reads (perfcounter.go), in order.
	PerfCounters []probes.PerfCounter
	// Deferred are the string locals of kernel probes that user space
	// computes from their assignments' leaves (DeferPrinted, deferred.go):
	// the function of each assignment, the kernel's number for it minus 1.
	Deferred map[*syntax.Var][]*syntax.Func
	// deferral is DeferPrinted's plan, when pass 2 made it (deferred.go).
	deferral *deferral

	builtinsUsed []*syntax.Func // native functions called, for the -p2 listing
	statShapes   map[*syntax.Var]*StatShape
}

// Probe is one derived probe.
type Probe struct {
	// Point is the concrete probe point; User is the point as the user wrote it
	// (for pp() and for diagnostics).
	Point *syntax.ProbePoint
	User  *syntax.ProbePoint
	// Name is the canonical probe point string as pp() returns it, e.g. `begin`,
	// `timer.ms(100)`, `kernel.trace("sched:sched_process_exec")`.
	Name string
	// Script is the point as the script names it, wildcards expanded
	// (stap's script location, which -l lists): the outermost alias the
	// point went through with the suffix it was reached with, unless that
	// suffix has a wildcard (signal.send for signal.*, bar.ms(10) for an
	// alias bar of timer), else the family's name for the point
	// (probes.Point.Script: syscall.openat), else Name. Empty for the
	// probes the elaborator adds (the entries of @entry, displays).
	Script string
	// Family is the probe family that matched, e.g. "begin", "end", "error", "never",
	// "timer", "kernel.trace"; Args are the literal arguments of Point by component
	// name (e.g. "ms" → 100, "randomize" → 10).
	Family string
	Args   map[string]syntax.Expr
	// Sequence orders begin/end/error probes (begin(-1) runs before begin); 0 default.
	Sequence int64
	// Cond is the point's `if (...)` guard until elaboration inlines it as
	// the body's first statement (see conditions.go): nil in a Program.
	Cond   syntax.Expr
	Body   *syntax.Block
	Locals []*syntax.Var     // Var.Index is the slot in the probe's frame
	Decl   *syntax.ProbeDecl // nil for probes the elaborator synthesizes
	// Kernel is true for probes of kernel families (BPF programs); the others
	// run in the interpreter. Runners order begin/end/error probes by Sequence,
	// keeping this order among equal sequence numbers.
	Kernel bool
	// Attach is where a kernel probe attaches and how it reads its
	// arguments; nil for user probes.
	Attach *attach.Point
	// Params are the indexes in Attach.Args of the arguments the body
	// reads, ascending; -p2 lists them as stap's locals (Arg.Local).
	Params []int
	// Joins is the probe whose BPF program this one's code shares, as a
	// section that runs when Skip is false (a test of the system call's
	// number: see joinSyscallEntries); nil for a probe with a program of
	// its own.
	Joins *Probe
	Skip  syntax.Expr
	// TailOf is the probe whose program enters this one's with a tail
	// call (the second half of a merged entry of system calls: see
	// splitMerged); such a program is loaded, not attached. Nil for others.
	TailOf *Probe
	// Display is the global an end probe the elaborator synthesizes
	// displays (stap's display of a global written and never read; see
	// displayProbe): runners output the global's contents, sorted as stap's
	// display code sorts them, instead of running the body, which is empty.
	// Nil for every other probe.
	Display *syntax.Var
	// ContextTask, when set, is the task_struct address the context
	// functions of this kernel probe read instead of the running thread's
	// (the argument of the tapset's __context_task call: contexttask.go).
	ContextTask syntax.Expr
	// Value is the $value local of a procfs probe, Locals[0] (procfs.go);
	// nil for other probes.
	Value *syntax.Var

	// context resolves the context expressions of a kernel probe;
	// origin are the alias definitions the point went through, innermost
	// first.
	context  *probes.Context     `snapshot:"-"`
	origin   []*syntax.AliasDecl `snapshot:"-"`
	userText string              // the probe's points as the user wrote them
	// entries are the calls whose entries the probe stands for together
	// (probes.Point.Entries), until mergeSyscallEntries makes them cases.
	entries []probes.GenericEntry
	// prunedLocals are the names of the tapset's assignments left out of
	// the body (prune.go), which the never-assigned warning suggests as
	// the locals they would have been.
	prunedLocals []string
	// joinedCall is the native number of the call a probe that joins a
	// merged entry serves (joinSyscallEntries), for splitMerged.
	joinedCall int
}

// PN is pn()'s value: the point as the script names it, wildcards
// expanded (Script), or for a probe the elaborator added the point's name.
func (p *Probe) PN() string {
	if p.Script != "" {
		return p.Script
	}
	return p.Name
}

// SuppressedText returns stap's trailer about suppressed warnings, printed at
// the end of the run; empty when none were suppressed.
func (p *Program) SuppressedText() string { return suppressedText(0, p.SuppressedWarnings) }
