// Command startup is bpftap's start-up benchmark (issues 27 and 39, after
// seed 002): how long a tracer takes from launch to exit (parse,
// translate, load, attach, run, detach) on scripts that do almost
// nothing, each command as a user types it, compared within each round
// with its peers against the targets:
//
//   - `probe begin { exit() }` against the bare process start of
//     `bpftap --version` and against bpftrace's `BEGIN { exit(); }`;
//   - the seed's counting script (count system calls by process, exit at
//     once) against `bpftap --version` and bpftrace's equivalent;
//   - `syscall.*` printing name(argstr) against `syscall_any` doing the
//     same, and `syscall.*.return` printing name and retval against
//     `syscall_any.return`;
//   - errno.stp's `syscall.*.return` against errno_any.stp's
//     `syscall_any.return`;
//   - `-T 1` on every `syscalls:sys_enter_*` tracepoint against `-T 1` on
//     `raw_syscalls:sys_enter`, both reading a context field (mostly the cost
//     of attaching and detaching hundreds of perf events);
//   - examples/strace.stp, without a peer (the largest programs a shipped
//     example loads: compared with -before only).
//
// bpftap keeps the programs it elaborated for the boot (the cache of
// programs: docs/options.md), as a user's second run of a script finds
// it; before the rounds every case runs once, untimed, so that every
// round measures such a run. A script's first run is measured too: the
// "first run" cases of the seed script, syscall.* and errno.stp and their
// peers add an extra script naming the run (-E 'probe never {} // N'), a
// program the cache has not seen, and their ratios are shown beside the
// targets, without one.
//
// bpftap runs on the machine as it is (where tracefs is not mounted,
// bpftap mounts it in a private namespace of its own, as a user's run
// does); bpftrace, which needs tracefs mounted, runs in a private mount
// namespace with tracefs and debugfs mounted, whose making (unshare, a
// shell, two mounts: a few milliseconds) its times include.
//
// Every round runs every case once, in a fresh random order; the report
// gives each case's median wall time, CPU time (user and system, the
// process and its children) and peak memory (the maximum resident set
// size the kernel reports for the process), each with a 95% interval,
// then each comparison's median per-round ratio beside its target. With
// -before BINARY (another build of bpftap, such as main's), every bpftap
// case also runs with it in the same rounds, and a third table gives
// each case's ratio to its twin. Build it as bench/startup.sh builds bin,
// CGO_ENABLED=0: a build with cgo starts 1-2 ms slower and 1.5 MiB larger
// (session 65 compared such a pair before seeing why --version differed).
//
// Run it through bench/startup.sh (root).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// startupCase is one command timed from launch to exit; a fresh one's
// runs are each a script's first (freshScript).
type startupCase struct {
	name  string
	argv  []string
	fresh bool
}

// comparison is a case against its peer, round by round, and the target
// of their ratio (0: none); twin says it is a before-and-after pair.
type comparison struct {
	c, peer *startupCase
	target  float64
	twin    bool
}

// memoryTarget is a bound on a case's peak memory, in MiB.
type memoryTarget struct {
	c   *startupCase
	mib float64
}

// sample is one run of a case: wall milliseconds, CPU milliseconds (user
// and system, the process and its children) and peak memory in MiB.
type sample struct{ ms, cpu, mib float64 }

const (
	seedScript     = `global s probe kernel.trace("sys_enter") { s[execname()]++ } probe begin { exit() }`
	seedBpftrace   = `tracepoint:raw_syscalls:sys_enter { @s[comm] = count(); } BEGIN { exit(); }`
	argstrScript   = `probe %s { if (pid() == target()) printf("%%s(%%s)\n", name, argstr) }`
	returnScript   = `probe %s { if (pid() == target()) printf("%%s = %%d\n", name, retval) }`
	tracepointTick = `global n probe kernel.trace("%s") { n <<< $%s }`
	// withTracefs runs its arguments in a private mount namespace with
	// tracefs and debugfs mounted (bpftrace looks for tracepoints there).
	withTracefs = `mountpoint -q /sys/kernel/debug || mount -t debugfs nodev /sys/kernel/debug
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
exec "$@"`
)

// suite is what a run measures.
type suite struct {
	cases       []*startupCase
	comparisons []comparison
	memory      []memoryTarget
	notes       []string // what was left out, and why
}

func main() {
	rounds := flag.Int("rounds", 9, "rounds; each runs every case once, in random order")
	bin := flag.String("bpftap", "./bpftap", "the bpftap binary")
	before := flag.String("before", "", "another bpftap binary (such as main's) whose cases run beside bin's in the same rounds")
	examples := flag.String("examples", "examples", "bpftap's examples directory")
	tick := flag.Bool("tick", true, "include the -T 1 tracepoint cases (about 1 s each)")
	settle := flag.Duration("settle", 50*time.Millisecond, "pause before each run, for the kernel to finish with the previous run's tracepoints (see suite.run)")
	out := flag.String("o", "", "report file (default: standard output); bench/RESULTS-startup.md keeps the runs quoted with what they show")
	flag.Parse()
	*examples, _ = filepath.Abs(*examples)
	s := newSuite(*bin, *before, *examples, *tick)
	times, errs := s.run(*rounds, *settle)
	report := s.render(times, errs, *rounds)
	if *out == "" {
		fmt.Print(report)
		return
	}
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "startup: wrote", *out)
}

// newSuite lays out the cases of bin (and of before, when given), the
// bpftrace cases when bpftrace is installed, and their comparisons.
func newSuite(bin, before, examples string, tick bool) *suite {
	s := &suite{}
	after := s.bpftapCases(bin, "", examples, tick)
	if before != "" {
		was := s.bpftapCases(before, " (before)", examples, tick)
		for i := range after.all {
			s.comparisons = append(s.comparisons, comparison{after.all[i], was.all[i], 0, true})
		}
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		s.notes = append(s.notes, "bpftrace is not installed: its cases and the ratios to them are left out (`apt-get install bpftrace`).")
		return s
	}
	seedPeer := s.add("bpftrace's equivalent of the seed script", tracefsArgv("bpftrace", "-e", seedBpftrace)...)
	beginPeer := s.add("bpftrace `BEGIN { exit(); }`", tracefsArgv("bpftrace", "-e", "BEGIN { exit(); }")...)
	s.comparisons = append(s.comparisons, comparison{after.begin, beginPeer, 0.03, false}, comparison{after.seed, seedPeer, 0.08, false})
	return s
}

// tracefsArgv is argv run by withTracefs.
func tracefsArgv(argv ...string) []string {
	return append([]string{"unshare", "-m", "--propagation", "private", "sh", "-c", withTracefs, "sh"}, argv...)
}

func (s *suite) add(name string, argv ...string) *startupCase {
	c := &startupCase{name: name, argv: argv}
	s.cases = append(s.cases, c)
	return c
}

// bpftapSet is the cases of one bpftap binary: all of them, and the two
// the bpftrace peers compare with.
type bpftapSet struct {
	all         []*startupCase
	begin, seed *startupCase
}

// bpftapCases adds the cases of one bpftap binary, their names ending in
// label, with the comparisons among them.
func (s *suite) bpftapCases(bin, label, examples string, tick bool) bpftapSet {
	var set bpftapSet
	bpftap := func(name string, args ...string) *startupCase {
		c := s.add(name+label, append([]string{bin}, args...)...)
		set.all = append(set.all, c)
		return c
	}
	compare := func(c, peer *startupCase, target float64) {
		s.comparisons = append(s.comparisons, comparison{c, peer, target, false})
	}
	// first adds the first-run twin of a case and compares it with peer's.
	first := func(c, peer *startupCase) *startupCase {
		f := bpftap(strings.Replace(strings.TrimSuffix(c.name, label), "bpftap ", "bpftap first run: ", 1), c.argv[1:]...)
		f.fresh = true
		if peer != nil {
			compare(f, peer, 0)
		}
		return f
	}
	version := bpftap("bpftap --version", "--version")
	set.begin = bpftap("bpftap `probe begin { exit() }`", "-e", "probe begin { exit() }")
	set.seed = bpftap("bpftap seed script (sys_enter by execname, begin exit)", "-e", seedScript)
	compare(set.begin, version, 2)
	compare(set.seed, version, 3)
	if label == "" {
		s.memory = append(s.memory, memoryTarget{set.seed, 20})
	}
	argstr := bpftap("bpftap `syscall.*` printing name(argstr)", "-e", fmt.Sprintf(argstrScript, "syscall.*"), "-c", "/bin/true")
	argstrAny := bpftap("bpftap `syscall_any` printing name(argstr)", "-e", fmt.Sprintf(argstrScript, "syscall_any"), "-c", "/bin/true")
	compare(argstr, argstrAny, 2.5)
	first(argstr, first(argstrAny, nil))
	first(set.seed, version)
	ret := bpftap("bpftap `syscall.*.return` printing name and retval", "-e", fmt.Sprintf(returnScript, "syscall.*.return"), "-c", "/bin/true")
	retAny := bpftap("bpftap `syscall_any.return` printing name and retval", "-e", fmt.Sprintf(returnScript, "syscall_any.return"), "-c", "/bin/true")
	compare(ret, retAny, 1.2)
	errno := bpftap("bpftap errno.stp, `syscall.*.return`", filepath.Join(examples, "errno.stp"), "-c", "/bin/true")
	errnoAny := bpftap("bpftap errno_any.stp, `syscall_any.return`", filepath.Join(examples, "errno_any.stp"), "-c", "/bin/true")
	compare(errno, errnoAny, 1.1)
	first(errno, first(errnoAny, nil))
	// strace.stp: syscall.* with argstr and a dozen joined probes, the
	// largest program a shipped example loads (no peer: tracked against
	// -before only)
	bpftap("bpftap strace.stp", filepath.Join(examples, "strace.stp"), "-c", "/bin/true")
	if tick {
		each := bpftap("bpftap -T 1, `syscalls:sys_enter_*` reading $__syscall_nr", "-T", "1", "-e", fmt.Sprintf(tracepointTick, "syscalls:sys_enter_*", "__syscall_nr"))
		raw := bpftap("bpftap -T 1, `raw_syscalls:sys_enter` reading $id", "-T", "1", "-e", fmt.Sprintf(tracepointTick, "raw_syscalls:sys_enter", "id"))
		compare(each, raw, 2)
	}
	return set
}

// run runs every case once a round, in a fresh random order each round,
// each after a pause of settle. A run that attaches the first program to
// a tracepoint (0 -> 1 of its probes) waits for an RCU grace period to end
// if the last 1 -> 0 of any tracepoint came within one (kernel/tracepoint.c:
// tp_rcu_cond_sync; one snapshot for every tracepoint): the previous case's
// detach. Back to back, 15 to 17 of 40 runs of the seed script attached
// 5-25 ms late (sched_switch or the same tracepoint before it); after 10 ms
// of pause 1 of 40, after 30 ms none. A user's runs are not milliseconds
// apart: without the pause every tracer's time would carry a share of the
// case before it.
func (s *suite) run(rounds int, settle time.Duration) (map[*startupCase][]sample, map[*startupCase]string) {
	times := map[*startupCase][]sample{}
	errs := map[*startupCase]string{}
	for _, c := range s.cases { // the cache of programs filled, as by a user's first run
		if !c.fresh {
			time.Sleep(settle)
			run(c)
		}
	}
	for r := range rounds {
		order := append([]*startupCase(nil), s.cases...)
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order {
			time.Sleep(settle)
			smp, err := run(c)
			if err != nil {
				errs[c] = err.Error()
				smp = sample{math.NaN(), math.NaN(), math.NaN()}
			}
			times[c] = append(times[c], smp)
		}
		fmt.Fprintf(os.Stderr, "startup: round %d of %d\n", r+1, rounds)
	}
	return times, errs
}

// freshRuns numbers the runs of the fresh cases.
var freshRuns int

// run times one launch-to-exit of c and reads its peak memory; a fresh
// case runs with an extra script naming the run (-E), which makes its
// program one the cache of programs does not hold.
func run(c *startupCase) (sample, error) {
	argv := c.argv
	if c.fresh {
		freshRuns++
		argv = append([]string{argv[0], "-E", fmt.Sprintf("probe never {} // run %d of pid %d", freshRuns, os.Getpid())}, argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	err := cmd.Run()
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, firstLine(stderr.String()))
	}
	var mib float64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		mib = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	cpu := float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / 1000
	return sample{ms, cpu, mib}, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
