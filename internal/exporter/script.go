package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/bpftap/bpftap/internal/httpserve"
)

// script is one script of the directory and its current run.
type script struct {
	name string
	// resident scripts start with the exporter and again restartDelay
	// after they end, whatever the keepalive: the autostart ones and
	// those /metrics serves.
	resident bool
	metrics  bool // /metrics serves it

	mu        sync.Mutex
	cur       *run // nil before the first start
	lastUsed  time.Time
	starts    int
	lastError string    // the last failure's line, as a client of /NAME.stp gets it
	lastAt    time.Time // when
	left      string    // why the last scrape of /metrics left it out; "" if it did not
}

// run is one run of a script.
type run struct {
	cancel  context.CancelFunc
	begun   chan struct{} // closed once the begin probes ran, or the run ended first
	ended   chan struct{}
	once    sync.Once
	session Session // set before begun is closed; nil if the run ended first
	status  int     // the exit status, once ended
	log     *scriptLog

	mu     sync.Mutex
	flight *scrapeResult // the scrape under way, nil if none
}

// scrapeResult is one run of the prometheus probe, shared by the requests
// that came while it ran.
type scrapeResult struct {
	done chan struct{}
	text string
	ok   bool
	err  error
}

// prometheus runs the prometheus probe, or joins the run under way: the
// script's handlers run one at a time, so 50 scrapers at once would
// otherwise wait for 50 runs, each answer no newer than the last.
func (r *run) prometheus() (string, bool, error) {
	r.mu.Lock()
	f := r.flight
	if f == nil {
		f = &scrapeResult{done: make(chan struct{})}
		r.flight = f
		r.mu.Unlock()
		r.scrape(f)
	} else {
		r.mu.Unlock()
	}
	<-f.done
	return f.text, f.ok, f.err
}

// scrape runs the prometheus probe for f and lets f's requests have its
// answer, a panic's too.
func (r *run) scrape(f *scrapeResult) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(r.log, "ERROR: bpftap failed running the probe prometheus: %v\n", p)
			f.ok, f.err = true, errPanicked
		}
		r.mu.Lock()
		r.flight = nil
		close(f.done)
		r.mu.Unlock()
	}()
	f.text, f.ok, f.err = r.session.Prometheus()
}

var errPanicked = errors.New("bpftap failed")

// start starts the script unless it runs, and notes that it was asked for.
func (s *script) start(x *Exporter) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUsed = time.Now()
	if s.cur != nil && !closed(s.cur.ended) {
		return s.cur
	}
	s.starts++
	ctx, cancel := context.WithCancel(x.ctx)
	r := &run{cancel: cancel, begun: make(chan struct{}), ended: make(chan struct{}), log: newScriptLog(x.log, s.name)}
	s.cur = r
	x.wg.Add(1)
	go s.execute(x, ctx, r)
	return r
}

// execute runs r; a panic ends the run alone. An autostart script starts
// again restartDelay later, unless the exporter stops.
func (s *script) execute(x *Exporter, ctx context.Context, r *run) {
	defer x.wg.Done()
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(r.log, "ERROR: bpftap failed running the script: %v\n", p)
				r.status = 1
			}
			r.log.Flush()
			r.cancel()
			r.once.Do(func() { close(r.begun) })
			close(r.ended)
		}()
		r.status = x.run(ctx, filepath.Join(x.cfg.Dir, s.name), x.cfg.Options, r.log, func(sess Session) {
			r.once.Do(func() { r.session = sess; close(r.begun) })
		})
	}()
	if r.status != 0 {
		s.noteFailure(s.endLine(r))
	}
	if !s.resident {
		return
	}
	select {
	case <-x.ctx.Done():
	case <-time.After(restartDelay):
		if x.ctx.Err() == nil {
			s.start(x)
		}
	}
}

// A failure is why a script serves no exposition: the status and the one
// line of the answer to GET /NAME.stp (the log says why).
type failure struct {
	status int
	line   string
}

func (f *failure) Error() string { return f.line }

// answer is the answer to GET /NAME.stp that f is.
func (f *failure) answer() httpserve.Answer {
	if f.status == http.StatusServiceUnavailable {
		return unavailable(f.line)
	}
	return httpserve.Text(f.status, f.line)
}

// scrape answers a request for the script: its prometheus probe's text,
// else one line that says what failed (the log says why).
func (s *script) scrape(x *Exporter, req context.Context) httpserve.Answer {
	text, f := s.exposition(s.start(x), req, beginWait)
	if f != nil {
		return f.answer()
	}
	h := http.Header{}
	h.Set("Content-Type", ContentType)
	return httpserve.Answer{Status: http.StatusOK, Header: h, Body: text}
}

// exposition runs the prometheus probe of r, a run of s, once r has begun,
// waiting for that at most wait (or until req ends); a failure (a 500) is
// noted as the script's last.
func (s *script) exposition(r *run, req context.Context, wait time.Duration) (string, *failure) {
	if r == nil {
		return "", &failure{http.StatusServiceUnavailable, s.name + " has not started"}
	}
	if !closed(r.begun) {
		if wait == 0 {
			return "", &failure{http.StatusServiceUnavailable, s.name + " is starting"}
		}
		select {
		case <-r.begun:
		case <-req.Done():
			return "", &failure{http.StatusServiceUnavailable, "the request ended first"}
		case <-time.After(wait):
			return "", &failure{http.StatusServiceUnavailable, s.name + " is starting"}
		}
	}
	if r.session == nil {
		<-r.ended
		return "", &failure{http.StatusInternalServerError, s.endLine(r)}
	}
	text, ok, err := r.prometheus()
	switch {
	case err != nil:
		f := &failure{http.StatusInternalServerError, fmt.Sprintf("%s: %v; the exporter's log says why", s.name, err)}
		s.noteFailure(f.line)
		return "", f
	case !ok:
		return "", &failure{http.StatusServiceUnavailable, s.name + " no longer runs; the exporter's log says why"}
	}
	return text, nil
}

// endLine says how r, a run of s that failed, ended.
func (s *script) endLine(r *run) string {
	if r.session == nil {
		return fmt.Sprintf("%s failed to start (exit status %d); the exporter's log says why", s.name, r.status)
	}
	return fmt.Sprintf("%s ended with exit status %d; the exporter's log says why", s.name, r.status)
}

// noteFailure notes line as the script's last failure.
func (s *script) noteFailure(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastError, s.lastAt = line, time.Now()
}

// current is the script's current run, nil before its first start.
func (s *script) current() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// A scriptState is what the index page says of a script.
type scriptState struct {
	Name      string
	State     string // not started, starting, running, failed, stopped
	Restarts  int
	Metrics   bool   // /metrics serves it
	Left      string // why the last scrape of /metrics left it out
	LastError string // the last failure's line
	LastAt    time.Time
}

// state is the script's state now.
func (s *script) state() scriptState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return scriptState{Name: s.name, State: runState(s.cur), Restarts: max(s.starts-1, 0),
		Metrics: s.metrics, Left: s.left, LastError: s.lastError, LastAt: s.lastAt}
}

// runState is the state of run r: "not started" if nil.
func runState(r *run) string {
	switch {
	case r == nil:
		return "not started"
	case !closed(r.ended) && (!closed(r.begun) || r.session == nil):
		return "starting"
	case !closed(r.ended):
		return "running"
	case r.status != 0:
		return "failed"
	default:
		return "stopped"
	}
}

// unavailable is a 503 that asks the client to come back in a second.
func unavailable(line string) httpserve.Answer {
	a := httpserve.Text(http.StatusServiceUnavailable, line)
	a.Header.Set("Retry-After", "1")
	return a
}

// stopIfIdle stops the script if no request asked for it in keep.
func (s *script) stopIfIdle(keep time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && time.Since(s.lastUsed) > keep {
		s.cur.cancel()
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// scriptLog writes a script's output to the exporter's log, each line
// after "NAME: ". It is the one place a script's output goes: a run hands
// it to package driver as the script's standard output and error.
type scriptLog struct {
	mu     sync.Mutex
	out    io.Writer
	prefix []byte
	line   []byte // a line not yet ended
}

func newScriptLog(out io.Writer, name string) *scriptLog {
	return &scriptLog{out: out, prefix: []byte(name + ": ")}
}

func (l *scriptLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line = append(l.line, b...)
	for {
		i := bytes.IndexByte(l.line, '\n')
		if i < 0 {
			return len(b), nil
		}
		l.out.Write(append(append([]byte(nil), l.prefix...), l.line[:i+1]...))
		l.line = l.line[i+1:]
	}
}

// Flush writes a last line without a newline.
func (l *scriptLog) Flush() {
	if len(l.line) > 0 {
		l.Write([]byte("\n"))
	}
}
