// Package monitor is --monitor: a live view of a run in the terminal, as
// stap's monitor mode shows one. The screen (the terminal's alternate
// screen, redrawn in place with ANSI escape sequences, no curses) shows
// the uptime, the globals (scalars' values; arrays' sizes and first
// elements), each probe's hits and run times (min/avg/max ns, as -t
// measures them), and below them the last lines of the run's output,
// which the screen keeps (pane.go) and gives back to the terminal when
// it ends. It reads the keys as they are typed: q ends the run as Ctrl-C
// does, s rotates the probe table's sort column, p and r pause and resume
// the probes, c resets the globals, x hides the status.
//
// Three goroutines: the run's, which writes output to the pane; the
// screen's loop, which alone reads the Source and draws, every interval,
// on a key, on a resize, and at most every outputEvery when only the
// output changed (reading the run less often where a read costs more
// than readBudget of one CPU); and the key reader, which waits in
// poll(2) on the keyboard and on a pipe that Close writes to. Whatever
// ends the run, Close restores the terminal (termios, main screen,
// cursor) before the end probes print; Restore alone serves a forced
// exit. Ctrl-Z gives the terminal back while bpftap is stopped, and fg
// takes it again (suspend.go).
package monitor

import (
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/tty"
	"golang.org/x/sys/unix"
)

// Source is what the screen shows of the run and what its keys change;
// the screen's loop calls it from one goroutine.
type Source interface {
	// Probes are every probe's runs so far (-t's figures).
	Probes() []output.Hit
	// Globals reads the globals, with at most top elements per array.
	Globals(top int) []interp.Glance
	// Reset gives the globals their start values.
	Reset()
	// Pause stops the probes, or lets them run again.
	Pause(paused bool)
}

// Config is what Start needs.
type Config struct {
	Interval time.Duration // between refreshes
	Module   string        // the run's module name
	Source   Source
	// Quit is what q does: it ends the run as an interrupt does.
	Quit func()
	// KeysToScript is set when the script reads the keyboard (input
	// probes): the screen reads no keys then.
	KeysToScript bool
}

// outputEvery is the shortest time between two draws for new output.
const outputEvery = 100 * time.Millisecond

// Screen is the live view on a terminal.
type Screen struct {
	term *os.File  // the terminal drawn on (standard output)
	keys io.Reader // the keyboard (standard input)
	out  *pane
	cfg  Config

	started   time.Time
	view      view
	keyCh     chan byte
	stop      chan struct{}
	wake      [2]int // the pipe Close writes to, to end the key reader
	done      sync.WaitGroup
	closeOnce sync.Once

	// skip is the refreshes to go before the read budget allows a read.
	skip int

	termMu   sync.Mutex // held while drawing and restoring
	restored bool
	keyboard *os.File // the keys' terminal, nil when the screen reads none
	restore  func()   // the keyboard's mode
}

// New prepares a screen on terminal term, with keys read from keys; the
// run's output and diagnostics go through Stdout and Stderr to stdout
// and stderr, straight until Start.
func New(term *os.File, keys io.Reader, stdout, stderr io.Writer) *Screen {
	return &Screen{term: term, keys: keys, out: newPane(stdout, stderr), restore: func() {}}
}

// Stdout is where the run writes its output.
func (s *Screen) Stdout() io.Writer { return writer{s.out, stdoutStream} }

// Stderr is where the run writes its errors and warnings.
func (s *Screen) Stderr() io.Writer { return writer{s.out, stderrStream} }

// Start shows the screen and refreshes it until Close.
func (s *Screen) Start(cfg Config) error {
	s.cfg = cfg
	s.started = time.Now()
	s.view = view{module: cfg.Module, uid: os.Getuid(), interval: cfg.Interval}
	if err := unix.Pipe2(s.wake[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	s.keyCh, s.stop = make(chan byte, 16), make(chan struct{})
	switch keyboard := tty.File(s.keys); {
	case cfg.KeysToScript:
		s.view.noKeys = "keys go to the script's input probes"
	case keyboard == nil:
		s.view.noKeys = "no keys: standard input is no terminal"
	default:
		s.keyboard = keyboard
		s.restore = tty.KeysAsTyped(keyboard)
		s.done.Add(1)
		go s.readKeys(int(keyboard.Fd()))
	}
	s.term.WriteString(enterScreen)
	s.out.capture()
	s.done.Add(1)
	go s.loop()
	return nil
}

// Close ends the screen and restores the terminal, then writes the
// output it kept; the output passes straight through from then on.
func (s *Screen) Close() {
	s.closeOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			unix.Write(s.wake[1], []byte{0})
			s.done.Wait()
			unix.Close(s.wake[0])
			unix.Close(s.wake[1])
		}
		s.Restore()
		s.out.release()
	})
}

// Restore gives the terminal back as it was (a forced exit calls it
// alone); the screen draws no more.
func (s *Screen) Restore() {
	s.termMu.Lock()
	defer s.termMu.Unlock()
	if s.restored || s.stop == nil {
		return
	}
	s.restored = true
	s.term.WriteString(leaveScreen)
	s.restore()
}

// loop refreshes the screen until Close. It keeps to its thread, whose
// CPU time measures what reading the run costs (refresh).
func (s *Screen) loop() {
	defer s.done.Done()
	defer s.restoreOnPanic()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	resized := make(chan os.Signal, 1)
	signal.Notify(resized, syscall.SIGWINCH)
	defer signal.Stop(resized)
	suspended, undo := catchSuspend()
	defer undo()
	s.refresh(true)
	var later <-chan time.Time // a draw held back for outputEvery
	lastDraw := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.refresh(false)
		case k := <-s.keyCh:
			s.key(k)
			s.refresh(true)
		case <-resized:
			s.draw()
		case <-suspended:
			s.suspend(suspended)
			s.refresh(true)
		case <-s.out.changed:
			if wait := outputEvery - time.Since(lastDraw); wait > 0 {
				if later == nil {
					later = time.After(wait)
				}
				continue
			}
			s.draw()
		case <-later:
			later = nil
			s.draw()
		}
		lastDraw = time.Now()
	}
}

// restoreOnPanic gives the terminal back before a panic of the screen's
// goroutines ends bpftap (no deferred call of another goroutine runs).
func (s *Screen) restoreOnPanic() {
	if r := recover(); r != nil {
		s.Restore()
		panic(r)
	}
}

// readBudget is the share of one CPU that reading the run may take: a
// large array kept in its BPF map is listed whole at each read (about 1
// ms of CPU per 1,000 keys), so the screen reads it less often than it
// refreshes where a read costs more than readBudget of the interval.
const readBudget = 0.005

// refresh reads the source, if the read budget allows or now (a key
// changed what it shows), and draws; it keeps the keyboard's mode.
func (s *Screen) refresh(now bool) {
	s.keepKeys()
	s.view.uptime = time.Since(s.started)
	if s.skip > 0 && !now {
		s.skip--
	} else {
		start := threadCPU()
		s.view.probes = s.cfg.Source.Probes()
		s.view.globals = s.cfg.Source.Globals(arrayTop)
		s.view.readCost = threadCPU() - start
		reads := readsEvery(s.view.readCost, s.cfg.Interval)
		s.skip, s.view.readEvery = reads-1, time.Duration(reads)*s.cfg.Interval
	}
	s.draw()
}

// readsEvery is every how many intervals a read costing cost keeps
// within the read budget.
func readsEvery(cost, interval time.Duration) int {
	return max(1, int(math.Ceil(float64(cost)/readBudget/float64(interval))))
}

// threadCPU is the CPU time of the calling thread.
func threadCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// draw draws the view at the terminal's size, with the latest output.
func (s *Screen) draw() {
	width, height := tty.Size(s.term)
	if width <= 0 || height <= 0 {
		width, height = 80, 24
	}
	s.view.output = s.out.tail(height)
	frame := render(s.view.frame(width, height), width)
	s.termMu.Lock()
	defer s.termMu.Unlock()
	if !s.restored {
		s.term.Write(frame)
	}
}

// key does what key k asks.
func (s *Screen) key(k byte) {
	switch k {
	case 'q':
		s.view.note = "quitting: the end probes run"
		s.cfg.Quit()
	case 's':
		s.view.sort = s.view.sort.next()
		s.view.note = "sorted by " + columnNames[s.view.sort]
	case 'p', 'r':
		s.view.paused = k == 'p'
		s.cfg.Source.Pause(s.view.paused)
		s.view.note = map[bool]string{true: "paused", false: "resumed"}[s.view.paused]
	case 'c':
		s.cfg.Source.Reset()
		s.view.note = "globals reset"
	case 'x':
		s.view.outputOnly = !s.view.outputOnly
		s.view.note = ""
	}
}

// readKeys hands each byte typed to the loop until Close writes to the
// wake pipe or the keyboard ends.
func (s *Screen) readKeys(fd int) {
	defer s.done.Done()
	defer s.restoreOnPanic()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(s.wake[0]), Events: unix.POLLIN}}
	buf := make([]byte, 64)
	for {
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		} else if err != nil || fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return // hung up
		}
		n, err := unix.Read(fd, buf)
		if n <= 0 && err != unix.EINTR && err != unix.EAGAIN {
			return
		}
		for _, b := range buf[:max(n, 0)] {
			select {
			case s.keyCh <- b:
			case <-s.stop:
				return
			}
		}
	}
}
