// Command startup is bpftap's start-up benchmark (issue 27, after seed
// 002): how long a tracer takes from launch to exit (parse, translate,
// load, attach, run, detach) on scripts that do almost nothing, each beside
// its peer, in the same run:
//
//   - the seed's counting script (count system calls by process, exit at
//     once) against bpftrace's equivalent;
//   - `probe begin { exit() }` against bpftrace's `BEGIN { exit(); }`;
//   - `syscall.*` printing name(argstr) against `syscall_any` doing the same;
//   - errno.stp's `syscall.*.return` against errno_any.stp's
//     `syscall_any.return`;
//   - `-T 1` on every `syscalls:sys_enter_*` tracepoint against `-T 1` on
//     `raw_syscalls:sys_enter`, both reading a context field (mostly the cost
//     of attaching and detaching hundreds of perf events).
//
// Every round runs every case once, in a fresh random order; the report
// gives each case's median wall time with a 95% interval, the median of its
// per-round ratio to its peer beside the target, and its peak
// memory (the maximum resident set size the kernel reports for the
// process). With -before BINARY (another build of bpftap, such as main's),
// every bpftap case also runs with it in the same rounds, so a change's
// before and after compare in one run.
//
// Run it through bench/startup.sh (root; tracefs mounted in a private
// namespace for bpftrace and the per-syscall tracepoints).
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

	"github.com/bpftap/bpftap/bench/stats"
)

// startupCase is one command timed from launch to exit; a case with a peer
// is compared with it round by round against the target ratio.
type startupCase struct {
	name   string
	argv   []string
	peer   *startupCase
	target float64
}

// sample is one run of a case: wall milliseconds, CPU milliseconds (user
// and system, the process and its children) and peak memory in MiB.
type sample struct{ ms, cpu, mib float64 }

const (
	seedScript     = `global s probe kernel.trace("sys_enter") { s[execname()]++ } probe begin { exit() }`
	seedBpftrace   = `tracepoint:raw_syscalls:sys_enter { @s[comm] = count(); } BEGIN { exit(); }`
	argstrScript   = `probe %s { if (pid() == target()) printf("%%s(%%s)\n", name, argstr) }`
	tracepointTick = `global n probe kernel.trace("%s") { n <<< $%s }`
)

func main() {
	rounds := flag.Int("rounds", 9, "rounds; each runs every case once, in random order")
	bin := flag.String("bpftap", "./bpftap", "the bpftap binary")
	before := flag.String("before", "", "another bpftap binary (such as main's) whose cases run beside bin's in the same rounds")
	examples := flag.String("examples", "examples", "bpftap's examples directory")
	out := flag.String("o", "bench/RESULTS-startup.md", "report file")
	flag.Parse()
	*examples, _ = filepath.Abs(*examples)
	cases := startupCases(*bin, *before, *examples)
	times := map[*startupCase][]sample{}
	errs := map[*startupCase]string{}
	for r := range *rounds {
		order := append([]*startupCase(nil), cases...)
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, c := range order {
			s, err := run(c)
			if err != nil {
				errs[c] = err.Error()
				s = sample{math.NaN(), math.NaN(), math.NaN()}
			}
			times[c] = append(times[c], s)
		}
		fmt.Fprintf(os.Stderr, "startup: round %d of %d\n", r+1, *rounds)
	}
	report := render(cases, times, errs, *rounds)
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "startup: wrote", *out)
}

// startupCases returns the cases: bpftap's with bin, each peer of bpftap's
// own right after the case that refers to it, then bpftrace's; with before
// (another build of bpftap, such as main's), the bpftap cases again with it,
// named with " (before)", against the same bpftrace cases.
func startupCases(bin, before, examples string) []*startupCase {
	seedPeer := &startupCase{name: "bpftrace's equivalent of the seed script", argv: []string{"bpftrace", "-e", seedBpftrace}}
	beginPeer := &startupCase{name: "bpftrace `BEGIN { exit(); }`", argv: []string{"bpftrace", "-e", "BEGIN { exit(); }"}}
	cases := bpftapCases(bin, "", examples, seedPeer, beginPeer)
	if before != "" {
		cases = append(cases, bpftapCases(before, " (before)", examples, seedPeer, beginPeer)...)
	}
	return append(cases, seedPeer, beginPeer)
}

// bpftapCases are the cases of one bpftap binary, their names ending in label.
func bpftapCases(bin, label, examples string, seedPeer, beginPeer *startupCase) []*startupCase {
	bpftap := func(name string, args ...string) *startupCase {
		return &startupCase{name: name + label, argv: append([]string{bin}, args...)}
	}
	anyPeer := bpftap("bpftap `syscall_any` printing name(argstr)", "-e", fmt.Sprintf(argstrScript, "syscall_any"), "-c", "/bin/true")
	anyReturnPeer := bpftap("bpftap errno_any.stp, `syscall_any.return`", filepath.Join(examples, "errno_any.stp"), "-c", "/bin/true")
	rawPeer := bpftap("bpftap -T 1, `raw_syscalls:sys_enter` reading $id", "-T", "1", "-e", fmt.Sprintf(tracepointTick, "raw_syscalls:sys_enter", "id"))
	compared := func(c, peer *startupCase, target float64) *startupCase {
		c.peer, c.target = peer, target
		return c
	}
	return []*startupCase{
		compared(bpftap("bpftap seed script (sys_enter by execname, begin exit)", "-e", seedScript), seedPeer, 0.35),
		compared(bpftap("bpftap `probe begin { exit() }`", "-e", "probe begin { exit() }"), beginPeer, 0.2),
		compared(bpftap("bpftap `syscall.*` printing name(argstr)", "-e", fmt.Sprintf(argstrScript, "syscall.*"), "-c", "/bin/true"), anyPeer, 4),
		anyPeer,
		compared(bpftap("bpftap errno.stp, `syscall.*.return`", filepath.Join(examples, "errno.stp"), "-c", "/bin/true"), anyReturnPeer, 1.2),
		anyReturnPeer,
		compared(bpftap("bpftap -T 1, `syscalls:sys_enter_*` reading $__syscall_nr", "-T", "1", "-e", fmt.Sprintf(tracepointTick, "syscalls:sys_enter_*", "__syscall_nr")), rawPeer, 2),
		rawPeer,
	}
}

// run times one launch-to-exit of c and reads its peak memory.
func run(c *startupCase) (sample, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
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

// render writes the report: medians, intervals, paired ratios, targets.
func render(cases []*startupCase, times map[*startupCase][]sample, errs map[*startupCase]string, rounds int) string {
	var b strings.Builder
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "# Start-up (issue 27)\n\nWritten by `bench/startup.sh`, %s on %s; %d rounds; load average at the end: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	b.WriteString("Each case runs from launch to exit (parse, translate, load, attach, run, detach). ")
	b.WriteString("Milliseconds and peak memory (max RSS), median [95% interval of the median]; × peer is the median of the per-round ratio to the peer named, beside the issue's target. ")
	b.WriteString("CPU is the user and system time of the process and its children (the -c command's too): on a busy machine it moves far less than the wall time, though it does not count the work two CPUs do at once only once.\n\n")
	b.WriteString("| case | ms | × peer | CPU ms | CPU × peer | peer | target | max RSS MiB | n |\n|---|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, c := range cases {
		ms := stats.Summarize(stats.Finite(field(times[c], msOf)))
		if ms.N == 0 {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | | | 0 |\n", c.name, errs[c])
			continue
		}
		ratio, cpuRatio, peer, target := "", "", "", ""
		if c.peer != nil {
			ratio, cpuRatio = pairedRatio(times, c, msOf), pairedRatio(times, c, cpuOf)
			peer, target = c.peer.name, fmt.Sprintf("≤ %.2f", c.target)
		}
		cpu := stats.Summarize(stats.Finite(field(times[c], cpuOf)))
		mib := stats.Summarize(stats.Finite(field(times[c], mibOf)))
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", c.name, ms.Format(1), ratio, cpu.Format(1), cpuRatio, peer, target, mib.Format(1), ms.N)
	}
	return b.String()
}

// pairedRatio is the summary of c's measure over its peer's, round by round.
func pairedRatio(times map[*startupCase][]sample, c *startupCase, measure func(sample) float64) string {
	return stats.Summarize(stats.Finite(ratios(field(times[c], measure), field(times[c.peer], measure)))).Format(2)
}

func msOf(s sample) float64  { return s.ms }
func cpuOf(s sample) float64 { return s.cpu }
func mibOf(s sample) float64 { return s.mib }

// field picks one measure of every sample.
func field(xs []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// ratios divides xs by ref round by round (NaN where either is missing).
func ratios(xs, ref []float64) []float64 {
	return stats.Paired(xs, ref, func(x, r float64) float64 {
		if r > 0 {
			return x / r
		}
		return math.NaN()
	})
}
