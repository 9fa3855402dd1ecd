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
	name      string
	autostart bool
	mu        sync.Mutex
	cur       *run // nil before the first start
	lastUsed  time.Time
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
	if !s.autostart {
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

// scrape answers a request for the script: its prometheus probe's text,
// else one line that says what failed (the log says why).
func (s *script) scrape(x *Exporter, req context.Context) httpserve.Answer {
	r := s.start(x)
	select {
	case <-r.begun:
	case <-req.Done():
		return unavailable("the request ended first")
	case <-time.After(beginWait):
		return unavailable(s.name + " is starting")
	}
	if r.session == nil {
		<-r.ended
		return httpserve.Text(http.StatusInternalServerError, fmt.Sprintf("%s failed to start (exit status %d); the exporter's log says why", s.name, r.status))
	}
	text, ok, err := r.prometheus()
	switch {
	case err != nil:
		return httpserve.Text(http.StatusInternalServerError, fmt.Sprintf("%s: %v; the exporter's log says why", s.name, err))
	case !ok:
		return unavailable(s.name + " no longer runs; the exporter's log says why")
	}
	h := http.Header{}
	h.Set("Content-Type", ContentType)
	return httpserve.Answer{Status: http.StatusOK, Header: h, Body: text}
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
