// Command nginx is bpftap's seed-001 benchmark: the throughput nginx keeps
// (requests/s under wrk, loopback only) while system calls are counted,
// system-wide and filtered in the kernel to one process, by bpftap, by
// libbpf-tools syscount and by bpftrace, beside two floors (the floor
// tool's empty BPF program, what every tracer pays, and bpftap's own empty
// probe), a reference case (a hand-written per-CPU count by process name)
// and no tracer at all.
//
// The machine's throughput drifts by several percent within minutes and
// drops by 20-40% for seconds at a time (other tenants of the host), so
// a traced run is only compared with untraced runs made just before and
// just after it: every round runs the cases once each in a fresh random
// order, each bracketed by untraced runs (U c1 U c2 U ... cN U), and a
// case's figure for the round is its requests/s over the mean of its two
// neighbours. The report gives, for each case, the median of those ratios
// over the rounds with a 95% bootstrap interval, twice: over every
// bracket, and over the steady brackets alone, those whose two untraced
// runs agree within -steady (the machine did not change speed across the
// traced run; the choice looks at untraced runs only, so it favours no
// case). Each tracer's distance from the empty-program floor is paired
// per round too, in points of untraced throughput.
//
// nginx (one worker, no master) runs on CPU 1, wrk and the tracers' own
// processes on CPU 0: the BPF programs run where the system calls are
// made. Run it through bench/nginx.sh (root; builds the tools, mounts
// tracefs in a private namespace, needs nginx and wrk: apt-get install
// nginx wrk).
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
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bpftap/bpftap/bench/tracer"
)

type config struct {
	rounds          int
	duration        time.Duration
	connections     int
	steady          float64
	bin, scripts    string
	serverCPU, load string
	only            string
	out             string
}

// nginxCase is one row: a tracer command, with {NGINX} and {OTHER}
// standing for the pids it is filtered to.
type nginxCase struct {
	name string
	argv []string
}

// bracket is one traced run with the untraced runs on either side of it.
type bracket struct {
	traced, before, after float64
}

// ratio is the traced run's requests/s over its neighbours' mean.
func (b bracket) ratio() float64 { return b.traced / ((b.before + b.after) / 2) }

// steady reports whether the two untraced runs agree within tolerance.
func (b bracket) steady(tolerance float64) bool {
	return math.Abs(b.before/b.after-1) <= tolerance
}

const (
	port      = "18080"
	floorName = "empty BPF program on sys_enter (floor tool)"
	// ownFloorName is bpftap's own empty program: an empty probe, kept
	// with -u (stap elides it), with bpftap's process running beside it
	ownFloorName = "bpftap, empty probe on sys_enter (-u)"
)

func main() {
	cfg := &config{}
	flag.IntVar(&cfg.rounds, "rounds", 30, "rounds; each runs every case once, in random order, between untraced runs")
	flag.DurationVar(&cfg.duration, "d", 2*time.Second, "wrk duration per run")
	flag.IntVar(&cfg.connections, "c", 16, "wrk connections")
	flag.Float64Var(&cfg.steady, "steady", 0.02, "a bracket is steady when its two untraced runs differ by at most this fraction")
	flag.StringVar(&cfg.bin, "bin", "", "directory with bpftap and floor")
	flag.StringVar(&cfg.scripts, "scripts", "bench/scripts", "directory of the seed scripts")
	flag.StringVar(&cfg.serverCPU, "server-cpu", "1", "CPU nginx runs on")
	flag.StringVar(&cfg.load, "load-cpu", "0", "CPU wrk and the tracers run on")
	flag.StringVar(&cfg.only, "cases", "", "run only the cases whose name matches this regular expression (the floors are always run)")
	flag.StringVar(&cfg.out, "o", "bench/RESULTS-nginx.md", "report file")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "nginx:", err)
		os.Exit(1)
	}
}

func run(cfg *config) error {
	cases, err := cfg.cases()
	if err != nil {
		return err
	}
	server, other, err := startServers(cfg)
	if err != nil {
		return err
	}
	defer server.Process.Kill()
	defer other.Process.Kill()
	pids := strings.NewReplacer("{NGINX}", strconv.Itoa(server.Process.Pid), "{OTHER}", strconv.Itoa(other.Process.Pid))
	brackets := map[string][]bracket{}
	errs := map[string]string{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for r := range cfg.rounds {
		round, err := cfg.round(cases, pids, rng, errs)
		if err != nil {
			return err
		}
		for name, b := range round {
			brackets[name] = append(brackets[name], b)
		}
		fmt.Fprintf(os.Stderr, "nginx: round %d of %d done\n", r+1, cfg.rounds)
	}
	report := render(cfg, cases, brackets, errs, rng)
	if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "nginx: wrote", cfg.out)
	return nil
}

// round runs the cases in a random order, each between two untraced runs
// (a case's after is the next case's before). A case that failed is NaN.
func (cfg *config) round(cases []*nginxCase, pids *strings.Replacer, rng *rand.Rand, errs map[string]string) (map[string]bracket, error) {
	order := append([]*nginxCase(nil), cases...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	before, err := wrk(cfg, cfg.duration)
	if err != nil {
		return nil, err
	}
	out := map[string]bracket{}
	for _, c := range order {
		traced, err := cfg.traced(c, pids)
		if err != nil {
			errs[c.name] = err.Error()
			traced = math.NaN()
		}
		after, err := wrk(cfg, cfg.duration)
		if err != nil {
			return nil, err
		}
		out[c.name] = bracket{traced: traced, before: before, after: after}
		before = after
	}
	return out, nil
}

func (cfg *config) cases() ([]*nginxCase, error) {
	only, err := regexp.Compile(cfg.only)
	if err != nil {
		return nil, fmt.Errorf("-cases: %v", err)
	}
	seed := filepath.Join(cfg.scripts, "syscalls_by_proc_inc.stp")
	// -x only gives target(), as in stap: the script filters with it
	targeted := filepath.Join(cfg.scripts, "syscalls_by_proc_target.stp")
	bpftap := filepath.Join(cfg.bin, "bpftap")
	floor := filepath.Join(cfg.bin, "floor")
	pin := []string{"taskset", "-c", cfg.load}
	c := func(name string, argv ...string) *nginxCase {
		return &nginxCase{name, append(append([]string{}, pin...), argv...)}
	}
	all := []*nginxCase{
		c(floorName, floor, "-prog", "empty"),
		c(ownFloorName, bpftap, "-u", "-e", `probe kernel.trace("sys_enter") {}`),
		c("per-CPU count by comm, hand-written (floor tool)", floor, "-prog", "count"),
		c("bpftap, seed script, system-wide", bpftap, seed),
		c("bpftap, seed script keeping pid() == target(), -x nginx", bpftap, "-x", "{NGINX}", targeted),
		c("bpftap, seed script keeping pid() == target(), -x another pid", bpftap, "-x", "{OTHER}", targeted),
		c("syscount (libbpf-tools), system-wide", "syscount"),
		c("syscount -p nginx", "syscount", "-p", "{NGINX}"),
		c("syscount -p another pid", "syscount", "-p", "{OTHER}"),
		c("bpftrace `@[comm] = count()`, system-wide", "bpftrace", "-e", "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }"),
	}
	var cases []*nginxCase
	for _, k := range all {
		if k.name == floorName || k.name == ownFloorName || only.MatchString(k.name) {
			cases = append(cases, k)
		}
	}
	return cases, nil
}

// startServers starts nginx (one process, pinned) on the loopback and a
// sleeping process to filter on.
func startServers(cfg *config) (server, other *exec.Cmd, err error) {
	dir, err := os.MkdirTemp("", "bpftap-nginx")
	if err != nil {
		return nil, nil, err
	}
	conf := fmt.Sprintf(`daemon off; master_process off; worker_processes 1; error_log %[1]s/error.log; pid %[1]s/nginx.pid;
events { worker_connections 1024; }
http { access_log off; server { listen 127.0.0.1:%[2]s; location / { return 200 "hello\n"; } } }
`, dir, port)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	server = exec.Command("taskset", "-c", cfg.serverCPU, "nginx", "-c", filepath.Join(dir, "nginx.conf"), "-p", dir)
	if err := server.Start(); err != nil {
		return nil, nil, err
	}
	other = exec.Command("sleep", "100000")
	if err := other.Start(); err != nil {
		return nil, nil, err
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := wrk(cfg, time.Second); err != nil {
		return nil, nil, fmt.Errorf("nginx does not answer: %v", err)
	}
	return server, other, nil
}

// traced measures one case: the tracer started and attached, then wrk.
func (cfg *config) traced(c *nginxCase, pids *strings.Replacer) (float64, error) {
	argv := make([]string, len(c.argv))
	for i, a := range c.argv {
		argv[i] = pids.Replace(a)
	}
	t, err := tracer.Launch(argv, nil)
	if err != nil {
		return 0, err
	}
	defer t.Stop()
	if _, err := t.WaitAttached(60 * time.Second); err != nil {
		return 0, err
	}
	time.Sleep(300 * time.Millisecond)
	return wrk(cfg, cfg.duration)
}

var requestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// wrk runs wrk (one thread, pinned) against nginx and returns requests/s.
func wrk(cfg *config, d time.Duration) (float64, error) {
	cmd := exec.Command("taskset", "-c", cfg.load, "wrk", "-t1", "-c"+strconv.Itoa(cfg.connections),
		"-d"+strconv.Itoa(int(d.Seconds()))+"s", "http://127.0.0.1:"+port+"/")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("wrk: %v: %s", err, tracer.FirstLines(out.String()))
	}
	m := requestsPerSec.FindStringSubmatch(out.String())
	if m == nil {
		return 0, fmt.Errorf("wrk printed no requests/s: %s", tracer.FirstLines(out.String()))
	}
	return strconv.ParseFloat(m[1], 64)
}
