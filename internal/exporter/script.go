package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"time"
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
		f.text, f.ok, f.err = r.session.Prometheus()
		r.mu.Lock()
		r.flight = nil
		close(f.done)
	}
	r.mu.Unlock()
	<-f.done
	return f.text, f.ok, f.err
}

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

// scrape answers a request for the script: its prometheus probe's text and
// 200, else a message and the status that says why not.
func (s *script) scrape(x *Exporter, req context.Context) (string, int) {
	r := s.start(x)
	select {
	case <-r.begun:
	case <-req.Done():
		return "the request ended first", http.StatusServiceUnavailable
	case <-time.After(beginWait):
		return s.name + " is starting", http.StatusServiceUnavailable
	}
	if r.session == nil {
		<-r.ended
		return fmt.Sprintf("%s ended (exit status %d):\n%s", s.name, r.status, r.log.Tail()), http.StatusInternalServerError
	}
	text, ok, err := r.prometheus()
	switch {
	case err != nil:
		return fmt.Sprintf("%s: %v", s.name, err), http.StatusInternalServerError
	case !ok:
		return fmt.Sprintf("%s no longer runs:\n%s", s.name, r.log.Tail()), http.StatusServiceUnavailable
	}
	return text, http.StatusOK
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
// after "NAME: ", and keeps its last tailSize bytes for the answers that
// say why a script failed. It is the one place a script's output goes:
// a run hands it to package driver as the script's standard output and
// error.
type scriptLog struct {
	mu     sync.Mutex
	out    io.Writer
	prefix []byte
	line   []byte // a line not yet ended
	tail   []byte
}

const tailSize = 4096

func newScriptLog(out io.Writer, name string) *scriptLog {
	return &scriptLog{out: out, prefix: []byte(name + ": ")}
}

func (l *scriptLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, b...)
	if len(l.tail) > tailSize {
		l.tail = l.tail[len(l.tail)-tailSize:]
	}
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

// Tail is the end of what the script wrote.
func (l *scriptLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.tail)
}
