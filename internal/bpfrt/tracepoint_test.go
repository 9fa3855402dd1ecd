package bpfrt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// The tests re-run the test binary as a workload: with BPFRT_GETPPID=N it
// waits for a line on stdin (the probes are attached by then), makes N
// getppid system calls and exits, all from one thread: a goroutine the
// scheduler moves to another thread mid-loop (under load) splits
// per-thread counts (TestTaskStorage saw 107 of 3000).
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("BPFRT_GETPPID")); err == nil {
		runtime.LockOSThread()
		io.ReadFull(os.Stdin, make([]byte, 1))
		for range n {
			unix.Getppid()
		}
		os.Exit(0)
	}
	// The tests make maps and programs as bpftap would: on a kernel that
	// charges BPF memory to RLIMIT_MEMLOCK (before 5.11) it is raised
	// first, as the driver's target.Running does.
	if err := target.RaiseMemlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// workload is a child process stopped before its getppid calls.
type workload struct {
	cmd   *exec.Cmd
	start io.WriteCloser
}

func newWorkload(t testing.TB, calls int) *workload {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("BPFRT_GETPPID=%d", calls))
	start, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &workload{cmd, start}
}

func (w *workload) pid() int32 { return int32(w.cmd.Process.Pid) }

// run lets the child make its calls and waits for it.
func (w *workload) run(t testing.TB) {
	t.Helper()
	w.start.Write([]byte{'\n'})
	w.start.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}

// requireBPF fails the test when the process may not use BPF: these tests
// exist to run on a real kernel as root.
func requireBPF(t testing.TB) {
	t.Helper()
	if err := CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
}

// kindsOfTracepoints are the attach kinds of a tracepoint.
var kindsOfTracepoints = []attach.Kind{attach.TPBTF, attach.RawTracepoint, attach.Tracepoint}

// sysEnter returns the attach point of raw_syscalls:sys_enter by kind,
// skipping the test when the kernel lacks that kind (bpfrt.CanAttach says
// why).
func sysEnter(t testing.TB, kind attach.Kind) *attach.Point {
	t.Helper()
	tp := tracepoint(t, "raw_syscalls:sys_enter")
	p := &attach.Point{Kind: kind, Event: tp.Event, System: tp.System}
	if kind == attach.TPBTF {
		p.BTFID = tp.Proto
	}
	if err := CanAttach(p); err != nil {
		t.Skipf("skipped: %v", err)
	}
	return p
}

// onEachKind runs f in a subtest for each kind of attach point of
// raw_syscalls:sys_enter (a kind the kernel lacks is skipped).
func onEachKind(t *testing.T, f func(t *testing.T, point *attach.Point)) {
	requireBPF(t)
	for _, kind := range kindsOfTracepoints {
		t.Run(kind.String(), func(t *testing.T) { f(t, sysEnter(t, kind)) })
	}
}

// tracepoint returns the kernel's tracepoint spec; a kernel without BTF
// has none (skipped).
func tracepoint(t testing.TB, spec string) *kernel.Tracepoint {
	t.Helper()
	tps, err := kernel.Tracepoints()
	if errors.Is(err, kernel.ErrNoBTF) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := kernel.MatchTracepoints(tps, spec)
	if err != nil || len(m) != 1 {
		t.Fatalf("%s: %v %v", spec, m, err)
	}
	return m[0]
}

// filterGetppid emits: exit unless the current process is pid and the
// system call is getppid. The context holds the call number at offset 8
// for all three kinds: args[1] of raw and BTF-typed tracepoints, the field
// id of the classic event record.
func filterGetppid(pid int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, pid, "out"),
		asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord),
		asm.JNE.Imm(asm.R1, unix.SYS_GETPPID, "out"),
	}
}

// exit is the common "out" label: return 0.
var exit = asm.Instructions{
	asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
	asm.Return(),
}

// lookupOrOut emits R0 = the element of the array mapRef whose u32 key is
// at R10-4, and a jump to "out" when there is none.
func lookupOrOut(mapRef string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapRef),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
	}
}

// countAllProgram counts every system call in slot 0 of the per-CPU array "counts".
var countAllProgram = slices.Concat(
	asm.Instructions{asm.StoreImm(asm.R10, -4, 0, asm.Word)},
	lookupOrOut("counts"),
	asm.Instructions{
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	},
	exit,
)

// countProgram counts getppid calls of pid in slot 0 of the per-CPU array "counts".
func countProgram(pid int32) asm.Instructions {
	return append(filterGetppid(pid), countAllProgram...)
}

// TestCountSyscalls is the end-to-end proof: a program on
// raw_syscalls:sys_enter counts a child's getppid calls into a per-CPU
// array, through each kind of attach point the kernel offers.
func TestCountSyscalls(t *testing.T) {
	onEachKind(t, func(t *testing.T, point *attach.Point) {
		const calls = 5000
		counts := newCounts(t)
		defer counts.Close()
		child := newWorkload(t, calls)
		p := loadAttached(t, &ProgramSpec{Name: "count_getppid", Attach: point,
			Instructions: countProgram(child.pid()), Maps: map[string]*ebpf.Map{"counts": counts}})
		defer p.Close()
		child.run(t)
		n, err := SumPerCPU(counts, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n < calls {
			t.Errorf("counted %d getppid calls, the child made %d", n, calls)
		}
	})
}

// newCounts creates the per-CPU array of one counter countProgram uses.
func newCounts(t testing.TB) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "counts", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadAttached(t testing.TB, spec *ProgramSpec) *Program {
	t.Helper()
	p, err := Load(spec)
	if err != nil {
		var ve *VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("%v\n%s", err, ve.Log)
		}
		t.Fatal(err)
	}
	if err := p.Attach(); err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p
}

// TestStats checks the run-time statistics -t reports: every getppid of
// the child ran the program.
func TestStats(t *testing.T) {
	requireBPF(t)
	point := sysEnter(t, attach.TPBTF)
	stats, err := EnableStats()
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	const calls = 2000
	child := newWorkload(t, calls)
	p := loadAttached(t, &ProgramSpec{Name: "empty", Attach: point,
		Instructions: append(filterGetppid(child.pid()), exit...)})
	defer p.Close()
	child.run(t)
	s, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.RunCount < calls || s.Runtime <= 0 {
		t.Errorf("stats %+v after %d calls", s, calls)
	}
}

// TestVerifierError checks that a rejection carries the log and the index
// of the offending instruction.
func TestVerifierError(t *testing.T) {
	requireBPF(t)
	point := sysEnter(t, attach.TPBTF)
	bad := asm.Instructions{
		asm.LoadImm(asm.R1, 1, asm.DWord), // two raw slots: shifts raw offsets
		asm.Mov.Imm(asm.R0, 0),
		asm.LoadMem(asm.R0, asm.R1, 0, asm.DWord), // R1 is a number, not a pointer
		asm.Return(),
	}
	_, err := Load(&ProgramSpec{Name: "bad", Attach: point, Instructions: bad})
	var ve *VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("Load = %v, want a VerifierError", err)
	}
	if ve.Insn != 2 || !regexp.MustCompile(`R1 invalid mem access '(scalar|inv)'`).MatchString(ve.Log) { // 'inv' before 5.18
		t.Errorf("Insn = %d, log:\n%s", ve.Insn, ve.Log)
	}
}

func TestUnknownMapReference(t *testing.T) {
	point := &attach.Point{Kind: attach.TPBTF, Event: "sys_enter", BTFID: 1}
	insns := append(asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference("nosuch")}, exit...)
	_, err := Load(&ProgramSpec{Name: "p", Attach: point, Instructions: insns})
	if err == nil || !strings.Contains(err.Error(), `unknown map "nosuch"`) {
		t.Errorf("Load = %v", err)
	}
}

// TestNoFdLeak runs a whole cycle (maps, ring, reader, statistics, load,
// attach, close) and checks that every file descriptor is closed.
func TestNoFdLeak(t *testing.T) {
	requireBPF(t)
	var points []*attach.Point
	for _, kind := range kindsOfTracepoints { // the once-per-process feature checks must not count
		points = append(points, sysEnter(t, kind))
	}
	before := openFds(t)
	for _, p := range points {
		cycle(t, p)
	}
	if after := openFds(t); after != before {
		t.Errorf("%d file descriptors open before, %d after", before, after)
	}
}

func cycle(t *testing.T, point *attach.Point) {
	stats, err := EnableStats()
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	counts := newCounts(t)
	defer counts.Close()
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Name: "out", Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	rd, err := NewRingReader(ring, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	p := loadAttached(t, &ProgramSpec{Name: "count", Attach: point,
		Instructions: countProgram(1), Maps: map[string]*ebpf.Map{"counts": counts}})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func openFds(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
