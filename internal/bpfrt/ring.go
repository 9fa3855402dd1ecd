package bpfrt

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
)

// Ring is the output channel of kernel probes: a BPF ring buffer and a
// per-CPU counter of the records that did not fit.
//
// Waking the reader for every record costs ~350 ns per record (measured), so
// programs submit with BPF_RB_NO_WAKEUP and force a wake-up only when at
// least WakeBytes (a quarter of the ring) are waiting; the reader also polls
// every PollInterval, so a record never waits longer than that. A record
// that finds the ring full is counted in Drops (see EmitSubmit), and Lost
// reports the total: nothing is lost silently.
type Ring struct {
	Map       *ebpf.Map // BPF_MAP_TYPE_RINGBUF
	Drops     *ebpf.Map // per-CPU array, one uint64 slot
	WakeBytes int64
}

// NewRing creates a ring of size bytes (a power of two, a multiple of the
// page size).
func NewRing(name string, size uint32) (*Ring, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: sanitizeName(name), Type: ebpf.RingBuf, MaxEntries: size})
	if err != nil {
		return nil, fmt.Errorf("ring buffer %s: %w", name, err)
	}
	drops, err := NewPerCPUArray(name+"_drops", 8, 1)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &Ring{Map: m, Drops: drops, WakeBytes: int64(size / 4)}, nil
}

// Lost is the number of records that found the ring full.
func (r *Ring) Lost() (uint64, error) { return SumPerCPU(r.Drops, 0) }

// Close frees the ring and its counter.
func (r *Ring) Close() error { return errors.Join(r.Map.Close(), r.Drops.Close()) }

// Flags of bpf_ringbuf_submit and bpf_ringbuf_query (uapi/linux/bpf.h).
const (
	rbNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	rbForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	rbAvailData   = 0 // BPF_RB_AVAIL_DATA
)

// EmitReserve emits r0 = bpf_ringbuf_reserve(ring, size, 0) and, when the
// ring is full, counts a drop and jumps to label full. ringRef and dropsRef
// are the names under which ProgramSpec.Maps binds the ring and its drop
// counter. Clobbers R0-R5.
func EmitReserve(ringRef, dropsRef string, size int32, full string) asm.Instructions {
	ok := full + "_reserved"
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(ringRef),
		asm.Mov.Imm(asm.R2, size),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JNE.Imm(asm.R0, 0, ok),
	}
	// full: drops[0]++ on this CPU
	insns = append(insns, EmitLookupIndex(dropsRef, -4, 0, full)...)
	return append(insns,
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label(full),
		asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(ok), // no-op carrying the label
	)
}

// EmitSubmit emits bpf_ringbuf_submit of the record whose address is in
// rec (a callee-saved register, R6-R9), waking the reader only when the
// ring holds at least wakeBytes. Clobbers R0-R5. label names the emitted
// branch targets and must be unique in the program.
func EmitSubmit(ringRef string, rec asm.Register, wakeBytes int64, label string) asm.Instructions {
	quiet, submit := label+"_quiet", label+"_submit"
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(ringRef),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.JLT.Imm(asm.R0, int32(wakeBytes), quiet),
		asm.Mov.Imm(asm.R2, rbForceWakeup),
		asm.Ja.Label(submit),
		asm.Mov.Imm(asm.R2, rbNoWakeup).WithSymbol(quiet),
		asm.Mov.Reg(asm.R1, rec).WithSymbol(submit),
		asm.FnRingbufSubmit.Call(),
	}
}

// DefaultPollInterval bounds how long a record waits in the ring when no
// wake-up comes (fewer than WakeBytes pending).
const DefaultPollInterval = 50 * time.Millisecond

// RingReader hands the records of a Ring to a callback.
type RingReader struct {
	reader   *ringbuf.Reader
	poll     time.Duration
	stopping atomic.Bool
}

// NewRingReader reads r, waiting at most poll between reads (0: the default).
func NewRingReader(r *Ring, poll time.Duration) (*RingReader, error) {
	rd, err := ringbuf.NewReader(r.Map)
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
// handle is reused for the next record. Idle, if not nil, is called each
// time the ring has been emptied (the end of a batch).
func (rr *RingReader) Run(handle func(record []byte), idle func()) error {
	var rec ringbuf.Record
	for {
		rr.reader.SetDeadline(time.Now().Add(rr.poll))
		err := rr.reader.ReadInto(&rec)
		switch {
		case err == nil:
			handle(rec.RawSample)
			if idle != nil && rr.reader.AvailableBytes() == 0 {
				idle()
			}
		case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
			if rr.stopping.Load() {
				return nil
			}
		default:
			return fmt.Errorf("read ring buffer: %w", err)
		}
	}
}

// Stop makes Run return once it has read every record submitted so far.
func (rr *RingReader) Stop() {
	rr.stopping.Store(true)
	rr.reader.Flush()
}

// Close frees the reader (after Run has returned).
func (rr *RingReader) Close() error { return rr.reader.Close() }
