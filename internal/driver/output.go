package driver

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/bpftap/bpftap/internal/output"
)

// The output of pass 5: every event of the run (what the script prints,
// its errors and warnings, losses, the -t report) goes to one
// output.Writer, stap's text (output.Text: the output to stdout or -o's
// files, diagnostics to stderr) or, with --json, one JSON object per line
// (output.JSON, everything to the output).
//
// What the writer writes passes through an outputSink, which stops the
// run when the destination fails. A pipe whose reader went away ends it
// quietly, as stap ends when its reader closes the pipe; any other failure
// (a full file system, EIO, a closed descriptor) is said once with
// stapio's words, "ERROR: Couldn't write to output FD for cpu 0,
// exiting.: REASON", ends the run as an interrupt does (end probes run,
// their output is dropped) and makes it fail with status 1.

// newOutput returns the run's output writer, writing to dest.
func (s *session) newOutput(dest io.Writer) output.Writer {
	if s.opts.JSON {
		return output.NewJSON(dest)
	}
	t := output.NewText(dest, s.stderr)
	t.Verbose = s.verbose(5) > 0
	return t
}

// outputSink is the destination of the run's output: standard output or
// -o's files (which it switches for switch_file()).
type outputSink struct {
	w      io.Writer
	stderr io.Writer
	stop   func() // ends the run

	mu     sync.Mutex
	failed error // the first failed write; later writes are dropped
}

func (o *outputSink) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed != nil {
		return 0, o.failed
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.fail(err)
	}
	return n, err
}

// fail notes the first failed write and ends the run.
func (o *outputSink) fail(err error) {
	o.failed = err
	o.stop()
	if errors.Is(err, syscall.EPIPE) {
		return
	}
	fmt.Fprintf(o.stderr, "ERROR: Couldn't write to output %d for cpu 0, exiting.: %s\n", o.fd(), reason(err))
}

// Failed tells whether the output failed for another reason than a closed
// pipe: the run fails then.
func (o *outputSink) Failed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed != nil && !errors.Is(o.failed, syscall.EPIPE)
}

// Switch is switch_file(), for -o's files; stdout has none to switch.
func (o *outputSink) Switch() error {
	if sw, ok := o.w.(output.Switcher); ok {
		return sw.Switch()
	}
	return nil
}

// fd is the descriptor written to, as stapio names it.
func (o *outputSink) fd() uintptr {
	if f, ok := o.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return 1
}

// reason is strerror's text for the error of a write.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return strerror(errno)
	}
	return err.Error()
}
