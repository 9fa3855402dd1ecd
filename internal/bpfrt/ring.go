package bpfrt

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// Reading the ring buffer of kernel probes. The programs (package bpfgen)
// submit records without waking the reader and force a wake-up only when a
// quarter of the ring is waiting, since a wake-up per record costs ~350 ns
// (measured); so the reader also polls, and a record never waits longer
// than its poll interval.

// DefaultPollInterval bounds how long a record waits in the ring when no
// wake-up comes (less than a quarter of the ring pending).
const DefaultPollInterval = 50 * time.Millisecond

// RingReader hands the records of a ring buffer to a callback.
type RingReader struct {
	reader   *ringbuf.Reader
	poll     time.Duration
	stopping atomic.Bool
}

// NewRingReader reads ring (a BPF_MAP_TYPE_RINGBUF), waiting at most poll
// between reads (0: the default).
func NewRingReader(ring *ebpf.Map, poll time.Duration) (*RingReader, error) {
	rd, err := ringbuf.NewReader(ring)
	if err != nil {
		return nil, fmt.Errorf("read ring buffer: %w", err)
	}
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	return &RingReader{reader: rd, poll: poll}, nil
}

// Run calls handle with every record, in ring order, until Stop; it then
// drains the records already submitted and returns. The slice passed to
// handle is reused for the next record. Idle, if not nil, is called at the
// end of a batch: when the ring has been emptied and idleGap has passed
// since the last call, or when a poll finds nothing new. (A reader that
// keeps up empties the ring after almost every record; the caller writes
// its output at idle, and a write per record would cost a system call per
// record, each of them traced again by the probes that made the record.)
func (rr *RingReader) Run(handle func(record []byte), idle func()) error {
	var rec ringbuf.Record
	pending, last := false, time.Now()
	callIdle := func() {
		if idle != nil && pending {
			idle()
			pending, last = false, time.Now()
		}
	}
	for {
		rr.reader.SetDeadline(time.Now().Add(rr.poll))
		err := rr.reader.ReadInto(&rec)
		switch {
		case err == nil:
			handle(rec.RawSample)
			pending = true
			if rr.reader.AvailableBytes() == 0 && time.Since(last) >= idleGap {
				callIdle()
			}
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			callIdle()
			if rr.stopping.Load() {
				return nil
			}
		default:
			return fmt.Errorf("read ring buffer: %w", err)
		}
	}
}

// idleGap is the least time between two idle calls while records keep
// coming: output reaches its reader at most this much (or a poll
// interval) after the kernel printed it.
const idleGap = 20 * time.Millisecond

// Stop makes Run return once it has read every record submitted so far.
func (rr *RingReader) Stop() {
	rr.stopping.Store(true)
	rr.reader.Flush()
}

// Close frees the reader (after Run has returned).
func (rr *RingReader) Close() error { return rr.reader.Close() }
