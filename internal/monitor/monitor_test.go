package monitor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/output"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master side (what a terminal
// emulator reads and types into) and the slave (bpftap's terminal).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

// source counts what the screen asks of it.
type source struct {
	mu                    sync.Mutex
	reads, resets, paused int
	resumed               int
}

func (s *source) Probes() []output.Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return []output.Hit{{Index: 0, Probe: "begin", Hits: int64(s.reads)}}
}

func (s *source) Globals(int) []interp.Glance { return nil }

func (s *source) Reset() { s.mu.Lock(); s.resets++; s.mu.Unlock() }

func (s *source) Pause(p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p {
		s.paused++
	} else {
		s.resumed++
	}
}

func (s *source) count(n *int) int { s.mu.Lock(); defer s.mu.Unlock(); return *n }

// screenReader collects what the screen draws on the master side.
type screenReader struct {
	mu   sync.Mutex
	text bytes.Buffer
}

func (r *screenReader) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Contains(r.text.String(), s)
}

func readScreen(master io.Reader) *screenReader {
	r := &screenReader{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.text.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
	}
}

// On a terminal the screen enters the alternate screen, refreshes,
// answers its keys as they are typed, keeps the output meanwhile, and
// on Close leaves the terminal as it found it, the output given back.
func TestScreenOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	screen := readScreen(master)
	var out bytes.Buffer
	src := &source{}
	quit := make(chan struct{})
	s := New(slave, slave, &out, &out)
	if err := s.Start(Config{Interval: 50 * time.Millisecond, Module: "m", Source: src, Quit: func() { close(quit) }}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(s.Stdout(), "printed meanwhile\n")
	waitFor(t, "refreshes", func() bool { return src.count(&src.reads) >= 3 })
	waitFor(t, "alternate screen and output", func() bool { return screen.has(enterScreen) && screen.has("printed meanwhile") })
	during, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if during.Lflag&(unix.ICANON|unix.ECHO) != 0 {
		t.Errorf("keys not read as typed: lflag %#x", during.Lflag)
	}
	master.WriteString("sprcq")
	waitFor(t, "q", func() bool {
		select {
		case <-quit:
			return true
		default:
			return false
		}
	})
	waitFor(t, "the sort key", func() bool { return screen.has("hits*") })
	if src.count(&src.paused) != 1 || src.count(&src.resumed) != 1 || src.count(&src.resets) != 1 {
		t.Errorf("pauses %d, resumes %d, resets %d; want one each", src.paused, src.resumed, src.resets)
	}
	if out.Len() != 0 {
		t.Errorf("output written while the screen shows: %q", out.String())
	}
	s.Close()
	s.Close()
	after, _ := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if *after != *before {
		t.Errorf("terminal not restored: %+v, was %+v", after, before)
	}
	waitFor(t, "the main screen", func() bool { return screen.has(leaveScreen) })
	if out.String() != "printed meanwhile\n" {
		t.Errorf("output given back %q", out.String())
	}
}
