package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The guest side: `kfunc -guest`, run by the guest's /init as /bench/run.
// It prints one line a measurement on its standard output,
//
//	hit CASE ROUND NS_PER_READ
//	start CASE ROUND ATTACHED_MS EXIT_MS STATUS
//	funcs PATTERN COUNT
//	info TEXT
//
// and on its standard error what the tracers printed in the first round
// (their -v pass lines, their counts), for the report's notes.

// A tracer is a case: a command line started on CPU 0, attached once a line
// of its output matches ready (nil: the case runs untraced).
type tracer struct {
	name     string
	argv     []string
	ready    *regexp.Regexp
	bpftrace bool     // needs bpftrace in the guest
	env      []string // more of the command's environment
}

var (
	bpftapReady   = regexp.MustCompile(`^Pass 5: attached`)
	emptyReady    = regexp.MustCompile(`^empty: attached`)
	bpftraceReady = regexp.MustCompile(`^Attaching `)
)

func bpftap(name, script string) tracer {
	return tracer{name: name, argv: []string{"/bin/bpftap", "-v", "-e", script}, ready: bpftapReady}
}

// asOf510 runs t's bpftap with the fallbacks of Linux 5.10 (on a newer
// guest: what the fallbacks themselves cost, on the same kernel).
func asOf510(t tracer) tracer {
	t.env = []string{"BPFTAP_KERNEL_AS_OF=5.10"}
	return t
}

func bpftrace(name, script string) tracer {
	return tracer{name: name, argv: []string{"/usr/bin/bpftrace", "-e", script}, ready: bpftraceReady, bpftrace: true}
}

// hitCases are the per-hit cases: vfs_read under the read loop, and the
// seed's counting script on sys_enter, which each read enters too (issue
// 33's: its instructions per event on 5.10 against 6.12), beside
// bench/floor's programs on the same hook: the empty one (the kernel's
// charge for running any program) and the hand-written count by name.
func hitCases() []tracer {
	return []tracer{
		{name: "untraced"},
		bpftap("bpftap_seed", seedScript),
		asOf510(bpftap("bpftap_seed_as510", seedScript)),
		{name: "empty_seed", argv: []string{"/bench/kfunc", "-floor", "empty"}, ready: emptyReady},
		{name: "count_seed", argv: []string{"/bench/kfunc", "-floor", "count"}, ready: emptyReady},
		{name: "empty_fentry", argv: []string{"/bench/kfunc", "-empty", "fentry", "vfs_read"}, ready: emptyReady},
		{name: "empty_kprobe", argv: []string{"/bench/kfunc", "-empty", "kprobe", "vfs_read"}, ready: emptyReady},
		bpftap("bpftap_fentry", `global n; probe kernel.function("vfs_read") { n++ }`),
		bpftap("bpftap_kprobe", `global n; probe kprobe.function("vfs_read") { n++ }`),
		bpftrace("bpftrace_fentry", `kfunc:vfs_read { @n = count(); }`),
		bpftrace("bpftrace_kprobe", `kprobe:vfs_read { @n = count(); }`),
	}
}

// seedScript is the seed's counting script (SystemTap's
// syscalls_by_proc): the system calls of each process, by name.
const seedScript = `global s; probe kernel.trace("sys_enter") { s[execname()]++ }`

// startCases are the start-up cases: launch to attached (bpftap -v's
// "Pass 5: attached") and launch to exit, the script exiting from its
// begin probe once everything is attached.
func startCases(wide string) []tracer {
	// A probe with an empty body is elided (as stap does): each counts.
	kf := func(point string) string { return `global n; probe ` + point + ` { n++ } probe begin { exit() }` }
	bt := func(point string) string { return point + ` { @n = count(); } BEGIN { exit() }` }
	return []tracer{
		bpftap("bpftap_seed_start", seedScript+` probe begin { exit() }`),
		bpftap("bpftap_tp", kf(`kernel.trace("sched:sched_switch")`)),
		bpftap("bpftap_one", kf(`kernel.function("vfs_read")`)),
		bpftap("bpftap_one_kprobe", kf(`kprobe.function("vfs_read")`)),
		bpftap("bpftap_vfs", kf(`kernel.function("vfs_*")`)),
		bpftap("bpftap_vfs_kprobe", kf(`kprobe.function("vfs_*")`)),
		bpftap("bpftap_tcp", kf(`kernel.function("tcp_*")`)),
		bpftap("bpftap_tcp_kprobe", kf(`kprobe.function("tcp_*")`)),
		bpftap("bpftap_wide", kf(`kernel.function("`+wide+`")`)),
		bpftap("bpftap_wide_kprobe", kf(`kprobe.function("`+wide+`")`)),
		bpftrace("bpftrace_tp", bt(`tracepoint:sched:sched_switch`)),
		bpftrace("bpftrace_one", bt(`kprobe:vfs_read`)),
		bpftrace("bpftrace_vfs", bt(`kprobe:vfs_*`)),
		bpftrace("bpftrace_vfs_fentry", bt(`kfunc:vfs_*`)),
		bpftrace("bpftrace_tcp", bt(`kprobe:tcp_*`)),
		bpftrace("bpftrace_wide", bt(`kprobe:`+wide)),
	}
}

// guestOptions are the guest driver's flags, passed from the host.
type guestOptions struct {
	hitRounds, startRounds, wideRounds int
	reads, repeat                      int
	startTimeout                       time.Duration
	wide                               string
	cases                              *regexp.Regexp
	settle                             time.Duration
}

func guestMain(o guestOptions) {
	withBpftrace := true
	if out, err := exec.Command("/usr/bin/bpftrace", "--version").CombinedOutput(); err != nil {
		fmt.Printf("info bpftrace cannot run: %v: %s\n", err, oneLine(out))
		withBpftrace = false
	} else {
		fmt.Printf("info %s\n", oneLine(out))
	}
	countFunctions(append([]string{"vfs_*", "tcp_*", o.wide}, candidates...))

	keep := func(ts []tracer) []tracer {
		var out []tracer
		for _, t := range ts {
			if (withBpftrace || !t.bpftrace) && o.cases.MatchString(t.name) {
				out = append(out, t)
			}
		}
		return out
	}
	hits := keep(hitCases())
	for r := range o.hitRounds {
		for _, t := range rotate(hits, r) {
			ns, err := hitRun(t, o, r == 0)
			if err != nil {
				fmt.Fprintf(os.Stderr, "hit %s round %d: %v\n", t.name, r, err)
				continue
			}
			say("hit %s %d %s\n", t.name, r, ns)
		}
	}
	starts := keep(startCases(o.wide))
	for r := range max(o.startRounds, o.wideRounds) {
		var round []tracer
		for _, t := range starts {
			if wide := strings.Contains(t.name, "_wide"); wide && r >= o.wideRounds || !wide && r >= o.startRounds {
				continue
			}
			round = append(round, t)
		}
		for _, t := range rotate(round, r) {
			attached, exited, status := startRun(t, o.startTimeout, r == 0)
			say("start %s %d %.1f %.1f %d\n", t.name, r, ms(attached), ms(exited), status)
		}
	}
}

// candidates are patterns whose function counts the guest reports, to pick
// a wide one.
var candidates = []string{"*_read*", "*_get*", "*_init*", "*_alloc*", "*_free*", "*lock*", "*_show*", "security_*", "__x64_sys_*"}

// countFunctions prints how many traceable functions (tracefs's
// available_filter_functions, module functions included, names counted
// once) each pattern matches.
func countFunctions(patterns []string) {
	data, err := os.ReadFile("/sys/kernel/tracing/available_filter_functions")
	if err != nil {
		fmt.Printf("info %v\n", err)
		return
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names[f[0]] = true
		}
	}
	fmt.Printf("funcs * %d\n", len(names))
	seen := map[string]bool{}
	for _, p := range patterns {
		if seen[p] {
			continue
		}
		seen[p] = true
		n := 0
		for name := range names {
			if ok, _ := path.Match(p, name); ok {
				n++
			}
		}
		say("funcs %s %d\n", p, n)
	}
}

// hitRun runs the read loop on the guest's last CPU (1; 0 in a guest of one
// CPU, as -qemu "-smp 1" makes for kernels that do not bring up a second
// CPU under icount), untraced or under t started on CPU 0, and returns its
// ns per read.
func hitRun(t tracer, o guestOptions, verbose bool) (string, error) {
	var p *proc
	if t.argv != nil {
		var err error
		p, err = launch(t)
		if err != nil {
			return "", err
		}
		if _, ok := p.waitReady(2 * time.Minute); !ok {
			p.stop(time.Minute)
			return "", fmt.Errorf("not attached: %s", p.text())
		}
		time.Sleep(o.settle)
	}
	best, err := math.Inf(1), error(nil)
	for range o.repeat {
		out, e := exec.Command("taskset", "-c", fmt.Sprint(runtime.NumCPU()-1), "/bench/readloop", fmt.Sprint(o.reads)).Output()
		v, perr := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if e != nil || perr != nil {
			err = fmt.Errorf("readloop: %v %v", e, perr)
			break
		}
		best = math.Min(best, v)
	}
	if p != nil {
		status := p.stop(time.Minute)
		if verbose || status != 0 {
			fmt.Fprintf(os.Stderr, "=== %s (status %d)\n%s", t.name, status, p.text())
		}
		// the kernel frees a tracer's maps and programs after its exit,
		// in a workqueue and RCU callbacks: on a guest of one CPU that
		// work was counted in the next case's reads (untraced after the
		// per-CPU hash of count_seed: 905 instructions a read, not 855)
		time.Sleep(o.settle)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%.1f", best), nil
}

// startRun launches t and returns the time to its ready line (0 if it
// never printed one), the time to its exit, and its exit status.
func startRun(t tracer, timeout time.Duration, verbose bool) (attached, exited time.Duration, status int) {
	start := time.Now()
	p, err := launch(t)
	if err != nil {
		fmt.Fprintf(os.Stderr, "=== %s: %v\n", t.name, err)
		return 0, 0, -1
	}
	at, _ := p.waitReady(timeout)
	if !at.IsZero() {
		attached = at.Sub(start)
	}
	status = p.wait(max(time.Minute, timeout-time.Since(start)))
	exited = time.Since(start)
	if verbose || status != 0 {
		fmt.Fprintf(os.Stderr, "=== %s (status %d, %v)\n%s", t.name, status, exited.Round(time.Millisecond), p.text())
	}
	return attached, exited, status
}

// say prints a measurement on the standard output and on the console too,
// so that a guest stopped short still shows what it measured.
func say(format string, args ...any) {
	fmt.Printf(format, args...)
	if console != nil {
		fmt.Fprintf(console, "bench: "+format, args...)
	}
}

var console, _ = os.OpenFile("/dev/console", os.O_WRONLY, 0)

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// proc is a running tracer whose output lines are collected and watched.
type proc struct {
	cmd   *exec.Cmd
	ready chan time.Time
	done  chan struct{}
	mu    sync.Mutex
	lines []string
}

// launch starts t's command on CPU 0, its standard output and error on one
// pipe.
func launch(t tracer) (*proc, error) {
	cmd := exec.Command("taskset", append([]string{"-c", "0"}, t.argv...)...)
	// bpftrace refuses more than 512 probes unless told (without
	// kprobe-multi each function of a wildcard is a probe).
	cmd.Env = append(append(os.Environ(), "BPFTRACE_MAX_PROBES=100000"), t.env...)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w.Close()
	p := &proc{cmd: cmd, ready: make(chan time.Time, 1), done: make(chan struct{})}
	go p.read(r, t.ready)
	return p, nil
}

func (p *proc) read(r io.ReadCloser, ready *regexp.Regexp) {
	defer close(p.done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	sent := false
	for sc.Scan() {
		now := time.Now()
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.mu.Unlock()
		if !sent && ready != nil && ready.MatchString(sc.Text()) {
			p.ready <- now
			sent = true
		}
	}
}

// waitReady waits for the ready line, the end of the output or the timeout.
func (p *proc) waitReady(timeout time.Duration) (time.Time, bool) {
	select {
	case at := <-p.ready:
		return at, true
	case <-p.done:
		select {
		case at := <-p.ready:
			return at, true
		default:
			return time.Time{}, false
		}
	case <-time.After(timeout):
		return time.Time{}, false
	}
}

// stop sends SIGINT, as Ctrl-C does, and waits for the exit.
func (p *proc) stop(timeout time.Duration) int {
	p.cmd.Process.Signal(syscall.SIGINT)
	return p.wait(timeout)
}

// wait waits for the exit (SIGKILL after timeout) and the end of the output;
// it returns the exit status (-1 when killed by a signal).
func (p *proc) wait(timeout time.Duration) int {
	t := time.AfterFunc(timeout, func() { p.cmd.Process.Kill() })
	defer t.Stop()
	p.cmd.Wait()
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// rotate returns ts starting at index r (mod len): each round begins with
// another case, so no case always follows the same one.
func rotate(ts []tracer, r int) []tracer {
	if len(ts) == 0 {
		return nil
	}
	r %= len(ts)
	return append(append([]tracer{}, ts[r:]...), ts[:r]...)
}

func oneLine(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
