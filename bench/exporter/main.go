// Command exporter benchmarks `bpftap exporter` (issue 25's targets): a
// script holding 10,000 keys (a statistic per key, fed by the system
// calls of a workload of its own) is scraped
//
//   - one request at a time (-rounds of -scrapes each, after the table is
//     full): the time to answer, median and 95th percentile of all, and
//     each round's median; with -compare, a second bpftap (main's, say)
//     serves the same table on another port, and the rounds alternate
//     between the two, so that both see the same load;
//   - by 50 concurrent scrapers for -duration: every status must be 200,
//     and the exporter's resident memory is sampled each second (flat:
//     the last tenth of the run within 10% of the first tenth after the
//     warm-up);
//
// and every answer is checked for a torn statistic: each value added is
// 1, so a key's @count and @sum must agree.
//
// Loopback only; the workload is a copy of yes(1) named bpftapload, and
// the script counts its system calls only. The machine's load average is
// noted before and after. Writes a Markdown report.
package main

import (
	"bufio"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// table is the script's globals and prometheus probe; feed its kernel
// probe, which counts the workload's system calls.
//
//go:embed table.stp
var table string

const feed = `
probe kernel.trace("raw_syscalls:sys_enter") {
	if (execname() == "bpftapload")
		calls[gettimeofday_ns() %% %d] <<< 1
}
`

func main() {
	var c config
	flag.StringVar(&c.bpftap, "bpftap", "bpftap", "the bpftap binary")
	flag.StringVar(&c.compare, "compare", "", "a second bpftap binary, measured in alternate rounds")
	flag.IntVar(&c.keys, "keys", 10000, "keys in the table")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds of sequential scrapes")
	flag.IntVar(&c.scrapes, "scrapes", 50, "sequential scrapes timed per round")
	flag.IntVar(&c.scrapers, "scrapers", 50, "concurrent scrapers")
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "how long the concurrent scrapers run")
	flag.StringVar(&c.out, "o", "bench/RESULTS-exporter.md", "the report")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "exporter bench:", err)
		os.Exit(1)
	}
}

// config is the bench's flags.
type config struct {
	bpftap, compare, out            string
	keys, rounds, scrapes, scrapers int
	duration                        time.Duration
}

// exporter is a running `bpftap exporter` serving the table.
type exporter struct {
	cmd *exec.Cmd
	url string
}

// sequential is what one binary's sequential scrapes measured.
type sequential struct {
	times  []float64 // every scrape (ms)
	rounds []float64 // each round's median
}

func run(c config) error {
	dir, err := os.MkdirTemp("", "bpftap-exporter-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "table.stp"), []byte(fmt.Sprintf(table, c.keys)+fmt.Sprintf(feed, c.keys)), 0o644); err != nil {
		return err
	}
	stopLoad, err := startLoad(dir)
	if err != nil {
		return err
	}
	defer stopLoad()
	loadBefore := loadAverage()
	bins := []string{c.bpftap}
	if c.compare != "" {
		bins = append(bins, c.compare)
	}
	var xs []*exporter
	for _, bin := range bins {
		x, err := startExporter(bin, dir)
		if err != nil {
			return err
		}
		defer x.stop()
		xs = append(xs, x)
	}
	for _, x := range xs {
		if err := waitFull(x.url, c.keys); err != nil {
			return err
		}
	}
	var torn atomic.Int64
	seqs := make([]sequential, len(xs))
	for range c.rounds {
		for i, x := range xs {
			times, err := scrapeRound(x.url, c.scrapes, &torn)
			if err != nil {
				return err
			}
			seqs[i].times = append(seqs[i].times, times...)
			seqs[i].rounds = append(seqs[i].rounds, median(times))
		}
	}
	for _, x := range xs[1:] {
		x.stop() // the concurrent scrapers and the memory are the first binary's
	}
	load := concurrent(xs[0].url, c.scrapers, c.duration, xs[0].cmd.Process.Pid, &torn)
	return report(c, seqs, load, torn.Load(), [2]string{loadBefore, loadAverage()})
}

// startExporter starts bin's exporter serving dir on a free loopback port.
func startExporter(bin, dir string) (*exporter, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "exporter", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-s", dir, "--", "-D", "MAXACTION=10000000")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &exporter{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d/table.stp", port)}, nil
}

// stop ends the exporter (again: nothing).
func (x *exporter) stop() {
	if x.cmd.ProcessState == nil {
		x.cmd.Process.Signal(os.Interrupt)
		x.cmd.Wait()
	}
}

// scrapeRound times n scrapes one after the other and counts the torn
// statistics in their answers.
func scrapeRound(url string, n int, torn *atomic.Int64) ([]float64, error) {
	var times []float64
	for range n {
		start := time.Now()
		status, body, err := scrape(url)
		if err != nil || status != 200 {
			return nil, fmt.Errorf("scrape: %d %v", status, err)
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
		torn.Add(int64(tornIn(body)))
	}
	return times, nil
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// startLoad runs a copy of yes named bpftapload, writing to /dev/null.
func startLoad(dir string) (stop func(), err error) {
	data, err := os.ReadFile("/usr/bin/yes")
	if err != nil {
		return nil, err
	}
	load := filepath.Join(dir, "bpftapload")
	if err := os.WriteFile(load, data, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(load)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { cmd.Process.Kill(); cmd.Wait() }, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitFull scrapes until the table holds every key (2 minutes at most).
func waitFull(url string, keys int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, body, err := scrape(url)
		if err == nil && status == 200 && strings.Count(body, "calls_count{") >= keys {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the table did not fill in 2 minutes (last: %d %v, %d keys)", status, err, strings.Count(body, "calls_count{"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func scrape(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

var sample = regexp.MustCompile(`(?m)^calls_(count|sum)\{key="(\d+)"\} (\d+)$`)

// tornIn counts the keys whose count and sum differ in one answer.
func tornIn(body string) int {
	count, sum := map[string]string{}, map[string]string{}
	for _, m := range sample.FindAllStringSubmatch(body, -1) {
		if m[1] == "count" {
			count[m[2]] = m[3]
		} else {
			sum[m[2]] = m[3]
		}
	}
	n := 0
	for k, c := range count {
		if sum[k] != c {
			n++
		}
	}
	return n
}

// loadResult is what the concurrent scrapers saw.
type loadResult struct {
	requests, failures int64
	statuses           map[int]int64
	rssKiB             []int64 // one sample a second
}

// concurrent runs n scrapers for d and samples pid's resident memory.
func concurrent(url string, n int, d time.Duration, pid int, torn *atomic.Int64) loadResult {
	var res loadResult
	res.statuses = map[int]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				status, body := 0, ""
				resp, err := client.Get(url)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					status, body = resp.StatusCode, string(b)
				}
				torn.Add(int64(tornIn(body)))
				mu.Lock()
				res.requests++
				res.statuses[status]++
				if status != 200 {
					res.failures++
				}
				mu.Unlock()
			}
		}()
	}
	for time.Now().Before(end) {
		res.rssKiB = append(res.rssKiB, rss(pid))
		time.Sleep(time.Second)
	}
	wg.Wait()
	return res
}

// rss is pid's VmRSS in KiB (0 if unknown).
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// meanKiB is the mean of the samples in [from, to) of rss.
func meanKiB(rss []int64, from, to int) float64 {
	var sum int64
	for _, v := range rss[from:to] {
		sum += v
	}
	return float64(sum) / float64(max(to-from, 1))
}

func report(c config, seqs []sequential, load loadResult, torn int64, loadAvg [2]string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# bpftap exporter: scrapes of a %d-key table\n\n", c.keys)
	fmt.Fprintf(&b, "Generated by `bench/exporter.sh` on %s (%s; load average %s before, %s after). Loopback only.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), hostInfo(), loadAvg[0], loadAvg[1])
	fmt.Fprintf(&b, "| measure | result | target |\n|---|---|---|\n")
	seq := seqs[0]
	fmt.Fprintf(&b, "| one scrape, median of %d rounds × %d (ms) | %.1f | ≤ 50 |\n", c.rounds, c.scrapes, median(seq.times))
	fmt.Fprintf(&b, "| one scrape, 95th percentile (ms) | %.1f | |\n", percentile(seq.times, 0.95))
	fmt.Fprintf(&b, "| each round's median (ms) | %s | |\n", roundList(seq.rounds))
	if len(seqs) > 1 {
		peer := seqs[1]
		fmt.Fprintf(&b, "| `-compare` binary, alternate rounds: median, 95th percentile (ms) | %.1f, %.1f | |\n",
			median(peer.times), percentile(peer.times, 0.95))
		fmt.Fprintf(&b, "| `-compare` binary, each round's median (ms) | %s | |\n", roundList(peer.rounds))
		fmt.Fprintf(&b, "| ratio of medians, this binary / `-compare` | %.2f | |\n", median(seq.times)/median(peer.times))
	}
	fmt.Fprintf(&b, "| %d concurrent scrapers, %s: requests | %d | |\n", c.scrapers, c.duration, load.requests)
	fmt.Fprintf(&b, "| requests not answered 200 | %d %v | 0 |\n", load.failures, load.statuses)
	fmt.Fprintf(&b, "| torn statistics (count ≠ sum) in all answers | %d | 0 |\n", torn)
	n := len(load.rssKiB)
	if n >= 10 {
		first, last := meanKiB(load.rssKiB, n/10, 2*n/10), meanKiB(load.rssKiB, n-n/10, n)
		fmt.Fprintf(&b, "| exporter RSS, second tenth → last tenth (MiB) | %.1f → %.1f (%+.1f%%) | flat |\n",
			first/1024, last/1024, 100*(last-first)/first)
		fmt.Fprintf(&b, "| exporter RSS, max (MiB) | %.1f | |\n", float64(slices.Max(load.rssKiB))/1024)
	}
	fmt.Fprintf(&b, "\nOne scrape runs the script's prometheus probe: a foreach over the %d statistics "+
		"(read from the per-CPU BPF map) into two arrays, and @prometheus_dump_array1 of each "+
		"(%d lines). No peer is measured: stap-exporter needs SystemTap's module runtime, which "+
		"this kernel cannot load, and stapbpf has no exporter.\n", c.keys, 2*c.keys)
	fmt.Print(b.String())
	return os.WriteFile(c.out, []byte(b.String()), 0o644)
}

// roundList is the medians of the rounds, in order.
func roundList(ms []float64) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%.1f", m)
	}
	return strings.Join(parts, ", ")
}

func hostInfo() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			break
		}
	}
	return fmt.Sprintf("%s, %d CPUs", model, strings.Count(string(data), "processor\t:"))
}
