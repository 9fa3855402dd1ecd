// Package exporter is `bpftap exporter`, a drop-in for SystemTap's
// stap-exporter: an HTTP server that runs the scripts of a directory and
// answers GET /NAME.stp with what the script's `probe prometheus` serves
// (the Prometheus text exposition format, Content-Type
// "text/plain; version=0.0.4", which Prometheus 3 requires). Beyond
// stap-exporter, GET /metrics serves several scripts at once (metrics.go:
// the autostart ones, or those of --metrics), their families merged
// (exposition.go), with bpftap_script_up{script="NAME.stp"} saying which
// are in the answer; and GET / lists the scripts and their states
// (index.go).
//
// # Scripts
//
// Every script runs in this process, in a goroutine of its own (package
// driver compiles and runs it as `bpftap NAME.stp` would, its kernel
// probes attached for as long as it runs). A script starts on the first
// request for it, and that request is answered once its begin probes have
// run (or it failed: 500); later requests run its
// prometheus probe at once (requests that come while it runs share that
// run's answer: the handlers run one at a time). A resident script (its
// name contains "autostart", or /metrics serves it) starts with the
// exporter and is started again, restartDelay after it ends, for as long
// as the exporter runs. With -k SECONDS, a script no
// request asked for that long is stopped (resident ones excepted); the
// next request starts it again. A name that is not a script of the
// directory (NAME.stp, no path) is 404. A script that fails, or panics,
// ends alone: the others run on.
//
// What a script prints (and its warnings and errors) goes to the
// exporter's standard error, each line after "NAME.stp: " (scriptLog).
// The answers a client gets say what failed in one line and no more (no
// output, no source line of a script: a script that is a symbolic link to
// a file no client should read would show it); the log says why.
//
// # Serving
//
// The exporter's HTTP server is package httpserve's: every answer is
// written whole once known (a prometheus probe that fails half-way is a
// 500, never a 200 with a cut exposition), with timeouts on every read and
// write and a cap on connections that idle clients cannot fill. It listens
// on the loopback interface unless -a says otherwise (docs/serving.md).
package exporter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/httpserve"
)

// Session is a running script as the exporter sees it.
type Session interface {
	// Prometheus runs the script's prometheus probe and returns its
	// text; ok is false when the script no longer runs, err says why it
	// cannot serve (it has no prometheus probe, or the probe failed: its
	// error is on the script's output).
	Prometheus() (text string, ok bool, err error)
}

// Runner compiles and runs the script at path with the stap options
// opts until ctx is done or the script ends, calling ready once its begin
// probes have run; its output and diagnostics go to log. It returns the
// script's exit status.
type Runner func(ctx context.Context, path string, opts []string, log io.Writer, ready func(Session)) int

// ContentType is the Prometheus text format's.
const ContentType = "text/plain; version=0.0.4"

// restartDelay is the pause before an autostart script that ended is
// started again.
const restartDelay = 2 * time.Second

// beginWait bounds how long a request waits for a script to begin; past
// it the answer is 503 with Retry-After, as stap-exporter answers.
const beginWait = 60 * time.Second

// Config is the exporter's command line.
type Config struct {
	Port      int           // -p PORT
	Dir       string        // -s DIR
	KeepAlive time.Duration // -k SECONDS, 0: scripts run until the exporter stops
	Addr      string        // -a ADDR, the address listened on (loopback by default; "" or "::": every address)
	// Metrics are the scripts /metrics serves (--metrics), first to last;
	// nil: the autostart scripts.
	Metrics []string
	// Options are the stap options every script runs with (what follows
	// `--`: -D MAXACTION=N for a table of 10,000 series, say).
	Options []string
}

// Main runs `bpftap exporter ARGS`.
func Main(args []string, run Runner, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := net.Listen("tcp", net.JoinHostPort(cfg.Addr, fmt.Sprint(cfg.Port)))
	if err != nil {
		fmt.Fprintf(stderr, "ERROR: %v\n", err)
		return 1
	}
	x, err := New(ctx, cfg, run, stderr)
	if err != nil {
		l.Close()
		fmt.Fprintf(stderr, "ERROR: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "bpftap exporter: serving %s on %s\n", cfg.Dir, l.Addr())
	srv := httpserve.New(x.Answer, httpserve.DefaultLimits, stderr, "bpftap exporter: ")
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil {
		fmt.Fprintf(stderr, "ERROR: %v\n", err)
		return 1
	}
	x.Wait()
	return 0
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("bpftap exporter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := Config{}
	fs.IntVar(&cfg.Port, "p", 9900, "the port to listen on")
	fs.StringVar(&cfg.Dir, "s", "/etc/stap-exporter", "the directory of the scripts")
	keep := fs.Int("k", 0, "stop a script no request asked for in this many `seconds` (0: never)")
	fs.StringVar(&cfg.Addr, "a", "127.0.0.1", "the address to listen on (empty or :: for every address)")
	fs.Func("metrics", "the `scripts` /metrics serves, NAME.stp[,NAME.stp...] (default: the autostart ones)", func(v string) error {
		if cfg.Metrics == nil {
			cfg.Metrics = []string{} // given, if empty: no script
		}
		for name := range strings.SplitSeq(v, ",") {
			if name == "" && v != "" {
				return fmt.Errorf("an empty name in %q", v)
			}
			if name != "" {
				cfg.Metrics = append(cfg.Metrics, name)
			}
		}
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 && args[len(args)-fs.NArg()-1] != "--" {
		fmt.Fprintf(stderr, "bpftap exporter: unexpected argument %q (stap options for the scripts follow --)\n", fs.Arg(0))
		fs.Usage()
		return cfg, fmt.Errorf("usage")
	}
	cfg.Options = fs.Args()
	cfg.KeepAlive = time.Duration(*keep) * time.Second
	return cfg, nil
}

// Exporter serves the scripts of a directory.
type Exporter struct {
	ctx  context.Context
	cfg  Config
	run  Runner
	log  io.Writer
	mu   sync.Mutex
	byID map[string]*script
	wg   sync.WaitGroup

	served []*script // by /metrics, first to last
}

// New makes the exporter of cfg.Dir, starting its resident scripts (the
// autostart ones and those /metrics serves); its scripts stop when ctx is
// done. A name of cfg.Metrics that is not a script of the directory is an
// error, and nothing starts.
func New(ctx context.Context, cfg Config, run Runner, log io.Writer) (*Exporter, error) {
	x := &Exporter{ctx: ctx, cfg: cfg, run: run, log: &lockedWriter{w: log}, byID: map[string]*script{}}
	var autostart []string
	entries, _ := os.ReadDir(cfg.Dir)
	for _, e := range entries {
		if name := e.Name(); strings.Contains(name, "autostart") && x.isScript(name) {
			autostart = append(autostart, name)
		}
	}
	served, err := x.metricsScripts(autostart)
	if err != nil {
		return nil, err
	}
	for _, name := range served {
		s := x.script(name)
		s.metrics, s.resident, s.left = true, true, "not scraped yet"
		x.served = append(x.served, s)
	}
	for _, name := range append(autostart, served...) {
		x.script(name).start(x)
	}
	if cfg.KeepAlive > 0 {
		x.wg.Add(1)
		go x.reap()
	}
	return x, nil
}

// metricsScripts are the names of the scripts /metrics serves: those of
// --metrics, else the autostart ones. A name is a label value there
// (script="NAME"), so it must be UTF-8: an autostart script's that is not
// is left out, with a warning.
func (x *Exporter) metricsScripts(autostart []string) ([]string, error) {
	var names []string
	if x.cfg.Metrics == nil {
		for _, name := range autostart {
			if !utf8.ValidString(name) {
				fmt.Fprintf(x.log, "bpftap exporter: WARNING: /metrics leaves %q out: its name is not UTF-8, as the label script=\"NAME\" must be\n", name)
				continue
			}
			names = append(names, name)
		}
		return names, nil
	}
	for _, name := range x.cfg.Metrics {
		switch {
		case !x.isScript(name):
			return nil, fmt.Errorf("--metrics: %q is not a script of %s (NAME.stp, a file of the directory)", name, x.cfg.Dir)
		case !utf8.ValidString(name):
			return nil, fmt.Errorf("--metrics: %q is not UTF-8, as the label script=\"NAME\" of /metrics must be", name)
		case !slices.Contains(names, name):
			names = append(names, name)
		}
	}
	return names, nil
}

// Wait waits for every script to end (after ctx is done).
func (x *Exporter) Wait() { x.wg.Wait() }

// isScript tells whether name is a script of the directory.
func (x *Exporter) isScript(name string) bool {
	if !strings.HasSuffix(name, ".stp") || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return false
	}
	st, err := os.Stat(filepath.Join(x.cfg.Dir, name))
	return err == nil && st.Mode().IsRegular()
}

// script returns the script named name, made on first use.
func (x *Exporter) script(name string) *script {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.byID[name]
	if s == nil {
		s = &script{name: name, resident: strings.Contains(name, "autostart")}
		x.byID[name] = s
	}
	return s
}

// Answer answers GET / (the index), /metrics and /NAME.stp (package
// httpserve serves it). Any other path is 404: a path is a script's name
// only when it is a file of the directory, no more than one '/' before it.
func (x *Exporter) Answer(r *http.Request) httpserve.Answer {
	var page func() httpserve.Answer
	switch name := strings.TrimPrefix(r.URL.Path, "/"); {
	case r.URL.Path == "/":
		page = func() httpserve.Answer { return x.index(r) }
	case r.URL.Path == "/metrics":
		page = func() httpserve.Answer { return x.metrics(r.Context()) }
	case x.isScript(name):
		page = func() httpserve.Answer { return x.script(name).scrape(x, r.Context()) }
	default:
		return httpserve.Text(http.StatusNotFound, "no such page: GET / lists the scripts")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		a := httpserve.Text(http.StatusMethodNotAllowed, "method not allowed")
		a.Header.Set("Allow", "GET, HEAD")
		return a
	}
	return page()
}

// reap stops the scripts idle for longer than the keepalive.
func (x *Exporter) reap() {
	defer x.wg.Done()
	tick := time.NewTicker(min(x.cfg.KeepAlive/4+time.Millisecond, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-x.ctx.Done():
			return
		case <-tick.C:
		}
		x.mu.Lock()
		for _, s := range x.byID {
			if !s.resident {
				s.stopIfIdle(x.cfg.KeepAlive)
			}
		}
		x.mu.Unlock()
	}
}

// lockedWriter serialises the writes of the scripts' logs.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
