package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/exporter"
	"github.com/bpftap/bpftap/internal/httpserve"
)

// errnoScript is Debian's errno.stp kept to the test's own workload (a
// copy of ls named listName), so that other work on the machine, a second
// copy of the suite included, never adds series or pushes the test's out
// of the 20 kept.
var errnoScript = `global errors, prom_arr
probe syscall_any.return {
	if (retval < 0 && execname() == "` + listName + `")
		errors[pid(), retval, name] <<< 1
}
probe prometheus {
	foreach ([p, errno, name] in errors- limit 20)
		prom_arr[p, errno, name] = @count(errors[p, errno, name])
	@prometheus_dump_array3(prom_arr, "syscall_error_count", "pid", "errno", "name")
	delete prom_arr
}
`

// histScript serves a @hist_log histogram of two values, 1 and 100.
const histScript = `global sizes
probe begin { sizes["none"] <<< 1; sizes["none"] <<< 100 }
probe prometheus {
	@prometheus_dump_hist_log1(sizes, "write_size", "what")
}
`

// TestExporterPrometheus runs the exporter in-process on loopback, a
// workload that fails to list /nonexistent three times, and Debian's
// Prometheus scraping the exporter, script by script and at /metrics:
// Prometheus's HTTP API returns the series with errno -2 (ENOENT) the
// exporter serves, no more, no less, and from /metrics those of a second
// script in the same family too, the histogram of a third, and
// bpftap_script_up 0 for the fourth, which clashes with the third; the
// scrapes of /metrics succeed (up 1) and none has a sample twice. An
// unknown script is 404. Prometheus absent, the test is skipped, unless
// BPFTAP_REQUIRE_PROMETHEUS is set (CI installs it).
func TestExporterPrometheus(t *testing.T) {
	requireBPF(t)
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("BPFTAP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("prometheus is not installed (apt-get install prometheus)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	twin := `syscall_error_count{errno="-2",name="twin",pid="0"}`
	dir := writeScripts(t, map[string]string{"errno.stp": errnoScript, "hist.stp": histScript,
		"twin.stp": promScript(twin + " 7\n"), "clash.stp": promScript("# TYPE write_size counter\nwrite_size 1\n")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := serveExporter(t, ctx, exporter.Config{Dir: dir, Metrics: []string{"errno.stp", "twin.stp", "hist.stp", "clash.stp"}}, &testLog{t})
	if status, _, _ := get(t, base+"/nosuch.stp"); status != http.StatusNotFound {
		t.Errorf("unknown script: status %d, want 404", status)
	}
	status, header, _ := get(t, base+"/errno.stp") // waits for the script to begin
	if status != http.StatusOK || header.Get("Content-Type") != exporter.ContentType {
		t.Fatalf("errno.stp: status %d, Content-Type %q", status, header.Get("Content-Type"))
	}
	failToList(t, dir, 3)
	_, _, text := get(t, base+"/errno.stp")
	served := servedSeries(text, `errno="-2"`)
	if len(served) == 0 {
		t.Fatalf("the exporter serves no series with errno -2:\n%s", text)
	}
	api := runPrometheus(t, ctx, promBin, dir, strings.TrimPrefix(base, "http://"))
	for job, want := range map[string][]string{"bpftap": served, "all": slices.Sorted(slices.Values(append([]string{twin}, served...)))} {
		var fromProm []string
		eventually(t, 60*time.Second, func() bool {
			fromProm = querySeries(t, api, `syscall_error_count{errno="-2",job="`+job+`"}`)
			return slices.Equal(fromProm, want)
		}, func() string {
			return fmt.Sprintf("Prometheus has, of job %s,\n%s\nthe exporter serves\n%s", job, strings.Join(fromProm, "\n"), strings.Join(want, "\n"))
		})
		t.Logf("Prometheus has the %d series with errno -2 the exporter serves to job %s, such as %s", len(fromProm), job, fromProm[0])
	}
	// hist.stp's histogram is one to Prometheus: its median of {1, 100}
	// interpolated in the buckets le=1 (1 value) and le=127 (2).
	for _, job := range []string{"hist", "all"} {
		var median []string
		eventually(t, 30*time.Second, func() bool {
			median = queryValues(t, api, `histogram_quantile(0.5, write_size_bucket{job="`+job+`"})`)
			return len(median) > 0
		}, func() string { return "Prometheus has no histogram_quantile of write_size of job " + job })
		if median[0] != "1" {
			t.Errorf("median of write_size of job %s: %s, want 1 (the upper bound of the bucket of 1)", job, median[0])
		}
	}
	checkScrapesOfAll(t, api)
}

// checkScrapesOfAll checks what Prometheus says of its scrapes of
// /metrics (job all): they succeed, bpftap_script_up is 1 for the scripts
// but clash.stp, and no sample came twice.
func checkScrapesOfAll(t *testing.T, api string) {
	if up := queryValues(t, api, `up{job="all"}`); !slices.Equal(up, []string{"1"}) {
		t.Errorf("up of /metrics: %v, want 1", up)
	}
	for value, want := range map[string][]string{"1": {"errno.stp", "hist.stp", "twin.stp"}, "0": {"clash.stp"}} {
		var scripts []string
		for _, s := range querySeries(t, api, `bpftap_script_up{job="all"} == `+value) {
			scripts = append(scripts, strings.TrimSuffix(strings.TrimPrefix(s, `bpftap_script_up{script="`), `"}`))
		}
		if !slices.Equal(scripts, want) {
			t.Errorf("bpftap_script_up %s: %v, want %v", value, scripts, want)
		}
	}
	_, _, own := get(t, api+"/metrics")
	if !regexp.MustCompile(`(?m)^prometheus_target_scrapes_sample_duplicate_timestamp_total 0$`).MatchString(own) {
		t.Errorf("Prometheus had samples twice: %s", regexp.MustCompile(`(?m)^prometheus_target_scrapes_sample_duplicate.*$`).FindString(own))
	}
}

// eventually calls ok every half second until it holds, for at most
// wait; then the test fails with what says.
func eventually(t *testing.T, wait time.Duration, ok func() bool, what func() string) {
	t.Helper()
	for deadline := time.Now().Add(wait); !ok(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", wait, what())
		}
	}
}

// writeScripts writes the scripts, by name, in a directory of the test's
// and returns it.
func writeScripts(t *testing.T, scripts map[string]string) string {
	dir := t.TempDir()
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serveExporter serves the scripts of cfg.Dir on a loopback port, as
// `bpftap exporter` serves them, until ctx is done and the test ends, and
// returns its base URL. The scripts' output goes to log.
func serveExporter(t *testing.T, ctx context.Context, cfg exporter.Config, log io.Writer) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x, err := exporter.New(ctx, cfg, runScript, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserve.New(x.Answer, httpserve.DefaultLimits, log, "bpftap exporter: ")
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); x.Wait() })
	return "http://" + l.Addr().String()
}

// testLog sends the scripts' output to the test's log.
type testLog struct{ t *testing.T }

func (l *testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// listName is the name of the test's copy of ls: its own, by the test
// process's pid (a task's name keeps 15 bytes).
var listName = fmt.Sprintf("bpftapls%d", os.Getpid()%1000000)

// failToList runs listName /nonexistent n times.
func failToList(t *testing.T, dir string, n int) {
	ls := filepath.Join(dir, listName)
	data, err := os.ReadFile("/bin/ls")
	if err == nil {
		err = os.WriteFile(ls, data, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if exec.Command(ls, "/nonexistent").Run() == nil {
			t.Fatal(listName + " /nonexistent succeeded")
		}
	}
}

func get(t *testing.T, u string) (int, http.Header, string) {
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// runPrometheus starts Prometheus on loopback scraping the exporter's
// errno.stp, hist.stp and /metrics every second, and returns its API's base URL once it is ready.
func runPrometheus(t *testing.T, ctx context.Context, bin, dir, target string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: bpftap
    metrics_path: /errno.stp
    static_configs:
      - targets: ['%[1]s']
  - job_name: hist
    metrics_path: /hist.stp
    static_configs:
      - targets: ['%[1]s']
  - job_name: all
    metrics_path: /metrics
    static_configs:
      - targets: ['%[1]s']
`, target)), 0o644)
	cmd := exec.CommandContext(ctx, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("Prometheus not ready after 30 s")
		}
	}
}

// querySeries asks Prometheus's API for query and returns its series,
// name and labels as the exposition format writes them, sorted, without
// the labels Prometheus adds (job, instance).
func querySeries(t *testing.T, api, query string) []string {
	_, _, body := get(t, api+"/api/v1/query?query="+url.QueryEscape(query))
	var answer struct {
		Status string
		Data   struct {
			Result []struct{ Metric map[string]string }
		}
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Status != "success" {
		t.Fatalf("query %s: %v: %s", query, err, body)
	}
	var series []string
	for _, r := range answer.Data.Result {
		var labels []string
		for k, v := range r.Metric {
			if k != "__name__" && k != "job" && k != "instance" {
				labels = append(labels, fmt.Sprintf("%s=%q", k, v))
			}
		}
		slices.Sort(labels)
		series = append(series, fmt.Sprintf("%s{%s}", r.Metric["__name__"], strings.Join(labels, ",")))
	}
	slices.Sort(series)
	return series
}

// queryValues asks Prometheus's API for query and returns the values of
// its result.
func queryValues(t *testing.T, api, query string) []string {
	_, _, body := get(t, api+"/api/v1/query?query="+url.QueryEscape(query))
	var answer struct {
		Status string
		Data   struct{ Result []struct{ Value []any } }
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Status != "success" {
		t.Fatalf("query %s: %v: %s", query, err, body)
	}
	var values []string
	for _, r := range answer.Data.Result {
		if v, ok := r.Value[1].(string); ok && v != "NaN" {
			values = append(values, v)
		}
	}
	return values
}

var sampleLine = regexp.MustCompile(`^(\w+)\{(.*)\} (\S+)$`)

// servedSeries returns the series of an exposition that have label,
// sorted, as querySeries writes them (the values are left out: the exporter counts on after
// Prometheus's last scrape).
func servedSeries(text, label string) []string {
	var series []string
	for _, line := range strings.Split(text, "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := strings.Split(m[2], ",")
		if !slices.Contains(labels, label) {
			continue
		}
		slices.Sort(labels)
		series = append(series, fmt.Sprintf("%s{%s}", m[1], strings.Join(labels, ",")))
	}
	slices.Sort(series)
	return series
}

// TestExporterScripts checks the exporter's handling of scripts (user-side
// ones: no BPF needed): the first request starts a script and is answered
// once its begin probe ran; an autostart script runs before any request
// and starts again when it ends; an idle script stops after the keepalive
// and starts again on the next request; a script that fails to compile,
// or has no prometheus probe, is a 500 that leaves the others running: one
// line for the client, the compiler's message in the log.
func TestExporterScripts(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		// the first request waits for the compilation and begin (a read
		// probe does not run before: it would be a 503)
		"slow.stp": `global ready, scrapes
probe begin { ready = 1 }
probe prometheus { scrapes++; $value = sprintf("ready %d\nscrapes %d\n", ready, scrapes) }`,
		// runs 300 ms at a time, and is started again each time it ends
		"tick_autostart.stp": `global starts
probe begin { printf("started\n") }
probe timer.ms(300) { exit() }
probe prometheus { $value = "up 1\n" }`,
		"broken.stp": `probe begin { x = }`,
		"noprom.stp": "global n\nprobe timer.s(100) { n++ }",
		"notes.txt":  "not a script",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &lockedBuffer{}
	base := serveExporter(t, ctx, exporter.Config{Dir: dir, KeepAlive: time.Second}, log)

	want := func(path string, status int, body string) {
		t.Helper()
		got, _, text := get(t, base+path)
		if got != status || !strings.Contains(text, body) {
			t.Errorf("GET %s: %d %q, want %d and %q", path, got, text, status, body)
		}
	}
	want("/slow.stp", 200, "ready 1\nscrapes 1\n")
	want("/slow.stp", 200, "scrapes 2\n")
	want("/broken.stp", 500, "broken.stp failed to start (exit status 1); the exporter's log says why\n")
	if !strings.Contains(log.String(), "broken.stp: parse error") {
		t.Errorf("the log has no parse error of broken.stp:\n%s", log.String())
	}
	want("/noprom.stp", 500, "the script has no probe prometheus")
	want("/notes.txt", 404, "")
	want("/../slow.stp", 404, "")
	want("/slow.stp", 200, "scrapes 3\n")
	idle := time.Now()
	// tick_autostart.stp ends every 300 ms and starts again 2 s later
	for deadline := time.Now().Add(20 * time.Second); strings.Count(log.String(), "tick_autostart.stp: started\n") < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tick_autostart.stp did not start again in 20 s:\n%s", log.String())
		}
	}
	time.Sleep(time.Until(idle.Add(2500 * time.Millisecond))) // slow.stp idles out (keepalive 1 s)
	want("/slow.stp", 200, "ready 1\nscrapes 1\n")            // a new run
	want("/tick_autostart.stp", 200, "up 1\n")
}

// lockedBuffer is a log the test reads while scripts write it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
