// Package kernelside runs the kernel probes of a script: it compiles each
// one to a BPF program (package bpfgen), creates the maps bpfgen describes
// and loads the programs (objects.go), attaches them (package bpfrt),
// serves the interpreter's globals from those maps (storage.go) and carries
// the records the programs send through the ring buffer to the interpreter
// (ring.go).
//
// The driver calls, in this order:
//
//	Compile   pass 3: one program per kernel probe, for the attach point its
//	          probe family chose
//	Load      pass 4: maps, then every program through the verifier
//	Storage   for interp.Config.Storage: globals the programs use live in
//	          their maps, the others stay in the interpreter
//	Attach    after the begin probes (stap runs no other probe before
//	          they are done) and before a -c command is released
//	Start     reads the ring in a goroutine, handing records to a Sink
//	Stop      detaches every program, drains the ring, reports drops
//	Close     frees everything (safe on every path, and twice)
package kernelside

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/parallel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Config is what the kernel side is built with.
type Config struct {
	// Kernel is the kernel the programs are for: one told to lack
	// features, or nil for target.Running().
	Kernel *target.Kernel
	// Limits are the run-time limits (-D).
	Limits tapset.Limits
	// RingSize is the ring buffer's size in bytes, rounded up to a power
	// of two (0: bpfgen's default).
	RingSize int
	// TargetPID is target(): the pid of -x or -c, 0 if none.
	TargetPID int
	// Target filters every program to the processes of the target set,
	// which AddTarget fills: a program runs only for them (bpfgen.Config's
	// Target: the tests' filter, not -x/-c's).
	Target bool
	// Timing makes every program measure its runs (-t).
	Timing bool
	// LogLevel is the verifier's log level: 1 keeps the log of programs
	// it accepts (-vvv).
	LogLevel uint32
	// NamePrefix starts the kernel name of every map and program, so that
	// bpftool tells runs apart; "" means "b" and bpftap's pid, then "_"
	// (b4242_ring, b4242_syscalls, b4242_sys_enter: 15 bytes at most, the
	// rest cut off).
	NamePrefix string
	// Progress, when set, is told before a step of Load that may take a
	// while: creating a map of many megabytes.
	Progress func(what string)
	// Loads tells that Load follows (pass 4): Compile then starts asking
	// the kernel what loading the first program with functions asks
	// first (bpfrt.PrepareFuncTypes), while it compiles the others.
	Loads bool
	// Warn, when set, is told stap's warning about each point the kernel
	// refused to probe while the others of its program were attached.
	Warn func(msg string)
}

func (c Config) namePrefix() string {
	if c.NamePrefix != "" {
		return c.NamePrefix
	}
	return fmt.Sprintf("b%d_", os.Getpid())
}

// Session is the kernel side of one run.
type Session struct {
	mod    *bpfgen.Module
	progs  []*bpfgen.Program
	objs   *objects // from Load on
	loaded []*bpfrt.Program
	cfg    Config
	stacks *stackTexts // from Load on

	reader     *bpfrt.RingReader
	readerDone chan error
	// skipped counts the runs the kernel skipped of programs detached so far.
	skipped int64
	// handlers counts the user-side handlers started (HandlerStart).
	handlers uint64
	// gens flips the globals kept in generations (generations.go), from
	// Load on; nil without such globals.
	gens *generations
}

// Error is a problem of a kernel probe at a script position: a construct
// the code generator cannot compile, or a verifier rejection (Log then
// holds the verifier's log).
type Error struct {
	Pos syntax.Pos
	Msg string
	Log string
	// Err is what Msg reports, if any (a *target.MissingError).
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

// Error renders stap's diagnostic: the message at FILE:LINE:COL, then the
// source line with a caret.
func (e *Error) Error() string {
	if !e.Pos.IsValid() {
		return "ERROR: " + e.Msg
	}
	return fmt.Sprintf("ERROR: %s at %s\n%s", e.Msg, e.Pos, e.Pos.SourceLine("        source: "))
}

// KernelProbes returns the probes of prog that run in the kernel.
func KernelProbes(prog *sema.Program) []*sema.Probe {
	var ps []*sema.Probe
	for _, p := range prog.Probes {
		if p.Kernel {
			ps = append(ps, p)
		}
	}
	return ps
}

// Compile compiles every kernel probe of prog.
func Compile(prog *sema.Program, cfg Config) (*Session, error) {
	if cfg.Kernel == nil {
		k, err := target.Running()
		if err != nil {
			return nil, err
		}
		cfg.Kernel = k
	}
	mod := bpfgen.New(prog, bpfgen.Config{
		Limits:    cfg.Limits,
		TargetPID: int64(cfg.TargetPID), Target: cfg.Target, RingSize: powerOfTwo(cfg.RingSize), Timing: cfg.Timing,
		RealtimeOffset: realtimeOffset(), KernelSymbols: symbolTable, KernelModules: moduleTable, KernelCode: codeTable,
		FindsTasks: func(a *attach.Point) error { return CanFindTasks(cfg.Kernel, a) }, Kernel: cfg.Kernel,
	})
	s := &Session{mod: mod, cfg: cfg}
	progs, err := mod.CompileGroups(programGroups(KernelProbes(prog)), func(bp *bpfgen.Program) {
		if cfg.Loads && bpfrt.HasFuncTypes(bp.Instructions) {
			bpfrt.PrepareFuncTypes()
		}
	})
	var ge *bpfgen.Error
	if errors.As(err, &ge) {
		return nil, &Error{Pos: ge.Pos, Msg: ge.Msg, Err: ge.Err}
	}
	if err != nil {
		return nil, err
	}
	s.progs = append(progs, mod.ThreadExits()...)
	return s, nil
}

// Notes say, for -v, what the compiled programs cannot do here: the uprobe
// programs whose user strings cannot fault their pages in, and why.
func (s *Session) Notes() []string {
	var notes []string
	for _, bp := range s.progs {
		if bp.NoFaultIn != "" {
			notes = append(notes, fmt.Sprintf("%s: user strings in pages not yet touched do not read: %s", bp.Probe.Name, bp.NoFaultIn))
		}
	}
	return notes
}

// programGroups splits the kernel probes into the probes of each program:
// a probe that joins another (sema.Probe.Joins) shares its program, and
// so do the points of one attach.Set, in script order; every other probe
// has one of its own.
func programGroups(ps []*sema.Probe) [][]*sema.Probe {
	var groups [][]*sema.Probe
	at := map[any]int{}
	for _, p := range ps {
		var lead any = p
		switch {
		case p.Joins != nil:
			lead = p.Joins
		case p.Attach != nil && p.Attach.Set != nil:
			lead = p.Attach.Set
		}
		i, ok := at[lead]
		if !ok {
			i = len(groups)
			at[lead] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// powerOfTwo rounds n up to a power of two (0 stays 0).
func powerOfTwo(n int) int {
	p := 0
	if n > 0 {
		p = 1
	}
	for p > 0 && p < n {
		p <<= 1
	}
	return p
}

// realtimeOffset is the wall-clock time minus the monotonic clock of
// bpf_ktime_get_ns, for gettimeofday_* in kernel probes.
func realtimeOffset() int64 {
	var mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	return time.Now().UnixNano() - mono.Nano()
}

// UserStacks tells whether a loaded program takes user stacks or makes
// symbol tokens, which are symbolized through the build ids of the files
// of the processes (package usym).
func (s *Session) UserStacks() bool {
	return s.objs != nil && s.objs.shared[bpfgen.BuildIDStackMap] != nil || s.mod.SymTokens()
}

// RingSize is the size of the ring buffer in bytes.
func (s *Session) RingSize() int { return s.mod.RingSize() }

// Programs is the number of compiled programs.
func (s *Session) Programs() int { return len(s.progs) }

// Compiled are the compiled programs, in load order.
func (s *Session) Compiled() []*bpfgen.Program { return s.progs }

// Attached is the number of programs Attach attaches.
func (s *Session) Attached() int {
	n := 0
	for _, p := range s.progs {
		if p.Probe.TailOf == nil {
			n++
		}
	}
	return n
}

// PrivilegeError is the one line that says kernel probes cannot run
// without the privileges BPF needs (err: bpfrt.CheckPrivileges's).
func PrivilegeError(err error) error {
	return output.Failf("kernel probes need BPF, and %w", err)
}

// Load creates the maps and loads every program. A verifier rejection is
// an *Error at the script line of the instruction it stopped at.
func (s *Session) Load() error {
	if len(s.progs) == 0 {
		return nil
	}
	if err := bpfrt.CheckPrivileges(); err != nil {
		return PrivilegeError(err)
	}
	if err := target.RaiseMemlock(); err != nil {
		return output.Failf("%w", err)
	}
	if err := s.cfg.Kernel.Check(target.RingBuffer); err != nil {
		return output.Failf("%w", target.For(err, "the output of kernel probes"))
	}
	bpfrt.ReserveDescriptors(len(s.mod.Maps()) + 4*len(s.progs)) // a program, its perf event and link, one spare
	for _, p := range s.progs {
		if err := bpfrt.CheckAttachPrivileges(p.Probe.Attach); err != nil {
			return output.Failf("%w", err)
		}
	}
	objs, err := createMaps(s.mod.Maps(), s.cfg.namePrefix(), s.cfg.Progress, s.cfg.Kernel.Has(target.BatchMapUpdate))
	if err != nil {
		return output.Failf("%w", err)
	}
	s.objs = objs
	if err := s.fillRangeMaps(); err != nil {
		return err
	}
	if err := s.fillPerfCounters(); err != nil {
		return err
	}
	s.stacks = newStackTexts(objs.shared, s.mod.SymTokens(), s.mod.MaxStringLen())
	if m := objs.shared[bpfgen.GenMap]; m != nil {
		if s.gens, err = newGenerations(m, objs, &s.handlers); err != nil {
			return output.Failf("%w", err)
		}
	}
	refs := make([]map[string]*ebpf.Map, len(s.progs))
	for i, p := range s.progs {
		if refs[i], err = objs.bind(p); err != nil {
			return output.Failf("probe %s: %w", p.Probe.Name, err)
		}
	}
	loaded, errs := s.loadAll(refs)
	for i, err := range errs {
		if err == nil {
			continue
		}
		for _, lp := range loaded[i:] {
			if lp != nil {
				lp.Close()
			}
		}
		var ke *Error
		if errors.As(err, &ke) {
			return ke
		}
		p := s.progs[i].Probe
		return &Error{Pos: p.Point.Position(), Msg: fmt.Sprintf("cannot load probe %s: %v", p.Name, err)}
	}
	return s.linkTails(refs)
}

// linkTails puts each program that another enters with a tail call
// (sema.Probe.TailOf) into that program's TailMap.
func (s *Session) linkTails(refs []map[string]*ebpf.Map) error {
	for i, p := range s.progs {
		if p.Probe.TailOf == nil {
			continue
		}
		lead := slices.IndexFunc(s.progs, func(q *bpfgen.Program) bool { return q.Probe == p.Probe.TailOf })
		if lead < 0 || refs[lead][bpfgen.TailMap] == nil {
			return output.Failf("probe %s: no program enters it", p.Probe.Name)
		}
		if err := refs[lead][bpfgen.TailMap].Update(uint32(0), s.loaded[i].Program, ebpf.UpdateAny); err != nil {
			return output.Failf("probe %s: its tail call: %w", p.Probe.Name, err)
		}
	}
	return nil
}

// loadAll loads the programs, as many at a time as there are CPUs: the
// kernel verifies privileged programs in parallel, and the verifier's time
// is most of a large script's start-up; the longest programs start first
// (the verifier's time grows with a program's length). The programs before
// the first that failed are kept in s.loaded, in order (Close closes
// them); the others are returned for the caller to close.
func (s *Session) loadAll(refs []map[string]*ebpf.Map) ([]*bpfrt.Program, []error) {
	loaded, errs := make([]*bpfrt.Program, len(s.progs)), make([]error, len(s.progs))
	parallel.EachLargestFirst(len(s.progs), func(i int) int { return len(s.progs[i].Instructions) }, func(i int) {
		loaded[i], errs[i] = s.objs.load(s.progs[i], refs[i], s.cfg.LogLevel)
	})
	for i, lp := range loaded {
		if errs[i] != nil {
			break
		}
		s.loaded = append(s.loaded, lp)
	}
	return loaded, errs
}

// FprintVerifierLogs writes the verifier's log of each loaded program
// under its probe's name (with Config.LogLevel > 0).
func (s *Session) FprintVerifierLogs(w io.Writer) {
	for i, lp := range s.loaded {
		fmt.Fprintf(w, "verifier log of %s:\n%s", s.progs[i].Probe.Name, lp.VerifierLog)
	}
}

// Attach attaches every loaded program but those entered by a tail call.
func (s *Session) Attach() error {
	for i, lp := range s.loaded {
		if s.progs[i].Probe.TailOf != nil {
			continue
		}
		err := lp.Attach()
		var refused *bpfrt.RefusedError
		if errors.As(err, &refused) {
			s.warnRefused(s.progs[i], refused)
			continue
		}
		p := s.progs[i].Probe
		if a := s.progs[i].Attach; err != nil && s.oneOfMany(p) && (a.Kind == attach.Kprobe || a.Kind == attach.Kretprobe) {
			s.warnUnregistered(p, err)
			continue
		}
		if err != nil {
			return &Error{Pos: p.Point.Position(), Msg: fmt.Sprintf("cannot attach probe %s: %v", p.Name, err)}
		}
	}
	return nil
}

// oneOfMany tells whether p is one of the points a wildcard (or a source
// file's functions) expanded to, not counting the programs the elaborator
// adds (@entry's, a tail call's): as stap's runtime, a kprobe the kernel
// refuses there is skipped with a warning (a function that tracefs lists
// but the kprobes' blacklist, NOKPROBE_SYMBOL, holds).
func (s *Session) oneOfMany(p *sema.Probe) bool {
	if p.Decl == nil { // an @entry's companion: its return needs it
		return false
	}
	points := map[string]bool{}
	for _, q := range s.progs {
		if q.Probe.User == p.User && q.Probe.Decl != nil && q.Probe.TailOf == nil {
			points[q.Probe.Name] = true
		}
	}
	return len(points) > 1
}

// warnUnregistered tells Config.Warn, in stap's words, of kprobe p the
// kernel refused, with the kernel's error number and its reason.
func (s *Session) warnUnregistered(p *sema.Probe, err error) {
	if s.cfg.Warn == nil {
		return
	}
	rc := -1
	var errno unix.Errno
	if errors.As(err, &errno) {
		rc = -int(errno)
	}
	s.cfg.Warn(fmt.Sprintf("probe %s registration error [man warning::pass5] (rc %d): %v", p.Name, rc, err))
}

// warnRefused tells Config.Warn, as stap's runtime words it, about each
// point of p the kernel refused to probe: its probe, the file's inode and
// the point's offset, the kernel's error number.
func (s *Session) warnRefused(p *bpfgen.Program, refused *bpfrt.RefusedError) {
	if s.cfg.Warn == nil {
		return
	}
	var st unix.Stat_t
	unix.Stat(p.Attach.Path, &st)
	for i, point := range refused.Points {
		rc := -1
		var errno unix.Errno
		if errors.As(refused.Errs[i], &errno) {
			rc = -int(errno)
		}
		s.cfg.Warn(fmt.Sprintf("probe %s at inode-offset %d:%#x registration error [man warning::pass5] (rc %d)",
			p.Sections[point].Probe.Name, st.Ino, p.Attach.Offsets[point], rc))
	}
}

// HandlerStart is told that a user-side handler starts: the arrays
// served from maps list again the keys they grouped by text before
// (keys.go), as the kernel may have added some since.
func (s *Session) HandlerStart() { s.handlers++ }

// AddTarget adds process pid to the target set of Config.Target (after
// Load).
func (s *Session) AddTarget(pid int) error {
	if s.objs == nil || s.objs.shared[bpfgen.TargetMap] == nil {
		return fmt.Errorf("no target set: the session is not loaded with Config.Target")
	}
	return s.objs.shared[bpfgen.TargetMap].Put(uint32(pid), uint8(1))
}

// Skipped is the number of probe runs the kernel skipped because another
// BPF program was running on the CPU, and of updates a program could not
// make because it had interrupted another in the middle of one (stap's
// skipped probes).
func (s *Session) Skipped() int64 {
	n := s.skipped + s.nestingSkips()
	for _, lp := range s.loaded {
		n += recursionMisses(lp)
	}
	return n
}

// nestingSkips is the number of updates the programs could not make
// because another program on the same CPU was in the middle of one
// (bpfgen's SkipMap).
func (s *Session) nestingSkips() int64 {
	var n [1]int64
	s.counters(bpfgen.SkipMap, n[:])
	return n[0]
}

// Pause makes every program return at once, as after exit() (bpfgen's
// prologue tests StateMap's word, before -t's clock starts: a paused
// probe is neither run nor counted), until Pause(false). An exit()
// called before stands: resuming clears only a pause.
func (s *Session) Pause(paused bool) error {
	if s.objs == nil || s.objs.shared[bpfgen.StateMap] == nil {
		return nil
	}
	m := s.objs.shared[bpfgen.StateMap]
	var word uint64
	if err := m.Lookup(uint32(0), &word); err != nil {
		return err
	}
	switch {
	case paused && word == 0:
		word = bpfgen.StatePaused
	case !paused && word == bpfgen.StatePaused:
		word = 0
	default:
		return nil
	}
	return m.Update(uint32(0), word, ebpf.UpdateExist)
}

// StackFailures counts the stacks the programs took that the kernel could
// not keep (bpfgen's StackFailMap): lost, which read as "", and user
// stacks kept without their build-id frames.
func (s *Session) StackFailures() (lost, buildIDs int64) {
	var n [2]int64
	s.counters(bpfgen.StackFailMap, n[:])
	return n[bpfgen.StackFailLost/8], n[bpfgen.StackFailBuildIDs/8]
}

// UnreadUserStrings counts the strings in user memory the programs could
// not read and printed as their address (bpfgen's UnreadMap).
func (s *Session) UnreadUserStrings() int64 {
	var n [1]int64
	s.counters(bpfgen.UnreadMap, n[:])
	return n[0]
}

// counters reads the u64 words of the one element of shared map ref into
// n, leaving them 0 when no program uses the map.
func (s *Session) counters(ref string, n []int64) {
	if s.objs != nil && s.objs.shared[ref] != nil {
		s.objs.shared[ref].Lookup(uint32(0), n)
	}
}

// MaxStacks is the number of stacks each stack map keeps (-D MAXSTACKS).
func (s *Session) MaxStacks() int64 { return s.mod.MaxStacks() }

func recursionMisses(lp *bpfrt.Program) int64 {
	st, err := lp.Stats()
	if err != nil {
		return 0
	}
	return int64(st.RecursionMisses)
}

// detach detaches and unloads every program; the maps stay readable.
// Programs are closed all at once: detaching a classic tracepoint waits
// for an RCU grace period (tens of milliseconds), and concurrent waits
// share one, where one after another the 361 programs of syscall.* took
// 21 s.
func (s *Session) detach() error {
	errs := make([]error, len(s.loaded))
	var wg sync.WaitGroup
	for i, lp := range s.loaded {
		s.skipped += recursionMisses(lp)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lp.Close()
		}()
	}
	wg.Wait()
	s.loaded = nil
	return errors.Join(errs...)
}

// Close detaches every program, stops the ring reader and frees the maps.
func (s *Session) Close() error {
	errs := []error{s.detach(), s.stopReader()}
	if s.objs != nil {
		errs = append(errs, s.objs.close())
		s.objs = nil
	}
	return errors.Join(errs...)
}

// Fprint lists the globals' maps, then each program's instructions under
// its probe's name (-p3).
func (s *Session) Fprint(w io.Writer) {
	for _, gl := range s.mod.Globals() {
		fmt.Fprintf(w, "# %v\n", gl)
	}
	for _, p := range s.progs {
		fmt.Fprintf(w, "# %s (%s)\n%v\n", p.Probe.Name, p.Probe.Attach.Kind, p.Instructions)
	}
}

// Timing is the run-time statistic (ns per run, over every CPU) of kernel
// probe p with Config.Timing, nil without it or when p never ran.
func (s *Session) Timing(p *sema.Probe) *format.Stat {
	if s.objs == nil || s.objs.shared[bpfgen.TimingMap] == nil {
		return nil
	}
	for _, bp := range s.progs {
		for _, sec := range bp.Sections {
			if sec.Probe == p {
				return s.timingOf(sec.TimingIndex)
			}
		}
	}
	return nil
}

// timingOf is the statistic in TimingMap element i, nil when it is empty.
func (s *Session) timingOf(i int) *format.Stat {
	parts, err := bpfrt.LookupValues(s.objs.shared[bpfgen.TimingMap], uint32(i))
	if err != nil || parts == nil {
		return nil
	}
	stats := make([]*format.Stat, len(parts))
	for i, b := range parts {
		stats[i] = bpfgen.TimingLayout.Decode(b)
	}
	if st := format.Total(stats...); st.Count > 0 {
		return st
	}
	return nil
}
