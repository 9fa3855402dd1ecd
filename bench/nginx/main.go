// Command nginx is bpftap's seed-001 benchmark: the throughput nginx keeps
// (requests/s under wrk, loopback only) while system calls are counted,
// system-wide and filtered in the kernel to one process, by bpftap, by
// libbpf-tools syscount and by bpftrace, beside an empty BPF program (the
// floor every tracer pays) and no tracer at all.
//
// The machine's spread is ~8% run to run, so every round runs every case
// once, in a fresh random order, and a case's figure is its ratio to the
// same round's untraced run; the report gives the median ratio over the
// rounds with a 95% bootstrap interval. nginx (one worker, no master) runs
// on CPU 1, wrk and the tracers' own processes on CPU 0: the BPF programs
// run where the system calls are made.
//
// Run it through bench/nginx.sh (root; builds the tools, mounts tracefs in
// a private namespace, needs nginx and wrk: apt-get install nginx wrk).
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

	"github.com/bpftap/bpftap/bench/stats"
	"github.com/bpftap/bpftap/bench/tracer"
)

type config struct {
	rounds          int
	duration        time.Duration
	connections     int
	bin, scripts    string
	serverCPU, load string
	out             string
}

// nginxCase is one row: a tracer command (nil: untraced), with {NGINX}
// and {OTHER} standing for the pids it is filtered to.
type nginxCase struct {
	name string
	argv []string
}

const port = "18080"

func main() {
	cfg := &config{}
	flag.IntVar(&cfg.rounds, "rounds", 15, "rounds; each runs every case once, in random order")
	flag.DurationVar(&cfg.duration, "d", 5*time.Second, "wrk duration per case")
	flag.IntVar(&cfg.connections, "c", 16, "wrk connections")
	flag.StringVar(&cfg.bin, "bin", "", "directory with bpftap and floor")
	flag.StringVar(&cfg.scripts, "scripts", "bench/scripts", "directory of the seed scripts")
	flag.StringVar(&cfg.serverCPU, "server-cpu", "1", "CPU nginx runs on")
	flag.StringVar(&cfg.load, "load-cpu", "0", "CPU wrk and the tracers run on")
	flag.StringVar(&cfg.out, "o", "bench/RESULTS-nginx.md", "report file")
	flag.Parse()
	server, other, err := startServers(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nginx:", err)
		os.Exit(1)
	}
	defer server.Process.Kill()
	defer other.Process.Kill()
	cases := cfg.cases()
	ratios := map[string][]float64{}
	errs := map[string]string{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for r := range cfg.rounds {
		order := append([]*nginxCase(nil), cases...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		rps := map[string]float64{}
		for _, c := range order {
			v, err := cfg.run(c, server.Process.Pid, other.Process.Pid)
			if err != nil {
				errs[c.name] = err.Error()
				v = math.NaN()
			}
			rps[c.name] = v
		}
		for _, c := range cases {
			ratios[c.name] = append(ratios[c.name], rps[c.name]/rps[cases[0].name])
		}
		ratios["untraced requests/s"] = append(ratios["untraced requests/s"], rps[cases[0].name])
		fmt.Fprintf(os.Stderr, "nginx: round %d of %d: untraced %.0f requests/s\n", r+1, cfg.rounds, rps[cases[0].name])
	}
	report := render(cfg, cases, ratios, errs, rng)
	if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "nginx: wrote", cfg.out)
}

func (cfg *config) cases() []*nginxCase {
	seed := filepath.Join(cfg.scripts, "syscalls_by_proc_inc.stp")
	bpftap := filepath.Join(cfg.bin, "bpftap")
	pin := []string{"taskset", "-c", cfg.load}
	c := func(name string, argv ...string) *nginxCase {
		return &nginxCase{name, append(append([]string{}, pin...), argv...)}
	}
	return []*nginxCase{
		{name: "untraced"},
		c("empty BPF program on sys_enter (floor tool)", filepath.Join(cfg.bin, "floor"), "-prog", "empty"),
		c("bpftap, seed script, system-wide", bpftap, seed),
		c("bpftap, seed script, -x nginx", bpftap, "-x", "{NGINX}", seed),
		c("bpftap, seed script, -x another pid", bpftap, "-x", "{OTHER}", seed),
		c("syscount (libbpf-tools), system-wide", "syscount"),
		c("syscount -p nginx", "syscount", "-p", "{NGINX}"),
		c("syscount -p another pid", "syscount", "-p", "{OTHER}"),
		c("bpftrace `@[comm] = count()`, system-wide", "bpftrace", "-e", "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }"),
	}
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

// run measures one case: the tracer started and attached, then wrk.
func (cfg *config) run(c *nginxCase, nginxPid, otherPid int) (float64, error) {
	if c.argv == nil {
		return wrk(cfg, cfg.duration)
	}
	argv := make([]string, len(c.argv))
	for i, a := range c.argv {
		a = strings.ReplaceAll(a, "{NGINX}", strconv.Itoa(nginxPid))
		argv[i] = strings.ReplaceAll(a, "{OTHER}", strconv.Itoa(otherPid))
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

func render(cfg *config, cases []*nginxCase, ratios map[string][]float64, errs map[string]string, rng *rand.Rand) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# nginx throughput while counting system calls (seed 001)\n\nWritten by `bench/nginx.sh`, %s; %d rounds, wrk -t1 -c%d for %v per case, nginx (one worker) on CPU %s, wrk and tracers on CPU %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.rounds, cfg.connections, cfg.duration, cfg.serverCPU, cfg.load)
	untraced := stats.Summarize(stats.Finite(ratios["untraced requests/s"]))
	fmt.Fprintf(&b, "Untraced: %s requests/s (median [95%% interval]).\n\n", untraced.Format(0))
	b.WriteString("Each figure is a case's requests/s over the same round's untraced requests/s: median over the rounds [95% bootstrap interval]. The seed measured syscount at 0.815 of untraced system-wide (−18.5%), and at 0.908 filtered in the kernel to another pid.\n\n")
	b.WriteString("| case | × untraced | rounds |\n|---|---:|---:|\n")
	for _, c := range cases[1:] {
		xs := stats.Finite(ratios[c.name])
		if len(xs) == 0 {
			fmt.Fprintf(&b, "| %s | failed: %s | 0 |\n", c.name, errs[c.name])
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %d |\n", c.name, stats.Bootstrap(xs, 2000, rng).Format(3), len(xs))
	}
	return b.String()
}
