// Command harness is bpftap's benchmark: the seed experiment (ns added per
// system call by the `++` and `<<< 1` versions of syscalls_by_proc.stp)
// side by side with an empty-program floor, bpftrace, libbpf-tools
// syscount, SystemTap's own BPF runtime and strace, plus each tracer's
// start-up time (launch to probes attached). It writes a markdown report.
//
// Run it through bench/run.sh, which builds the binaries and gives the
// harness a private mount namespace with tracefs and debugfs mounted (the
// peers need them; nothing stays mounted afterwards).
//
// Algorithm: every round runs every case once, in a fresh random order.
// A case launches its tracer, waits until the kernel shows a BPF program
// of it attached to a system-call tracepoint (see attached.go; the wait is
// the start-up time), lets it settle, runs the getppid workload pinned to
// each CPU in turn, then interrupts the tracer and checks that its output
// counted the workload's calls. The ns a tracer adds per call is its run
// minus the same round's untraced run; the report gives medians over the
// rounds with order-statistic confidence intervals.
package main

import (
	"flag"
	"fmt"
	"github.com/bpftap/bpftap/bench/tracer"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

type config struct {
	rounds, n, straceDiv, oracleRounds int
	cpus                               []int
	settle                             time.Duration
	strace, stapbpf                    bool
	out, bin, scripts, oracle          string
	baseline                           string // a bpftap from another commit, measured beside this tree's
	seed                               uint64
}

// result gathers one case's measurements; per-round slices are indexed by
// round and hold NaN where a round has no value.
type result struct {
	ns        map[int][]float64 // by CPU
	startup   []float64         // ms
	uncounted int               // rounds whose output missed the workload's calls
	err       string
}

func main() {
	cfg := parseFlags()
	s := &setup{bin: cfg.bin, scripts: cfg.scripts, stapCache: stapCacheDir(), translate: map[string]float64{}}
	oracle := measureOracleStartup(cfg)
	if cfg.stapbpf {
		progress("translating the seed scripts for stapbpf (about 45 s each)")
	}
	cases := s.cases(cfg)
	results := runRounds(cfg, cases)
	results[oracleStartup] = oracle
	report := renderReport(cfg, s, cases, results)
	if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	progress("wrote " + cfg.out)
}

func parseFlags() *config {
	cfg := &config{}
	flag.IntVar(&cfg.rounds, "rounds", 9, "rounds; each runs every case once, in random order")
	flag.IntVar(&cfg.n, "n", 2_000_000, "getppid calls per workload run")
	cpus := flag.String("cpus", "0,1", "comma-separated CPUs to pin the workload to, one run each")
	flag.DurationVar(&cfg.settle, "settle", 200*time.Millisecond, "pause between attachment and the workload")
	flag.BoolVar(&cfg.strace, "strace", true, "include strace -c -f")
	flag.BoolVar(&cfg.stapbpf, "stapbpf", true, "include SystemTap's BPF runtime (translating takes ~90 s)")
	flag.IntVar(&cfg.straceDiv, "strace-div", 50, "strace runs n/strace-div calls (ptrace is slow)")
	flag.IntVar(&cfg.oracleRounds, "oracle-rounds", 1, "start-up runs of stap-oracle (about 45 s each; 0 skips)")
	flag.StringVar(&cfg.out, "o", "bench/RESULTS.md", "report file")
	flag.StringVar(&cfg.bin, "bin", "", "directory with the built harness, getppid, floor and bpftap")
	flag.StringVar(&cfg.scripts, "scripts", "bench/scripts", "directory of the seed scripts")
	flag.StringVar(&cfg.oracle, "oracle", "/work/shared/tools/stap-oracle", "stap-oracle path")
	flag.StringVar(&cfg.baseline, "baseline", "", "a bpftap binary built from another commit, measured in the same rounds (A/B)")
	flag.Uint64Var(&cfg.seed, "seed", uint64(time.Now().UnixNano()), "seed of the case order")
	flag.Parse()
	for _, c := range strings.Split(*cpus, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: bad -cpus %q\n", *cpus)
			os.Exit(2)
		}
		cfg.cpus = append(cfg.cpus, n)
	}
	if cfg.bin == "" {
		fmt.Fprintln(os.Stderr, "harness: -bin is required; run bench/run.sh")
		os.Exit(2)
	}
	cfg.scripts = absolute(cfg.scripts)
	if cfg.baseline != "" {
		cfg.baseline = absolute(cfg.baseline)
	}
	return cfg
}

func absolute(p string) string {
	if wd, err := os.Getwd(); err == nil && !strings.HasPrefix(p, "/") {
		return wd + "/" + p
	}
	return p
}

func stapCacheDir() string {
	if d := os.Getenv("STAP_ORACLE_DIR"); d != "" {
		return d
	}
	return "/var/tmp/stap-oracle"
}

func progress(msg string) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), msg)
}

// measureOracleStartup times stap-oracle on the seed script from launch to
// attachment: translation, stapbpf's load and attach. Its first run also
// prepares the kernel tree the stapbpf cases use.
func measureOracleStartup(cfg *config) *result {
	r := &result{}
	for i := range cfg.oracleRounds {
		progress(fmt.Sprintf("stap-oracle start-up, run %d/%d", i+1, cfg.oracleRounds))
		ms, _, err := attachOnce([]string{cfg.oracle, cfg.scripts + "/" + variants[0].file}, nil, 5*time.Minute)
		if err != nil {
			r.err = err.Error()
			return r
		}
		r.startup = append(r.startup, ms)
	}
	return r
}

// attachOnce launches a tracer, waits for its attachment, stops it and
// returns the start-up in ms and what it printed.
func attachOnce(argv, env []string, timeout time.Duration) (float64, string, error) {
	t, err := tracer.Launch(argv, env)
	if err != nil {
		return 0, "", err
	}
	d, err := t.WaitAttached(timeout)
	if err != nil {
		return 0, "", err
	}
	t.Stop()
	return float64(d.Microseconds()) / 1000, t.Stdout.String(), nil
}

func runRounds(cfg *config, cases []*tracerCase) map[string]*result {
	results := map[string]*result{}
	for _, c := range cases {
		r := &result{ns: map[int][]float64{}, err: c.skip}
		for _, cpu := range cfg.cpus {
			r.ns[cpu] = nanSlice(cfg.rounds)
		}
		results[c.name] = r
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	for round := range cfg.rounds {
		progress(fmt.Sprintf("round %d/%d", round+1, cfg.rounds))
		for _, i := range rng.Perm(len(cases)) {
			c, r := cases[i], results[cases[i].name]
			if r.err != "" {
				continue
			}
			if err := runCase(cfg, c, r, round); err != nil {
				r.err = err.Error()
				progress(c.name + ": " + r.err)
			}
		}
	}
	return results
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// runCase measures one case in one round.
func runCase(cfg *config, c *tracerCase, r *result, round int) error {
	workload := cfg.bin + "/getppid"
	if c.argv == nil || c.wrap {
		n := cfg.n
		if c.wrap {
			n /= cfg.straceDiv
		}
		return measureCPUs(cfg, r, round, func(cpu int) (float64, error) { return runWorkload(c.argv, workload, n, cpu) })
	}
	t, err := tracer.Launch(c.argv, c.env)
	if err != nil {
		return err
	}
	d, err := t.WaitAttached(60 * time.Second)
	if err != nil {
		return err
	}
	r.startup = append(r.startup, float64(d.Microseconds())/1000)
	time.Sleep(cfg.settle)
	err = measureCPUs(cfg, r, round, func(cpu int) (float64, error) { return runWorkload(nil, workload, cfg.n, cpu) })
	t.Stop()
	if c.counted && !showsCalls(t.Stdout.String(), cfg.n) {
		r.uncounted++
	}
	return err
}

func measureCPUs(cfg *config, r *result, round int, run func(cpu int) (float64, error)) error {
	for _, cpu := range cfg.cpus {
		ns, err := run(cpu)
		if err != nil {
			return err
		}
		r.ns[cpu][round] = ns
	}
	return nil
}
