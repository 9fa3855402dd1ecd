package bpfgen_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"golang.org/x/sys/unix"
)

// The tests compile the body of a script's `probe begin` as if it were a
// kernel probe on raw_syscalls:sys_enter, load and attach it as the driver
// does (package kernelside) for a child process only (the target set), let
// the child run, and compare what the probe printed, formatted as the
// driver formats it, with the expected output. Scripts that must run once
// guard themselves with a global.
//
// With BPFGEN_GETPPID=N the test binary is the child: it waits for a byte
// on stdin, makes N getppid calls, then a close(-1) that fails with EBADF,
// and exits. Its getppid calls pass getppidRegs as their arguments, which
// the kernel ignores but saves in the thread's pt_regs (rdi points to
// userWords), for TestUserArgLocations to read as a USDT marker's operands.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("BPFGEN_GETPPID")); err == nil {
		io.ReadFull(os.Stdin, make([]byte, 1))
		for range n {
			unix.RawSyscall(unix.SYS_GETPPID, uintptr(unsafe.Pointer(&userWords[0])), getppidRSI, uintptr(getppidRDX))
		}
		unix.Close(-1)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type testCase struct {
	name, script, stdout string
}

// readCases reads `=== name`, the script, `--- stdout`, the output.
func readCases(t *testing.T, file string) []testCase {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	for _, chunk := range strings.Split(string(data), "=== ")[1:] {
		name, rest, _ := strings.Cut(chunk, "\n")
		script, out, _ := strings.Cut(rest, "--- stdout\n")
		cases = append(cases, testCase{name, script, out})
	}
	return cases
}

func TestScripts(t *testing.T) {
	requireBPF(t)
	before := openFDs(t)
	defer func() {
		if after := openFDs(t); after != before {
			t.Errorf("%d file descriptors open before the scripts ran, %d after", before, after)
		}
	}()
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		for _, c := range readCases(t, file) {
			t.Run(filepath.Base(file)+"/"+c.name, func(t *testing.T) {
				got := runScript(t, c.script, newChild(t, "sh", "-c", "read x"))
				if got != c.stdout {
					t.Errorf("output:\n%s\nwant:\n%s", got, c.stdout)
				}
			})
		}
	}
}

// TestCount checks a shared and a per-CPU ++ against a known number of
// system calls.
func TestCount(t *testing.T) {
	requireBPF(t)
	for _, perCPU := range []bool{false, true} {
		t.Run(fmt.Sprint("percpu=", perCPU), func(t *testing.T) {
			const calls = 3000
			prog := elaborate(t, `global n, by; probe begin { n++; by[execname()] += 2 } probe end { println(n, by["x"]) }`)
			for _, v := range prog.Globals {
				v.PerCPU = perCPU
			}
			s := run(t, prog, getppidChild(t, calls), &recorder{})
			defer s.Close()
			n := global(s, prog, "n").Scalar.Load().Int
			by, _ := global(s, prog, "by").Array.Get(interp.Key{{Str: filepath.Base(os.Args[0])}})
			if n < calls || by.Int != 2*n {
				t.Errorf("n = %d, by[comm] = %d after %d getppid calls", n, by.Int, calls)
			}
		})
	}
}

// TestArguments counts a child's getppid calls through $id, the
// second argument of raw_syscalls:sys_enter, and reads a member chain
// ($regs->orig_ax) through bpf_probe_read_kernel.
func TestArguments(t *testing.T) {
	requireBPF(t)
	const calls = 2000
	prog := elaborate(t, fmt.Sprintf(`global n, m
probe kernel.trace("raw_syscalls:sys_enter") { if ($id == %d) n++; if ($regs->orig_ax == %d) m++ }`,
		unix.SYS_GETPPID, unix.SYS_GETPPID))
	c := getppidChild(t, calls)
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	defer s.Close()
	start(t, s, c, &recorder{})
	n, mm := global(s, prog, "n").Scalar.Load().Int, global(s, prog, "m").Scalar.Load().Int
	if n != calls || mm != calls {
		t.Errorf("$id counted %d, $regs->orig_ax %d getppid calls; the child made %d", n, mm, calls)
	}
}

// TestArgLocations reads the return value of the child's failing
// close(-1), args[1] of raw_syscalls:sys_exit, through argument locations
// of every size and signedness: the loads that the fields of a classic
// trace record and the registers of a kprobe will need.
func TestArgLocations(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, fmt.Sprintf(`probe kernel.trace("raw_syscalls:sys_exit") {
  if ($regs->orig_ax == %d && $ret < 0) printf("%%d %%d %%d %%d\n", $ret, $ret, $ret, $ret) }`, unix.SYS_CLOSE))
	p := prog.Probes[0]
	args := []attach.Arg{p.Attach.Args[1], p.Attach.Args[1], p.Attach.Args[1], p.Attach.Args[1]}
	args[1].Loc = attach.Loc{Offset: 8, Size: 4}
	args[2].Loc = attach.Loc{Offset: 8, Size: 2, Signed: true}
	args[3].Loc = attach.Loc{Offset: 8, Size: 1}
	p.Attach = &attach.Point{Kind: p.Attach.Kind, Event: p.Attach.Event, System: p.Attach.System, BTFID: p.Attach.BTFID,
		Args: append(p.Attach.Args, args[1:]...)}
	printArgs := p.Body.Stmts[0].(*syntax.IfStmt).Then.(*syntax.ExprStmt).X.(*syntax.PrintCall).Args
	for i := 1; i < 4; i++ {
		prog.Targets[printArgs[i]] = &probes.Access{Param: 1 + i, Type: syntax.TypeLong}
	}
	c := getppidChild(t, 0)
	var out recorder
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	defer s.Close()
	start(t, s, c, &out)
	if want := "-9 4294967287 -9 247\n"; string(out.out) != want { // EBADF
		t.Errorf("output %q, want %q", out.out, want)
	}
}

// The registers of the child's getppid calls, and the words rdi points to.
const getppidRSI = 2

var getppidRDX int64 = 0x01234567f9abc3d4 // dl, dh, dx, edx with their sign bits set

var userWords = [4]int64{-2, 0x1122334455667788, -300, 7}

// TestUserArgLocations reads the registers saved by the child's getppid
// call, through the pt_regs pointer of raw_syscalls:sys_enter (tp_btf),
// as a uprobe on a USDT marker reads its operands from its own pt_regs:
// registers of every width (%dh is a byte within rdx's slot), a constant,
// memory at off(%reg) and off(%base,%index,scale) read from user space
// (sign- and zero-extended), an address, and an unreadable address,
// which reads 0.
func TestUserArgLocations(t *testing.T) {
	requireBPF(t)
	mem := func(disp int64, terms ...attach.RegTerm) *attach.UserAddr {
		return &attach.UserAddr{Disp: disp, Terms: terms}
	}
	cases := []struct {
		operand string
		loc     attach.Loc
		want    int64
	}{
		{"-1@%dl", attach.Loc{Offset: regsRDX, Size: 1, Signed: true}, int64(int8(getppidRDX & 0xff))},
		{"1@%dh", attach.Loc{Offset: regsRDX + 1, Size: 1}, getppidRDX >> 8 & 0xff},
		{"-1@%dh", attach.Loc{Offset: regsRDX + 1, Size: 1, Signed: true}, int64(int8(getppidRDX >> 8 & 0xff))},
		{"-2@%dx", attach.Loc{Offset: regsRDX, Size: 2, Signed: true}, int64(int16(getppidRDX & 0xffff))},
		{"4@%edx", attach.Loc{Offset: regsRDX, Size: 4}, getppidRDX & 0xffffffff},
		{"8@%rdx", attach.Loc{Offset: regsRDX, Size: 8}, getppidRDX},
		{"-4@$-5", attach.Loc{Const: true, Value: -5, Size: 4, Signed: true}, -5},
		{"-8@8(%rdi)", attach.Loc{User: mem(8, attach.RegTerm{Offset: regsRDI, Scale: 1}), Size: 8, Signed: true}, userWords[1]},
		{"-4@(%rdi,%rsi,8)", attach.Loc{User: mem(0, attach.RegTerm{Offset: regsRDI, Scale: 1}, attach.RegTerm{Offset: regsRSI, Scale: 8}), Size: 4, Signed: true}, userWords[2]},
		{"2@-8(%rdi,%rsi,8)", attach.Loc{User: mem(-8, attach.RegTerm{Offset: regsRDI, Scale: 1}, attach.RegTerm{Offset: regsRSI, Scale: 8}), Size: 2}, userWords[1] & 0xffff},
		{"-1@8(%rdi)", attach.Loc{User: mem(8, attach.RegTerm{Offset: regsRDI, Scale: 1}), Size: 1, Signed: true}, int64(int8(userWords[1] & 0xff))},
		{"address 24(%rdi)", attach.Loc{User: mem(24, attach.RegTerm{Offset: regsRDI, Scale: 1}), Size: 8, Address: true}, 24},
		{"unreadable 8@(,%rsi,1)", attach.Loc{User: mem(0, attach.RegTerm{Offset: regsRSI, Scale: 1}), Size: 8}, 0},
	}
	var locs []attach.Loc
	for _, c := range cases {
		locs = append(locs, c.loc)
	}
	userAddr, lines := readLocations(t, locs)
	for i, c := range cases {
		want := c.want
		if c.loc.Address {
			want += userAddr
		}
		if got := lines[i]; got != strconv.FormatInt(want, 10) {
			t.Errorf("%s: %s, want %d", c.operand, got, want)
		}
	}
}

// TestKernelFrameReads reads the kernel's memory as a kernel statement's
// variable in its frame is read (attach.UserAddr.Kernel): the first word
// of the kernel's read-only data, at __start_rodata's address in
// /proc/kallsyms (a symbol kallsyms lists without CONFIG_KALLSYMS_ALL,
// its contents unknown here), and an address the kernel cannot read,
// whose fault raises stap's kernel read fault (a value the kernel never
// held, 0, was printed instead).
func TestKernelFrameReads(t *testing.T) {
	requireBPF(t)
	rodata, ok := ksym.Address("__start_rodata")
	if !ok {
		t.Fatal("/proc/kallsyms gives __start_rodata no address")
	}
	kernel := func(disp int64, terms ...attach.RegTerm) *attach.UserAddr {
		return &attach.UserAddr{Disp: disp, Terms: terms, Kernel: true}
	}
	_, lines := readLocations(t, []attach.Loc{
		{User: kernel(int64(rodata)), Size: 8},
		{User: kernel(0, attach.RegTerm{Offset: regsRSI, Scale: 1}), Size: 8},
	})
	if _, err := strconv.ParseInt(lines[0], 10, 64); err != nil {
		t.Errorf("the first word at __start_rodata: %q, want a number", lines[0])
	}
	if want := fmt.Sprintf("ERROR: "+tapset.KernelReadFault+" near ", getppidRSI); !strings.HasPrefix(lines[1], want) {
		t.Errorf("kernel address %d: %q, want %q...", getppidRSI, lines[1], want)
	}
}

// The offsets of rdi, rsi and rdx in x86-64's struct pt_regs.
const regsRDI, regsRSI, regsRDX = 112, 104, 96

// readLocations runs, for the child's one getppid call, a probe of
// raw_syscalls:sys_enter (tp_btf) whose printf statements each print a
// value at one of locs, read from the registers its pt_regs pointer
// points to, as a uprobe reads a USDT marker's operands and a kprobe a
// kernel statement's variables from their own: the child's pointer to
// userWords, then a line for each location, its value or its error.
func readLocations(t *testing.T, locs []attach.Loc) (userAddr int64, lines []string) {
	t.Helper()
	prog := elaborate(t, fmt.Sprintf(`probe kernel.trace("raw_syscalls:sys_enter") {
  if ($id == %d) { printf("%%d\n", $regs->di)%s } }`, unix.SYS_GETPPID, strings.Repeat(`; printf("%d\n", $id)`, len(locs))))
	p := prog.Probes[0]
	if p.Attach.Kind != attach.TPBTF {
		t.Fatalf("raw_syscalls:sys_enter attaches as %s, not tp_btf", p.Attach.Kind)
	}
	prints := p.Body.Stmts[0].(*syntax.IfStmt).Then.(*syntax.Block).Stmts[1:]
	point := *p.Attach
	for i, loc := range locs {
		arg := point.Args[1]
		arg.Loc, arg.Loc.Deref, arg.Loc.Base = loc, !loc.Const, 0 // $regs is args[0]
		prog.Targets[prints[i].(*syntax.ExprStmt).X.(*syntax.PrintCall).Args[0]] = &probes.Access{Param: len(point.Args), Type: syntax.TypeLong}
		point.Args = append(point.Args, arg)
	}
	p.Attach = &point
	c := getppidChild(t, 1)
	var out recorder
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	defer s.Close()
	start(t, s, c, &out)
	lines = strings.Split(strings.TrimSuffix(string(out.out), "\n"), "\n")
	if len(lines) != 1+len(locs) {
		t.Fatalf("output %q, want %d lines", out.out, 1+len(locs))
	}
	userAddr, _ = strconv.ParseInt(lines[0], 10, 64)
	return userAddr, lines[1:]
}

// global returns the storage the driver would give the interpreter for the
// global called name.
func global(s *kernelside.Session, prog *sema.Program, name string) interp.Storage {
	for _, v := range prog.Globals {
		if v.Name == name {
			g := interp.Global{Var: v}
			if shape := prog.StatShape(v); v.Type == syntax.TypeStats {
				g.NewStat = func() *format.Stat { return format.NewStat(shape.Hist, shape.Shift) }
			}
			return s.Storage(g)
		}
	}
	panic("no global " + name)
}

func requireBPF(t *testing.T) {
	t.Helper()
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
}

// registry resolves probe points on the running kernel, as the driver does.
var registry = probes.BuiltinFor(probes.RunningKernel{CanAttach: bpfrt.CanAttach})

func elaborate(t *testing.T, script string) *sema.Program {
	return elaborateWith(t, script, sema.Options{})
}

func elaborateWith(t *testing.T, script string, opts sema.Options) *sema.Program {
	t.Helper()
	cfg := syntax.DefaultConfig()
	cfg.Guru = opts.Guru // guru mode's operators (@kderef) parse
	f, err := syntax.Parse(syntax.NewSource("<input>", script), cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoWarnings, opts.Registry, opts.KernelProbes = true, registry, true
	prog, err := sema.Elaborate([]*syntax.File{f}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// sysEnter is the attach point of raw_syscalls:sys_enter the kernel.trace
// family chooses.
func sysEnter(t *testing.T) *attach.Point {
	return elaborateWith(t, `probe kernel.trace("raw_syscalls:sys_enter") {}`, sema.Options{Unoptimized: true}).Probes[0].Attach
}

// beginInKernel makes the begin probe of prog a kernel probe on
// raw_syscalls:sys_enter and returns it.
func beginInKernel(t *testing.T, prog *sema.Program) *sema.Probe {
	for _, p := range prog.Probes {
		if p.Family == "begin" {
			p.Kernel, p.Attach = true, sysEnter(t)
			return p
		}
	}
	t.Fatal("no begin probe")
	return nil
}

// compileError compiles the begin probe of script as a kernel probe and
// returns the error.
func compileError(t *testing.T, script string) error {
	prog := elaborateWith(t, script, sema.Options{Guru: true}) // guru mode's builtins (raise) too
	_, err := bpfgen.New(prog, bpfgen.Config{Kernel: targettest.Running(t)}).Compile(beginInKernel(t, prog))
	return err
}

// compileKernelError compiles the first probe of script, a kernel probe,
// and returns the error.
func compileKernelError(t *testing.T, script string) error {
	prog := elaborateWith(t, script, sema.Options{Guru: true})
	_, err := bpfgen.New(prog, bpfgen.Config{Kernel: targettest.Running(t)}).Compile(prog.Probes[0])
	return err
}

// child is a process stopped until released.
type child struct {
	cmd   *exec.Cmd
	start io.WriteCloser
}

func newChild(t *testing.T, name string, args ...string) *child {
	cmd := exec.Command(name, args...)
	start, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &child{cmd, start}
}

// getppidChild is the test binary as a child making calls getppid calls.
func getppidChild(t *testing.T, calls int) *child {
	t.Setenv("BPFGEN_GETPPID", strconv.Itoa(calls))
	return newChild(t, os.Args[0])
}

// run compiles the begin probe of prog as a kernel probe, runs it for the
// child to its end with the records delivered to sink, and returns the
// session, detached, for its globals; the caller closes it.
func run(t *testing.T, prog *sema.Program, c *child, sink kernelside.Sink) *kernelside.Session {
	t.Helper()
	beginInKernel(t, prog)
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	start(t, s, c, sink)
	return s
}

// compile compiles and loads the kernel probes of prog with target() the
// child's pid.
func compile(t *testing.T, prog *sema.Program, cfg kernelside.Config, c *child) *kernelside.Session {
	t.Helper()
	cfg.TargetPID = c.cmd.Process.Pid
	s, err := kernelside.Compile(prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s
}

// start attaches the loaded session for the child (the target set), lets
// the child run to its end and detaches, delivering the records to sink.
func start(t *testing.T, s *kernelside.Session, c *child, sink kernelside.Sink) {
	t.Helper()
	if err := s.AddTarget(c.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(sink); err != nil {
		t.Fatal(err)
	}
	if err := s.Attach(); err != nil {
		t.Fatal(err)
	}
	c.start.Write([]byte("\n"))
	c.start.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

// recorder is a kernelside.Sink that formats what the probes send as the
// driver does, errors with their position.
type recorder struct{ out []byte }

func (r *recorder) KernelPrint(call *syntax.PrintCall, args []format.Arg) {
	f, err := sema.PrintFormat(call)
	if err != nil {
		panic(err)
	}
	r.out = f.Append(r.out, args)
}

func (r *recorder) KernelCall(call *syntax.Call, args []format.Arg) {
	r.out = fmt.Appendf(r.out, "CALL %s%v\n", call.Name, args)
}

func (r *recorder) KernelError(msg string, at syntax.Pos) {
	r.out = fmt.Appendf(r.out, "ERROR: %s near %s\n", msg, at)
}

func (r *recorder) KernelExit() { r.out = append(r.out, "EXIT\n"...) }
func (r *recorder) Flush()      {}

// runScript runs the script's begin probe in the kernel for c and returns
// its output as the driver would print it.
func runScript(t *testing.T, script string, c *child) string {
	var out recorder
	run(t, elaborate(t, script), c, &out).Close()
	return string(out.out)
}

func openFDs(t *testing.T) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestRecursionRefused checks the error for a call chain that reaches a
// function being inlined.
func TestRecursionRefused(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`function f(n) { return n ? f(n - 1) : 0 } probe begin { println(f(3)) }`,
			"<input>:1:28: recursive call of function f() (f → f)"},
		{`function even(n) { return n ? odd(n - 1) : 1 } function odd(n) { return n ? even(n - 1) : 0 }
probe begin { println(even(4)) }`,
			"<input>:1:77: recursive call of function even() (even → odd → even)"},
	} {
		if err := compileError(t, c.script); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\nerror %v\nwant %s", c.script, err, c.want)
		}
	}
}
