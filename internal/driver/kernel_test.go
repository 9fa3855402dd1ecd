package driver

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"
)

// TestKernelCleanup runs kernel-probe scripts that end every way a run
// ends (exit() in a kernel probe, the -c command exiting, -T, a run-time
// error, a verifier rejection, an attach-time failure path) and checks
// that nothing is left behind: no file descriptor of this process (maps,
// programs, links, perf events, ring readers) and no bpftap program in the
// kernel.
func TestKernelCleanup(t *testing.T) {
	before := openFDs(t)
	runs := [][]string{
		{"-e", `probe kernel.trace("sys_enter") { exit() }`},
		{"-c", workloadCommand() + " getppid 10", "-e", `global n; probe syscall_any { n++ }`},
		{"-T", "0.1", "-e", `global n; probe kernel.trace("sched:sched_switch") { n++ } probe end { printf("%d\n", n > 0) }`},
		{"-e", `global z; probe kernel.trace("sys_enter") { printf("%d", 1 / z) }`},
		{"-p4", "-D", "MAXACTION=100000", "-e",
			`global x; probe kernel.trace("sys_enter") { for (i = 0; i < 20000; i++) if (pid() > i) x++ }`},
		{"-t", "-e", `global s; probe kernel.trace("sys_enter") { s <<< 1; if (@count(s) > 100) exit() }`},
	}
	for _, argv := range runs {
		var stdout, stderr bytes.Buffer
		Main(argv, strings.NewReader(""), &stdout, &stderr)
		if strings.Contains(stderr.String(), "panic") {
			t.Errorf("%q: %s", argv, stderr.String())
		}
	}
	for fd, target := range openFDs(t) {
		if before[fd] != target { // one closed meanwhile (a finalizer of an earlier test's file) is no leak
			t.Errorf("file descriptor %s (%s) opened by the runs is still open", fd, target)
		}
	}
	// The kernel frees a closed program asynchronously (after an RCU grace
	// period): wait a little before calling it left behind.
	var names []string
	for range 50 {
		if names = bpftapPrograms(t); len(names) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("programs left in the kernel: %v", names)
}

// openFDs maps this process's open file descriptors to what they are
// (their /proc/self/fd link: a path, anon_inode:bpf-map, ...).
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]string{}
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil { // the directory's own fd is gone
			open[fd.Name()] = target
		}
	}
	return open
}

// bpftapPrograms lists the kernel's BPF programs named as bpftap names the
// programs of this process's runs (kernelside.Config.NamePrefix): other
// processes' runs, such as other packages' tests, are not counted.
func bpftapPrograms(t *testing.T) []string {
	prefix := fmt.Sprintf("b%d_", os.Getpid())
	var names []string
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return names
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && strings.HasPrefix(info.Name, prefix) {
			names = append(names, info.Name)
		}
		p.Close()
	}
}

// TestKernelDrops fills a 1 MiB ring faster than it is read (the output
// goes to a FIFO nobody reads for a while, so the reader stalls): the
// records that found the ring full are counted and reported as stap
// reports transport failures, and the run still succeeds.
func TestKernelDrops(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "out")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan int)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			read <- -1
			return
		}
		defer f.Close()
		time.Sleep(500 * time.Millisecond)
		b, _ := io.ReadAll(f)
		read <- bytes.Count(b, []byte("\n"))
	}()
	long := strings.Repeat("0123456789", 20)
	script := `probe kernel.trace("raw_syscalls:sys_enter") {
	if (pid() == target()) printf("%s %s %s\n", "` + long + `", "` + long + `", execname())
}`
	var stdout, stderr bytes.Buffer
	status := Main([]string{"-s", "1", "-o", fifo, "-c", workloadCommand() + " getppid 100000", "-e", script},
		strings.NewReader(""), &stdout, &stderr)
	lines := <-read
	if status != 0 {
		t.Fatalf("exit status %d: %s", status, stderr.String())
	}
	re := regexp.MustCompile(`(?m)^WARNING: There were ([0-9]+) transport failures\. Try bpftap -s to increase the buffer size from 1\.$`)
	m := re.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no transport failure warning (%d lines printed); stderr:\n%s", lines, stderr.String())
	}
	if n, _ := strconv.Atoi(m[1]); n <= 0 || lines+n < 100000 {
		t.Errorf("%d lines printed and %s records reported lost for the target's 100000+ system calls", lines, m[1])
	}
}

// TestSeedScriptsVerbatim runs the seed's two scripts (bench/scripts) and
// Debian's examples/process/syscalls_by_proc.stp unchanged with -c on a
// workload making N getppid calls: each prints SystemTap's table with at
// least N calls on the workload's line.
func TestSeedScriptsVerbatim(t *testing.T) {
	const n = 5000
	scripts := []string{
		"../../bench/scripts/syscalls_by_proc_inc.stp",
		"../../bench/scripts/syscalls_by_proc_agg.stp",
		"/usr/share/systemtap/examples/process/syscalls_by_proc.stp",
	}
	workload := filepath.Base(workloadCommand()[strings.LastIndex(workloadCommand(), " ")+1:])
	line := regexp.MustCompile(`(?m)^([0-9]+) +` + regexp.QuoteMeta(workload[:min(len(workload), 15)]) + `$`)
	for _, script := range scripts {
		if _, err := os.Stat(script); err != nil {
			t.Errorf("%s: %v (CI installs systemtap-doc)", script, err)
			continue
		}
		var stdout, stderr bytes.Buffer
		status := Main([]string{"-c", workloadCommand() + " getppid " + strconv.Itoa(n), script},
			strings.NewReader(""), &stdout, &stderr)
		if status != 0 || stderr.Len() > 0 {
			t.Errorf("%s: exit status %d, stderr:\n%s", script, status, stderr.String())
			continue
		}
		if !strings.Contains(stdout.String(), "#SysCalls  Process Name\n") {
			t.Errorf("%s: no table header:\n%s", script, stdout.String())
		}
		m := line.FindStringSubmatch(stdout.String())
		if m == nil {
			t.Errorf("%s: no line for %s:\n%s", script, workload, stdout.String())
			continue
		}
		if count, _ := strconv.Atoi(m[1]); count < n {
			t.Errorf("%s: %d calls counted for %s, which made at least %d", script, count, workload, n)
		}
	}
}

// TestKernelNotRoot runs the README's first example as nobody. Without
// capabilities it fails with one line naming the missing ones; with
// CAP_BPF and CAP_PERFMON, what the README says suffices, it runs (with no
// tracefs mounted: this machine mounts none, and nobody cannot mount it).
// The same goes for kernel memory read in a user-side probe.
func TestKernelNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to nobody")
	}
	dir, err := os.MkdirTemp("", "bpftap-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "bpftap")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bpftap").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := os.ReadFile("../../examples/syscalls_by_proc.stp")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "s.stp"), script, 0o644)
	asNobody := func(caps []uintptr, args ...string) (stdout, stderr string, err error) {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, AmbientCaps: caps}
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		err = cmd.Run()
		return out.String(), errs.String(), err
	}
	readme := []string{filepath.Join(dir, "s.stp"), "-T", "1"}
	_, stderr, err := asNobody(nil, readme...)
	want := "ERROR: kernel probes need BPF, and loading BPF programs needs root (or CAP_BPF and CAP_PERFMON); " +
		"bpftap runs as uid 65534 without CAP_BPF and CAP_PERFMON\n" +
		"Pass 4: compilation failed.  [man error::pass4]\n"
	if err == nil || stderr != want {
		t.Errorf("as nobody: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	// Every kind of kernel probe says the same, though some families ask
	// the kernel while the script is elaborated (perf events, the syscall
	// tapset's trace events in tracefs, kernel functions' trampolines).
	for _, point := range []string{"timer.profile", "perf.sw.cpu_clock", "syscall.openat", "syscall.*",
		`kernel.function("vfs_read")`, `process("/bin/bash").function("xmalloc")`, "process.begin"} {
		_, stderr, err := asNobody(nil, "-T", "1", "-e", "probe "+point+" { println(1) }")
		if line, _, _ := strings.Cut(stderr, "\n"); err == nil || line+"\n" != want[:strings.Index(want, "\n")+1] {
			t.Errorf("probe %s as nobody: %v, stderr:\n%s\nwant its first line:\n%s", point, err, stderr, want)
		}
	}
	caps := []uintptr{unix.CAP_BPF, unix.CAP_PERFMON}
	// Uprobes need CAP_SYS_ADMIN too: the kernel opens a uprobe's perf
	// event only with it.
	_, stderr, err = asNobody(caps, "-e", `probe process("/bin/bash").function("xmalloc") { println(1) }`, "-c", "/bin/bash -c true")
	want = "ERROR: user-space probes (uprobes) need root or CAP_SYS_ADMIN: the kernel opens uprobe perf events only with it; " +
		"bpftap runs as uid 65534 without CAP_SYS_ADMIN\n" +
		"Pass 4: compilation failed.  [man error::pass4]\n"
	if err == nil || stderr != want {
		t.Errorf("a uprobe as nobody with CAP_BPF and CAP_PERFMON: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	// -x of a process whose executable nobody may not read says so.
	_, stderr, err = asNobody(caps, "-p2", "-x", "1", "-e", `probe process.function("main") { }`)
	want = "semantic error: cannot find the target process's executable for an unspecified process probe: process 1 (-x): permission denied\n"
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("-x 1 as nobody: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	stdout, stderr, err := asNobody(caps, readme...)
	if err != nil || !strings.Contains(stdout, "#SysCalls  Process Name\n") {
		t.Errorf("as nobody with CAP_BPF and CAP_PERFMON: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	// Without tracefs the system is taken as written, and named as written.
	// (Both CPUs may print before exit() stops the probes: one line or more.)
	stdout, stderr, err = asNobody(caps, "-e", `probe kernel.trace("raw_syscalls:sys_enter") { printf("%s\n", pp()); exit() }`)
	if want := "kernel.trace(\"raw_syscalls:sys_enter\")\n"; err != nil || stdout == "" || strings.ReplaceAll(stdout, want, "") != "" {
		t.Errorf("pp() as nobody with CAP_BPF and CAP_PERFMON: %v, %q, want %q\nstderr:\n%s", err, stdout, want, stderr)
	}
	// A syscall alias whose trace event tracefs would list says why it
	// found nothing (its point is optional: the alias's own no-match):
	// tracefs is not mounted, or (mounted by root meanwhile) nobody may
	// not read it.
	_, stderr, err = asNobody(caps, "-p2", "-e", `probe syscall.openat {}`)
	want = "semantic error: no match; only the tracepoints the kernel's BTF describes were searched: "
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("syscall.openat as nobody: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	// Kernel memory read in a user-side probe (package kmem): the reason
	// without capabilities, stap's fault with them.
	read := []string{"-e", `probe begin { println(kernel_string2(0, "no string")); println(kernel_long(-4096)) }`}
	_, stderr, err = asNobody(nil, read...)
	want = "ERROR: kernel_string2() cannot read kernel memory in a user-side probe: loading BPF programs needs root " +
		"(or CAP_BPF and CAP_PERFMON); bpftap runs as uid 65534 without CAP_BPF and CAP_PERFMON " +
		"near identifier 'kernel_string2' at <input>:1:23\n"
	if err == nil || !strings.HasPrefix(stderr, want) {
		t.Errorf("kernel_string2 as nobody: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	_, stderr, err = asNobody(nil, "-e", `probe begin { printf("%.2m", 0) }`)
	want = "ERROR: %m and %M cannot read kernel memory in a user-side probe: loading BPF programs needs root " +
		"(or CAP_BPF and CAP_PERFMON); bpftap runs as uid 65534 without CAP_BPF and CAP_PERFMON " +
		"near identifier 'printf' at <input>:1:15\n"
	if err == nil || !strings.HasPrefix(stderr, want) {
		t.Errorf("%%m as nobody: %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	stdout, stderr, err = asNobody(caps, read...)
	want = "ERROR: kernel long copy fault at 0xfffffffffffff000 [man error::fault] near identifier 'kernel_long' at <input>:1:64\n"
	if err == nil || stdout != "no string\n" || !strings.HasPrefix(stderr, want) {
		t.Errorf("kernel_string2 and kernel_long as nobody with CAP_BPF and CAP_PERFMON: %v, %q\nstderr:\n%s\nwant:\n%s",
			err, stdout, stderr, want)
	}
	// A uprobe needs CAP_SYS_ADMIN on this kernel: it is refused in one
	// line before the run (exit 1), and the -c command never runs untraced.
	uprobe := `global n probe process("libc.so.6").function("getenv") { n++ } probe end { println("end") }`
	stdout, stderr, err = asNobody(caps, "-e", uprobe, "-c", "echo ran")
	if code := exitCode(err); code != 1 || stdout != "" || !strings.Contains(stderr, "ERROR: user-space probes (uprobes) need root or CAP_SYS_ADMIN") {
		t.Errorf("a uprobe as nobody with CAP_BPF and CAP_PERFMON: exit %d, stdout %q, want 1 and none, stderr:\n%s", code, stdout, stderr)
	}
}

// exitCode is the exit status of a command that ended with err, -1 when it
// did not exit.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// TestDebianSyscallExamples runs Debian's SystemTap examples that need
// only the syscall tapset, or tracepoints whose variables they pick with
// @defined / @choose_defined (cycle_thief, kvm_service_time), unchanged
// (with their script arguments), on a small shell workload with -c, and
// checks that each reports what the workload did. (watchdog.stp reports through system("/usr/bin/pstack
// PID"), which Debian does not package: the shell's complaint on standard
// error shows that it fired for the sleeping command; it fires on the
// second tick of its timer, 40 ms, well within the 200 ms sleep.)
func TestDebianSyscallExamples(t *testing.T) {
	requireFeature(t, "bpf")
	workload := `sh -c "cat /etc/hostname > /dev/null; sleep 0.2; ls / > /dev/null"`
	archiveCommand, archive := archiveWorkload(1)
	for _, c := range []struct {
		script, want string
		args         []string
		stderr       string // a pattern standard error must match; empty: none
		command      string // the -c command, when not the shell workload
	}{
		{"io/iotime.stp", `(?m)^\d+ \d+ \(cat\) access "/etc/hostname" read: \d+ write: 0$`, nil, "", ""},
		{"io/iostats.stp", `(?m)^ +cat +\d+ +[1-9]\d* `, nil, "", ""},
		{"lwtools/rwtime-nd.stp", `(?m)^syscall read latency \(ns\):\n *value \|-+ count$`, nil, "", ""},
		{"process/wait4time.stp", `(?m)^\d+ \d+ \(sh\) wait4: \d+ -1$`, nil, "", ""},
		// sleep 0.2 sleeps 200,000 us or more: 7 digits on a busy machine
		{"process/sleeptime.stp", `(?m)^\d+ \d+ \(sleep\) clock_nanosleep: \d{6,}$`, nil, "", ""},
		{"process/futexes.stp", ``, nil, "", ""},
		{"general/alias_suffixes.stp", `(?m)^intervals for (close|read|write|open) -- min:\d+us avg:\d+us max:\d+us count:\d+`, nil, "", ""},
		{"general/func_time_stats.stp", `(?m)^intervals min:\d+us avg:\d+us max:\d+us count:[1-9]\d* variance:\d+$`,
			[]string{"syscall.clock_nanosleep"}, "", ""},
		{"lwtools/execsnoop-nd.stp", `(?m)^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} +0 +\d+ +\d+ +cat cat /etc/hostname$`, nil, "", ""},
		{"process/strace.stp", `(?m)^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\.\d{6} wait4\(-1, 0x[0-9a-f]+, 0x0, 0x0\) = \d+$`, nil, "", ""},
		{"general/watchdog.stp", `^$`, []string{"syscall.clock_nanosleep", "syscall.clock_nanosleep.return", "40"},
			`/usr/bin/pstack`, ""},
		// send and recv are never probes on x86_64 (tapset/socketcall.stp):
		// the datagram goes through sendto and recvfrom
		{"general/socket-events.stp", `^Socket 3 connect, wait \d+ us, send 5 bytes in \d+ us\nSocket 3 close\n$`, nil, "",
			`python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); ` +
				`s.sendto(b"hello", s.getsockname()); s.recvfrom(16); s.close()'`},
		// The pattern as an argument: filename is quoted, as stap's tapset
		// quotes it, so the example's own pattern (no quote before its $)
		// matches no name, under stap as here (TestRegexExample).
		{"general/regex.stp", `(?m)\Aopened "` + regexp.QuoteMeta(archive) + `"\n\z`, []string{regexp.QuoteMeta(archive) + `"$`}, "",
			archiveCommand},
		// @cast_module_sizeof in a kernel probe, a loop over the call's sembufs
		{"process/semop-watch.stp", `(?m)^Thread \d+ took \d+us to operate on set \d+ sems 2 0\n\nThread \d+ took \d+us to operate on set \d+ sems 1\n\n`,
			nil, "", "$CPROGS/semop"},
		// str_replace in a kernel probe, on execname() and cmdline_str()
		{"process/pstree.stp", `(?m)^PID\d+_2 \[ label="\(\d+\) /usr/bin/ls" tooltip="ls /" \];$`, nil, "", ""},
		// substr in a kernel probe, its value kept in an array; every
		// thread listed (-G top_threads), so that sleep's is among them; room for
		// every thread a busy machine runs in 5 s (the default 2048 overflowed in CI);
		// two reports, in case sleep starts late (at load 190 it missed the first)
		{"process/thread-business.stp", `(?m)^ +sleep +\d+ +\d+ clock_nanosleep `,
			[]string{"-G", "top_threads=100000", "-D", "MAXMAPENTRIES=32768"}, "", `sh -c "cat /etc/hostname > /dev/null; sleep 10.3"`},
		// task_uid/task_gid, uaddr_af/uaddr_ip, a loop up the parents to init
		{"network/connect_stat.stp", `(?m)^127\.0\.0\.1: driver\.test \(\d+\),0,0 -> (\S+ \(\d+\),\d+,\d+ -> )*\S+ \(1\),0,0$`,
			[]string{"127.0.0.1"}, "", "$WORKLOAD sockaddrs 1"},
		// user_uint64 and friends, an index of a @cast computed at run time
		{"io/traceaio.stp", `(?m)^\[ *0 aio\(\d+\):\] io_submit\(\d+, 2, 0x[0-9a-f]+\)\n` +
			` +iocb\[   0\]=0x[0-9a-f]+, fd=\d+, opcode=0, offset=0, nbytes=16, buf=0x[0-9a-f]+\n` +
			` +iocb\[   1\]=0x[0-9a-f]+, fd=\d+, opcode=7, offset=1, nbytes=2, buf=0x[0-9a-f]+\n` +
			` +iovec\[   0\]=0x[0-9a-f]+, base=0x[0-9a-f]+, len=4\n +iovec\[   1\]=0x[0-9a-f]+, base=0x[0-9a-f]+, len=8$`,
			nil, "", "$CPROGS/aio"},
		// int_arg(), uint_arg() and pointer_arg() in nd_syscall probes are
		// the call's arguments, entry and return alike (killsnoop's RESULT
		// column, int_arg(1) at return, is the signalled pid: stap's
		// tp_syscall reads the same register); opensnoop's in @entry
		{"lwtools/killsnoop-nd.stp", `(?m)^FROM   COMMAND      SIG   TO     RESULT\n(.|\n)*^\d+ +sh +15 +[1-9]\d* +[1-9]\d*$`, nil, "",
			`sh -c 'sleep 5 & kill $!'`},
		{"lwtools/accept2close-nd.stp", `(?m)^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \d+ +python3 +\d+ +\d+ ms$`, nil, "",
			`python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); ` +
				`c = socket.create_connection(s.getsockname()); a, _ = s.accept(); a.close()'`},
		{"lwtools/opensnoop-nd.stp", `(?m)^ +0 +\d+ +driver\.test +-2 /nonexistent/bpftap\.tar\.gz$`, nil, "",
			workloadCommand() + " archive 1"},
		// @defined($irq) ? $irq : $id: the kernel has irq_handler_entry's $irq.
		{"process/cycle_thief.stp", `(?m)^task \d+ migrated: \d+\n(.|\n)*^other pids taking processor from task \d+\n +PID +count command\n`, nil, "", ""},
		// @choose_defined($exit_reason, $vcpu->run->exit_reason): kvm_exit has no $exit_reason.
		{"virtualization/kvm_service_time.stp", `(?m)^# reason reason\(hex\): count sum\(us\) min\(us\) avg\(us\) max\(us\)$`, nil, "", ""},
	} {
		runDebianExample(t, c.script, c.want, c.args, c.stderr, fixedCommand(expandWorkload([]string{cmp.Or(c.command, workload)})[0]))
	}
}

// TestInterruptsByDevExample runs Debian's interrupts-by-dev.stp
// unchanged for 2 s while this process reads its own file with O_DIRECT
// (each read completed by the disk's interrupt). Its timer probe prints
// the name of each interrupt handler its irq_handler.entry probe counted,
// reading the name from the kernel's memory (package kmem): every name
// must be one /proc/interrupts shows.
func TestInterruptsByDevExample(t *testing.T) {
	requireFeature(t, "bpf")
	const script = "/usr/share/systemtap/examples/interrupt/interrupts-by-dev.stp"
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%v (CI installs systemtap-doc)", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				readDirectFrom(exe, 20)
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	status := Main([]string{"-T", "2", script}, strings.NewReader(""), &stdout, &stderr)
	close(done)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	header, rest, _ := strings.Cut(stdout.String(), "\n")
	lines := regexp.MustCompile(`(?m)^ +(\S+) :  +[1-9]\d*$`).FindAllStringSubmatch(rest, -1)
	if header != "\t  DEVICE \t NUMBER OF INTERRUPTS " || len(lines) == 0 || len(lines) != strings.Count(rest, "\n") {
		t.Fatalf("stdout is not a header and lines of device names and counts:\n%s", stdout.String())
	}
	interrupts, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !regexp.MustCompile(`(?m)[ ,]` + regexp.QuoteMeta(l[1]) + `(,|$)`).Match(interrupts) {
			t.Errorf("%q is no interrupt handler's name in /proc/interrupts:\n%s", l[1], interrupts)
		}
	}
}

// exampleCommand makes the -c command of a subtest, which may wait for
// the example's reports on its standard output.
type exampleCommand func(t *testing.T, stdout *reportWatch) string

// fixedCommand is a -c command that needs nothing of the subtest.
func fixedCommand(command string) exampleCommand {
	return func(*testing.T, *reportWatch) string { return command }
}

// runDebianExample runs one of Debian's examples, unchanged, as a
// subtest, with the script arguments args and the -c command the subtest
// makes: it must exit 0 with standard error matching stderr (empty:
// nothing) and print what want matches.
func runDebianExample(t *testing.T, script, want string, args []string, stderr string, command exampleCommand) {
	t.Helper()
	t.Run(filepath.Base(script), func(t *testing.T) {
		script := "/usr/share/systemtap/examples/" + script
		if _, err := os.Stat(script); err != nil {
			t.Fatalf("%v (CI installs systemtap-doc)", err)
		}
		stdout := newReportWatch(t)
		var errs bytes.Buffer
		argv := append([]string{"-w", "-c", command(t, stdout), script}, args...)
		status := Main(argv, strings.NewReader(""), stdout, &errs)
		if status != 0 || stderr == "" && errs.Len() > 0 || !regexp.MustCompile(stderr).MatchString(errs.String()) {
			t.Fatalf("exit status %d, stderr:\n%s", status, errs.String())
		}
		if !regexp.MustCompile(want).MatchString(stdout.String()) {
			t.Errorf("no match for %s in:\n%s", want, stdout.String())
		}
	})
}

// TestDebianTaskExamples runs Debian's examples that find tasks by pid
// (pid2task: proctop's proc_mem_*, signal.send's pid_name), name a parent
// (pexecname) or list ancestors (pstrace), unchanged, and checks that each
// reports what its workload did. proctop prints every second (-G
// interval=1, its documented option), all tasks it saw (show): the
// workload, named proctop-spinner (a link to this program), makes system
// calls until the shell kills it once a report of an interval it ran
// through has been printed (reportWatch; a fixed 1.5 s assumed the timer
// on time, which a busy machine's is not) (a task's last
// switches, after its memory is gone, record no memory: stap's too);
// pstrace_exec reports the exec of /bin/bash by a shell the target shell
// forked, among the machine's other execs of bash (it watches them all;
// pyenv's shims exec bash scripts).
func TestDebianTaskExamples(t *testing.T) {
	requireFeature(t, "task_from_pid")
	workload := workloadCommand()
	spinner := filepath.Join(t.TempDir(), "proctop-spinner")
	exe, err := os.Executable()
	if err != nil || os.Symlink(exe, spinner) != nil {
		t.Fatalf("linking %s to this program: %v", spinner, err)
	}
	for _, c := range []struct {
		script, want string
		args         []string
		command      exampleCommand
	}{
		{"process/proctop.stp", `(?m)^1 seconds: showing \d+ out of \d+ tasks\n +PID +Process +State +VirtMem +RSSMem +ShrdMem +CPU Time +User Time\n(.*\n)*^ +\d+ +proctop-spinner +[A-Z_]+ +[1-9]\d* +[1-9]\d* +[1-9]\d* +[1-9]\d* +\d+$`,
			[]string{"-G", "interval=1", "-G", "show=1000"}, func(_ *testing.T, out *reportWatch) string {
				return "sh -c 'BPFTAP_WORKLOAD=1 " + spinner + " getppid 1000000000 & " + out.waitFor("seconds: showing", 3) + "; kill $!'"
			}},
		{"process/spawn_seeker.stp", `(?m)^ +execname\(   PID\)    spawned \(percent\)\n(.*\n)* +driver\.test\( *\d+\) +[1-9]\d* \( *\d+%\)\n(.|\n)*^ +driver\.test +[1-9]\d* \( *\d+%\)$`,
			nil, fixedCommand(workload + " fork 3")},
		{"process/pstrace_exec.stp", `(?m)^process traceback:\n  sh\(\d+\) (sh\(\d+\) )+driver\.test\(\d+\)`,
			[]string{"bash"}, fixedCommand(`sh -c '/bin/bash -c true; true'`)},
		{"process/sigkill.stp", `(?m)^SIGKILL was sent to sleep \(pid:\d+\) by driver\.test uid:0$`, nil, fixedCommand(workload + " signals 2")},
		{"process/sig_by_pid.stp", `(?m)^SPID +SENDER +RPID +RECEIVER +SIGNAME +COUNT\n(.*\n)*^\d+ +driver\.test +\d+ +sleep +SIGKILL +1$`,
			nil, fixedCommand(workload + " signals 2")},
	} {
		runDebianExample(t, c.script, c.want, c.args, "", c.command)
	}
}

// TestProcMem compares what proc_mem_* say of a sleeping process with its
// /proc/PID/statm: the size, code and data pages are equal; the resident
// and file pages are the kernel's running totals, which trail statm's
// exact sums by at most a batch per CPU and counter (proc_mem.stp).
func TestProcMem(t *testing.T) {
	requireFeature(t, "task_from_pid")
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Wait()
	defer sleeper.Process.Kill()
	pid := strconv.Itoa(sleeper.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if stat, _ := os.ReadFile("/proc/" + pid + "/stat"); bytes.Contains(stat, []byte("(sleep) S")) || time.Now().After(deadline) {
			break
		}
	}
	statm, err := os.ReadFile("/proc/" + pid + "/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size, resident, shared, text, lib, data int64
	fmt.Sscan(string(statm), &size, &resident, &shared, &text, &lib, &data)
	var stdout, stderr bytes.Buffer
	script := `probe kernel.trace("raw_syscalls:sys_enter") {
		printf("%d %d %d %d %d\n%s\n", proc_mem_size($1), proc_mem_rss($1), proc_mem_shr($1), proc_mem_txt($1),
			proc_mem_data($1), proc_mem_string($1))
		exit()
	}`
	if status := Main([]string{"-e", script, pid}, strings.NewReader(""), &stdout, &stderr); status != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	var gotSize, gotRSS, gotShared, gotText, gotData int64
	fmt.Sscan(stdout.String(), &gotSize, &gotRSS, &gotShared, &gotText, &gotData)
	cpus := int64(runtime.NumCPU())
	slack := max(32, 2*cpus) * cpus // a percpu_counter's batch on every CPU
	if gotSize != size || gotText != text || gotData != data || abs(resident-gotRSS) > 3*slack || abs(shared-gotShared) > slack ||
		gotRSS == 0 || gotShared == 0 {
		t.Errorf("proc_mem_size, rss, shr, txt, data: %d %d %d %d %d; statm (size resident shared text lib data): %s",
			gotSize, gotRSS, gotShared, gotText, gotData, statm)
	}
	if !regexp.MustCompile(`\nsize: +[0-9.]+[KMG], rss: +[0-9.]+[KMG], shr: +[0-9.]+[KMG], txt: +[0-9.]+K, data: +[0-9.]+[KMG]\n$`).MatchString(stdout.String()) {
		t.Errorf("proc_mem_string: %q", stdout.String())
	}
}

func abs(n int64) int64 { return max(n, -n) }

// TestDebianStackExamples runs Debian's examples that print kernel stacks
// or read $bio through the tapset's aliases, unchanged, on small
// workloads. chng_cpu.stp's bash runs on the second CPU alone, so that
// each of its threads comes on a CPU other than the 0 the script starts
// from: a line for each, with the stack where it resumed. ioblktime.stp
// times the writes dd makes with O_DIRECT to a loop device of the test's,
// which nothing else writes: each of the 100 is counted (on the machine's
// disk, other processes' writes merged with dd's, whose times the script
// drops, or added to them).
// mbrwatch.stp watches the first sectors of whole disks, which this
// sandbox may not open (/dev/vda is refused): dd writes and reads sector 0
// of a loop device on a file of the test's instead. It watches every
// disk, so a second copy of the suite's dd shows too, on its own loop
// device, between and after this one's lines.
func TestDebianStackExamples(t *testing.T) {
	requireFeature(t, "bpf")
	frame := ` 0xffffffff[0-9a-f]{8} : \S+\+0x[0-9a-f]+/0x[0-9a-f]+ \[kernel\]\n`
	for _, c := range []struct {
		script, want string
		args         []string
		command      exampleCommand
	}{
		{"process/chng_cpu.stp", `(?m)^\nthread \d+ \(bash\) context switched on cpu1 state: 0\n(` + frame + `)+`,
			[]string{"bash"}, func(t *testing.T, _ *reportWatch) string {
				if runtime.NumCPU() < 2 {
					t.Skip("needs a second CPU for bash to change to")
				}
				return `taskset -c 1 bash -c "sleep 0.1; sleep 0.1; true"`
			}},
		{"io/ioblktime.stp", `(?m)\x1b\[1;1H\x1b\[J +device  rw total \(us\)      count   avg \(us\)\n(.*\n)* +loop\d+ +W +\d+ +100 +\d+$`, nil,
			func(t *testing.T, _ *reportWatch) string {
				return "dd if=/dev/zero of=" + loopDevice(t) + " bs=4k count=100 oflag=direct status=none"
			}},
		{"io/mbrwatch.stp", `(?m)^device (loop\d+) sector 0 write, process dd\[\d+\]\n(` + frame + `)*` +
			` 0xffffffff[0-9a-f]{8} : blkdev_write_iter\+.*\n(` + frame + `)+` +
			`(device loop\d+ sector 0 (write|read), process dd\[\d+\]\n(` + frame + `)+)*` +
			`device (loop\d+) sector 0 read, process dd\[\d+\]\n(` + frame + `)+`, nil,
			func(t *testing.T, _ *reportWatch) string {
				loop := loopDevice(t)
				return fmt.Sprintf("sh -c 'dd if=/dev/zero of=%s count=1 oflag=direct status=none && dd if=%[1]s of=/dev/null count=1 iflag=direct status=none'", loop)
			}},
	} {
		runDebianExample(t, c.script, c.want, c.args, "", c.command)
	}
}

// loopDevice attaches a loop device to a new 1 MiB file of the test's and
// returns its path; it is detached when the test ends. The test is skipped,
// with the reason, where loop devices cannot be attached.
func loopDevice(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device: losetup: %v: %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", loop).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", loop, err, out)
		}
	})
	return loop
}

// TestRegexExample runs Debian's regex.stp with its own pattern on
// syscall.open and, edited, on syscall.openat: the archive workload opens
// a .tar.gz of its own name with both calls. The pattern never matches
// the quoted filename (see TestDebianSyscallExamples); on the name itself
// (user_string2), it does, once for the workload's name, whatever other
// archives the machine's processes open meanwhile.
func TestRegexExample(t *testing.T) {
	requireFeature(t, "bpf")
	const example = "/usr/share/systemtap/examples/general/regex.stp"
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatalf("%v (CI installs systemtap-doc)", err)
	}
	quoted := string(data)
	unquoted := strings.ReplaceAll(quoted, "filename =~", `user_string2($filename, "") =~`)
	for _, c := range []struct {
		name, script string
		matches      bool
	}{
		{"open", quoted, false},
		{"openat", strings.ReplaceAll(quoted, "syscall.open ", "syscall.openat "), false},
		{"open_unquoted", unquoted, true},
		{"openat_unquoted", strings.ReplaceAll(unquoted, "syscall.open ", "syscall.openat "), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "regex.stp")
			if err := os.WriteFile(script, []byte(c.script), 0o644); err != nil {
				t.Fatal(err)
			}
			command, archive := archiveWorkload(1)
			var stdout, stderr bytes.Buffer
			status := Main([]string{"-w", "-c", command, script}, strings.NewReader(""), &stdout, &stderr)
			ours := strings.Count(stdout.String(), fmt.Sprintf("opened %q\n", archive))
			others := regexp.MustCompile(`(?m)^opened "[^"\n]*\.(tar\.(gz|bz2|xz)|zip|tgz|tbz)"\n`).ReplaceAllString(stdout.String(), "")
			if status != 0 || stderr.Len() > 0 || others != "" || c.matches != (ours == 1) || !c.matches && stdout.Len() > 0 {
				t.Errorf("exit status %d, stdout %q (want the workload's archive %s: %v), stderr:\n%s",
					status, stdout.String(), archive, c.matches, stderr.String())
			}
		})
	}
}

// TestStraceExample runs examples/strace.stp and strace itself on the same
// `ls -l` (ASLR off for both, so that most addresses agree too) and
// requires most of strace's lines, addresses aside, to come out identical
// (93% on this project's machine; the bar leaves room for a machine whose
// ls makes a call the example does not format as strace yet).
func TestStraceExample(t *testing.T) {
	requireFeature(t, "bpf")
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatalf("strace: %v (CI installs it)", err)
	}
	command := []string{"ls", "-l", "/etc/hostname", "/nonexistent"}
	theirs := filepath.Join(t.TempDir(), "strace.out")
	exec.Command("setarch", append([]string{"-R", "strace", "-o", theirs}, command...)...).Run()
	bin := filepath.Join(t.TempDir(), "bpftap")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bpftap").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ours, _ := exec.Command("setarch", "-R", bin, "../../examples/strace.stp", "-c", strings.Join(command, " ")).Output()
	want, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	address := regexp.MustCompile(`0x[0-9a-f]+`)
	count := map[string]int{}
	total := 0
	for _, line := range strings.Split(string(want), "\n") {
		if strings.Contains(line, "(") && !strings.HasPrefix(line, "+++") {
			count[address.ReplaceAllString(line, "0x")]++
			total++
		}
	}
	same := 0
	for _, line := range strings.Split(string(ours), "\n") {
		if k := address.ReplaceAllString(line, "0x"); count[k] > 0 {
			count[k]--
			same++
		}
	}
	if total < 50 || same*100 < total*85 {
		t.Errorf("%d of strace's %d lines identical (want 85%%); strace.stp printed:\n%s", same, total, ours)
	}
	t.Logf("%d of strace's %d lines identical", same, total)
}

// TestErrsnoopExample runs Debian's errsnoop.stp unchanged: every second,
// the most frequent failing calls of every process, by call, process,
// pid and arguments. The workload fails a number of opens no other run
// makes (2000 plus this process's pid modulo 1000), then waits until a
// report begun after its last open has been printed (a fixed sleep
// assumed the timer on time: at load 40 it was not); its counts, summed
// over the reports (its opens may straddle several on a busy machine)
// and listed to the 6000th, the array's size (other processes fail calls
// too: at load 40 the 1000 most frequent left its remainders out; -D
// MAXACTION lets the timer probe print them all), are that number, on the
// lines of one pid. A report of 6000 lines is of a full array: the
// script's error%[6000] wraps, dropping its oldest key, the workload's
// too when other processes failed 6000 other calls meanwhile (a second
// copy of the suite running); then its count is at most that number.
func TestErrsnoopExample(t *testing.T) {
	requireFeature(t, "bpf")
	const script = "/usr/share/systemtap/examples/process/errsnoop.stp"
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%v (CI installs systemtap-doc)", err)
	}
	n := 2000 + os.Getpid()%1000
	stdout := newReportWatch(t)
	command := fmt.Sprintf("sh -c '%s open %d; %s'", workloadCommand(), n, stdout.waitFor("HITS ERRSTR", 2))
	var stderr bytes.Buffer
	if status := Main([]string{"-w", "-D", "MAXACTION=100000", "-c", command, script, "1", "6000"}, strings.NewReader(""), stdout, &stderr); status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s\nstdout:\n%s", status, stderr.String(), stdout)
	}
	line := regexp.MustCompile(`(?m)^ *(\d+)   2/ENOENT +openat +driver\.test +(\d+) AT_FDCWD, "/nonexistent/bpftap", O_RDONLY\|O_CLOEXEC$`)
	byPid := map[string]int{}
	for _, m := range line.FindAllStringSubmatch(stdout.String(), -1) {
		hits, _ := strconv.Atoi(m[1])
		byPid[m[2]] += hits
	}
	wrapped := false
	for _, report := range strings.Split(stdout.String(), "HITS ERRSTR")[1:] {
		wrapped = wrapped || strings.Count(report, "\n") > 6000
	}
	for _, hits := range byPid {
		if hits == n || wrapped && hits > 0 && hits < n {
			if hits != n {
				t.Logf("%d of the %d failed opens counted: a report of 6000 lines, the array wrapped", hits, n)
			}
			return
		}
	}
	t.Errorf("no pid with %d failed opens (by pid: %v) in:\n%s", n, byPid, stdout.String())
}
