package driver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/exporter"
	"github.com/bpftap/bpftap/internal/interp"
)

// scrapeKeys is the size of the table BenchmarkScrape serves.
const scrapeKeys = 10000

// scrapeFeed feeds bench/exporter's table with this process's lseeks:
// the offset of each is a key.
const scrapeFeed = `
probe syscall.lseek {
	if (pid() == target())
		calls[offset %% %d] <<< 1
}
`

// BenchmarkScrape times one scrape of issue 25's 10,000-key table (the
// target is 50 ms): before each, this process makes one lseek per key,
// so the kernel holds a fresh element of every key, as under bench/exporter's
// busy workload; the scrape folds them into the memory copy and runs the
// prometheus probe, 20,000 lines. cpu-ms/op is the process's CPU time
// during the scrapes (the collector's included), steadier than ns/op on a
// loaded machine.
func BenchmarkScrape(b *testing.B) {
	requireBPF(b)
	null, err := os.Open(os.DevNull)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	sess, stop := startTable(b)
	defer stop()
	var text string
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		for k := range scrapeKeys {
			syscall.Seek(int(null.Fd()), int64(k), io.SeekStart)
		}
		before := cpuTime()
		b.StartTimer()
		var ok bool
		if text, ok, err = sess.Prometheus(); err != nil || !ok {
			b.Fatalf("scrape: %v (ok %v)", err, ok)
		}
		b.StopTimer()
		cpu += cpuTime() - before
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	if n := strings.Count(text, "calls_count{"); n != scrapeKeys {
		b.Fatalf("the last scrape served %d keys, want %d", n, scrapeKeys)
	}
}

// startTable runs bench/exporter's table, fed by this process's lseeks,
// as the exporter runs a script, and returns it once its begin has run.
func startTable(b *testing.B) (sess exporter.Session, stop func()) {
	table, err := os.ReadFile("../../bench/exporter/table.stp")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "table.stp")
	script := fmt.Sprintf(string(table), scrapeKeys) + fmt.Sprintf(scrapeFeed, scrapeKeys)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	in, stop := runBegun(b, path, "-D", "MAXACTION=10000000")
	return prometheusOf{in}, stop
}

// runBegun runs the script at path as the exporter runs one, with this
// process as its target and the options args, and returns its session
// once its begin probes have run (before its kernel probes are attached).
func runBegun(b *testing.B, path string, args ...string) (in *interp.Interp, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *interp.Interp, 1)
	done := make(chan int)
	go func() {
		done <- runScript(ctx, path, append([]string{"-x", strconv.Itoa(os.Getpid())}, args...),
			io.Discard, func(s exporter.Session) { ready <- s.(prometheusOf).in })
	}()
	stop = func() { cancel(); <-done }
	select {
	case in = <-ready:
		return in, stop
	case status := <-done:
		b.Fatalf("the script ended with status %d before its begin", status)
	}
	return nil, nil
}

// cpuTime is the CPU time this process has used, user and system: what a
// scrape costs on a machine busy with other work, whose wall time varies
// with the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
