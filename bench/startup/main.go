// Command startup is bpftap's seed-002 benchmark: how long a tracer takes
// to run errno.stp's question (which system calls fail, by process) around
// a command that does nothing (`-c true`), from launch to exit: parse,
// translate, load, attach, run, detach. SystemTap's lesson was that
// syscall.*.return costs seconds where syscall_any.return costs a fraction;
// this puts bpftap's two forms beside bpftrace's (one probe per call, and
// the raw tracepoint) and SystemTap's BPF runtime (through stap-oracle).
//
// Every round runs every case once, in a fresh random order; the report
// gives each case's median wall time with a 95% interval, and its ratio to
// bpftap's syscall_any.return form paired round by round.
//
// Run it through bench/startup.sh (root; tracefs mounted in a private
// namespace for bpftrace).
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
	"time"

	"github.com/bpftap/bpftap/bench/stats"
)

// startupCase is one command timed from launch to exit.
type startupCase struct {
	name string
	argv []string
	ref  bool // the reference of the ratios
}

const (
	bpftraceEach = `tracepoint:syscalls:sys_exit_* /args->ret < 0/ { @[pid, probe, args->ret, comm] = count(); }`
	bpftraceRaw  = `tracepoint:raw_syscalls:sys_exit /args->ret < 0/ { @[pid, args->id, args->ret, comm] = count(); }`
)

func main() {
	rounds := flag.Int("rounds", 15, "rounds; each runs every case once, in random order")
	bin := flag.String("bpftap", "./bpftap", "the bpftap binary")
	examples := flag.String("examples", "examples", "bpftap's examples directory")
	oracle := flag.String("oracle", "/work/shared/tools/stap-oracle", "stap-oracle path ('' skips SystemTap)")
	oracleRounds := flag.Int("oracle-rounds", 3, "rounds of the SystemTap cases (each takes seconds)")
	out := flag.String("o", "bench/RESULTS-startup.md", "report file")
	flag.Parse()
	*examples, _ = filepath.Abs(*examples)
	cases := []*startupCase{
		{name: "bpftap errno.stp, `syscall.*.return`", argv: []string{*bin, filepath.Join(*examples, "errno.stp"), "-c", "/bin/true"}},
		{name: "bpftap errno_any.stp, `syscall_any.return`", argv: []string{*bin, filepath.Join(*examples, "errno_any.stp"), "-c", "/bin/true"}, ref: true},
		{name: "bpftap `syscall.*` printing name(argstr)", argv: []string{*bin, "-e", `probe syscall.* { if (pid() == target()) printf("%s(%s)\n", name, argstr) }`, "-c", "/bin/true"}},
		{name: "bpftrace `tracepoint:syscalls:sys_exit_*`", argv: []string{"bpftrace", "-e", bpftraceEach, "-c", "/bin/true"}},
		{name: "bpftrace `tracepoint:raw_syscalls:sys_exit`", argv: []string{"bpftrace", "-e", bpftraceRaw, "-c", "/bin/true"}},
	}
	var slow []*startupCase
	if *oracle != "" {
		slow = []*startupCase{
			{name: "SystemTap BPF runtime, errno.stp `syscall.*.return`", argv: []string{*oracle, filepath.Join(*examples, "errno.stp"), "-c", "/bin/true"}},
			{name: "SystemTap BPF runtime, errno_any.stp `syscall_any.return`", argv: []string{*oracle, filepath.Join(*examples, "errno_any.stp"), "-c", "/bin/true"}},
		}
		for _, c := range slow { // the first run translates; later ones hit stap's cache
			run(c)
		}
	}
	times := map[*startupCase][]float64{}
	errs := map[*startupCase]string{}
	for r := range *rounds {
		all := append([]*startupCase(nil), cases...)
		if r < *oracleRounds {
			all = append(all, slow...)
		}
		rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		for _, c := range all {
			ms, err := run(c)
			if err != nil {
				errs[c] = err.Error()
				ms = math.NaN()
			}
			times[c] = append(times[c], ms)
		}
		fmt.Fprintf(os.Stderr, "startup: round %d of %d\n", r+1, *rounds)
	}
	report := render(append(cases, slow...), times, errs, *rounds)
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "startup: wrote", *out)
}

// run times one launch-to-exit of c in milliseconds.
func run(c *startupCase) (float64, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	err := cmd.Run()
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, firstLine(stderr.String()))
	}
	return ms, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// render writes the report: medians, intervals, paired ratios.
func render(cases []*startupCase, times map[*startupCase][]float64, errs map[*startupCase]string, rounds int) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Start-up of errno.stp (seed 002)\n\nWritten by `bench/startup.sh`, %s on %s; %d rounds (SystemTap: fewer, see n).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, rounds)
	b.WriteString("Each case runs the question of the seed's errno.stp around `-c /bin/true`, launch to exit (parse, translate, load, attach, run, detach). ")
	b.WriteString("Milliseconds, median [95% interval of the median]; × is the median of the per-round ratio to bpftap's `syscall_any.return` form.\n\n")
	b.WriteString("| case | ms | × syscall_any.return | n |\n|---|---:|---:|---:|\n")
	var ref []float64
	for _, c := range cases {
		if c.ref {
			ref = times[c]
		}
	}
	for _, c := range cases {
		s := stats.Summarize(stats.Finite(times[c]))
		if s.N == 0 {
			fmt.Fprintf(&b, "| %s | failed: %s | | 0 |\n", c.name, errs[c])
			continue
		}
		ratio := stats.Summarize(stats.Finite(ratios(times[c], ref)))
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", c.name, s.Format(1), ratio.Format(2), s.N)
	}
	return b.String()
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
