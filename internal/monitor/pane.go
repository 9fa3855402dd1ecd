package monitor

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// The run's output while the screen is shown. Its two streams (what the
// script prints, and the errors and warnings) pass through a pane: before
// the screen starts and after it ends, straight to their destinations;
// while it is shown, they are kept, in the order written, for the
// screen's lower region and for the terminal once the screen gives way.
// The pane keeps the last keepLines lines (stap's monitor keeps as many
// in its output window) and keepBytes bytes, dropping the oldest; it says
// how many it dropped when it gives the rest back.

const (
	keepLines = 8192
	keepBytes = 4 << 20
	// pieceSize is the most bytes one piece of output holds: a piece
	// ends at a newline or at this size, so that dropping whole pieces
	// from the front trims by lines.
	pieceSize = 4096
)

// stream names a destination: the output or the diagnostics.
type stream int

const (
	stdoutStream stream = iota
	stderrStream
)

// pane is the two streams' shared record.
type pane struct {
	mu        sync.Mutex
	dest      [2]io.Writer
	capturing bool
	pieces    []piece
	lines     int // pieces ending in a newline
	size      int // bytes kept
	dropped   int // lines dropped
	// changed has a value once something was written since the screen
	// last looked.
	changed chan struct{}
}

// piece is one line of a stream, or part of one.
type piece struct {
	stream stream
	data   []byte
}

func (p piece) ends() bool { return len(p.data) > 0 && p.data[len(p.data)-1] == '\n' }

func newPane(stdout, stderr io.Writer) *pane {
	return &pane{dest: [2]io.Writer{stdout, stderr}, changed: make(chan struct{}, 1)}
}

// writer is one stream of the pane.
type writer struct {
	p *pane
	s stream
}

func (w writer) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.capturing {
		return p.dest[w.s].Write(b)
	}
	p.keep(w.s, b)
	select {
	case p.changed <- struct{}{}:
	default:
	}
	return len(b), nil
}

// keep adds b in pieces, then drops the oldest pieces beyond the limits.
func (p *pane) keep(s stream, b []byte) {
	for len(b) > 0 {
		n := min(len(b), pieceSize)
		if i := bytes.IndexByte(b[:n], '\n'); i >= 0 {
			n = i + 1
		}
		pc := piece{s, bytes.Clone(b[:n])}
		p.pieces = append(p.pieces, pc)
		p.size += n
		if pc.ends() {
			p.lines++
		}
		b = b[n:]
	}
	for len(p.pieces) > 1 && (p.lines > keepLines || p.size > keepBytes) {
		if p.pieces[0].ends() {
			p.lines--
			p.dropped++
		}
		p.size -= len(p.pieces[0].data)
		p.pieces[0] = piece{}
		p.pieces = p.pieces[1:]
	}
}

// capture starts keeping what is written.
func (p *pane) capture() {
	p.mu.Lock()
	p.capturing = true
	p.mu.Unlock()
}

// release writes what was kept to its destinations, in order, after a
// line on the diagnostics that counts the lines dropped, if any; from
// then on writes pass straight through.
func (p *pane) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.capturing {
		return
	}
	p.capturing = false
	if p.dropped > 0 {
		fmt.Fprintf(p.dest[stderrStream], "bpftap: --monitor dropped the first %d lines of the run's output: it keeps the last %d (%d MiB at most)\n",
			p.dropped, keepLines, keepBytes>>20)
	}
	for i := 0; i < len(p.pieces); {
		var run []byte
		s := p.pieces[i].stream
		for ; i < len(p.pieces) && p.pieces[i].stream == s; i++ {
			run = append(run, p.pieces[i].data...)
		}
		p.dest[s].Write(run)
	}
	p.pieces, p.lines, p.size, p.dropped = nil, 0, 0, 0
}

// tail returns the last n lines kept (the last one possibly unfinished),
// without their newlines.
func (p *pane) tail(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	start, ended := len(p.pieces), 0
	for start > 0 {
		if p.pieces[start-1].ends() {
			if ended == n {
				break
			}
			ended++
		}
		start--
	}
	var lines []string
	var line []byte
	for _, pc := range p.pieces[start:] {
		line = append(line, pc.data...)
		if pc.ends() {
			lines = append(lines, string(line[:len(line)-1]))
			line = line[:0]
		}
	}
	if len(line) > 0 {
		lines = append(lines, string(line))
	}
	return lines[max(0, len(lines)-n):]
}
