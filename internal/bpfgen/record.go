package bpfgen

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf/asm"
)

// Records in the ring buffer start with a header {u32 kind, u32 id, u64
// run}, run the mark of the probe's run whose records are kept together,
// else 0 (together.go):
//
//	RecordPrint: id indexes Module.Outputs; the arguments follow at the
//	             offsets the Output lists (longs as 8 native-endian bytes,
//	             strings as NUL-terminated bytes in a fixed-width field);
//	             for an argument calling a Captured builtin, the call's
//	             arguments, depth first (print.go); for a deferred
//	             string local, its blob (deferred.go). An Output with an
//	             Effect carries the arguments of a call of a Deferred
//	             builtin (system, log, warn) instead.
//	RecordError: id indexes Module.Errors; a u64 argument follows (the
//	             faulting address of a read error, else 0). The probe ended.
//	RecordExit:  exit() was called; no payload.
//	RecordRunEnd: the run its mark names ended; no payload.
const (
	RecordPrint  uint32 = 1
	RecordError  uint32 = 2
	RecordExit   uint32 = 3
	RecordRunEnd uint32 = 4
)

const (
	runOffset  = 8
	headerSize = 16
)

// DefaultRingSize is the size of the module's ring buffer (4 MiB).
const DefaultRingSize = 1 << 22

// Output is one print-family call of a kernel probe.
type Output struct {
	Call   *syntax.PrintCall // nil for an Effect
	Effect *syntax.Call      // a call of a tapset.Deferred builtin
	Format *format.Format
	Args   []ArgField
	Size   int // of the whole record
	Pos    syntax.Pos
}

// ArgField is where one argument lies in a print record.
type ArgField struct {
	Offset int
	Width  int // bytes of a string field; 0 for a long
	// Deferred, for the blob of a deferred string local (deferred.go),
	// is where the leaves of each of its assignments lie in it.
	Deferred [][]ArgField
}

// ErrorSite is a run-time error a kernel probe may raise.
type ErrorSite struct {
	Msg string // stap's message; with Addr, a fmt format taking the address
	Pos syntax.Pos
	// Addr is set when the record's argument is an address the message shows.
	Addr bool
}

// Text is the message of the error, given the record's argument.
func (e *ErrorSite) Text(arg uint64) string {
	if e.Addr {
		return fmt.Sprintf(e.Msg, arg)
	}
	return e.Msg
}

// Record is a decoded ring record.
type Record struct {
	Kind   uint32
	Output *Output      // RecordPrint
	Args   []format.Arg // RecordPrint: ready for Output.Format
	Error  *ErrorSite   // RecordError
	Arg    uint64       // RecordError
	Run    uint64       // the run's mark, 0 when its records need not wait for its end
}

// Decode decodes one ring record. The strings it returns are copies.
func (m *Module) Decode(rec []byte) (Record, error) {
	if len(rec) < headerSize {
		return Record{}, fmt.Errorf("ring record of %d bytes", len(rec))
	}
	kind, id := binary.NativeEndian.Uint32(rec), binary.NativeEndian.Uint32(rec[4:])
	r := Record{Kind: kind, Run: binary.NativeEndian.Uint64(rec[runOffset:])}
	switch {
	case kind == RecordExit || kind == RecordRunEnd:
		return r, nil
	case kind == RecordError && int(id) < len(m.Errors) && len(rec) >= headerSize+8:
		r.Error, r.Arg = m.Errors[id], binary.NativeEndian.Uint64(rec[headerSize:])
		return r, nil
	case kind == RecordPrint && int(id) < len(m.Outputs) && len(rec) >= m.Outputs[id].Size:
		r.Output = m.Outputs[id]
		r.Args = make([]format.Arg, 0, len(r.Output.Args))
		for _, a := range r.Output.Args {
			if a.Deferred != nil {
				r.Args = decodeDeferred(r.Args, rec[a.Offset:a.Offset+a.Width], a.Deferred)
				continue
			}
			r.Args = append(r.Args, decodeArg(rec, a))
		}
		return r, nil
	}
	return Record{}, fmt.Errorf("malformed ring record (kind %d, id %d, %d bytes)", kind, id, len(rec))
}

func decodeArg(rec []byte, a ArgField) format.Arg {
	if a.Width == 0 {
		return format.Long(int64(binary.NativeEndian.Uint64(rec[a.Offset:])))
	}
	return format.String(cString(rec[a.Offset : a.Offset+a.Width]))
}

// errorSite registers a site and returns the label of its stub, which sets
// the error id and jumps to the error tail. With addr, the code jumping to
// the stub holds the address in regRec. Inside a try block the label is
// the block's catch instead (try.go), unless the error is MAXACTION's,
// which no catch stops.
func (g *gen) errorSite(msg string, at syntax.Pos, addr bool) string {
	if catch := g.catchLabel(msg); catch != "" {
		return catch
	}
	key := fmt.Sprintf("%s|%s|%v", msg, at, addr)
	if l, ok := g.errs[key]; ok {
		return l
	}
	id := len(g.m.Errors)
	g.m.Errors = append(g.m.Errors, &ErrorSite{Msg: msg, Pos: at, Addr: addr})
	label := g.newLabel("raise")
	g.errs[key] = label
	g.tails = append(g.tails, func() {
		g.cur = at
		g.mark(label)
		g.emit(numbered(asm.Mov.Imm(regErr, int32(id)), relocError))
		if !addr {
			g.emit(asm.Mov.Imm(regRec, 0))
		}
		g.emit(asm.Ja.Label(labelError))
	})
	return label
}

// errorTail sends {RecordError, R7, R8} and exits.
func (g *gen) errorTail() {
	g.mark(labelError)
	addr := g.pushSlot()
	g.emit(asm.StoreMem(asm.R10, addr, regRec, asm.DWord))
	full := g.reserve(headerSize + 8)
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.StoreImm(regRec, 0, int64(RecordError), asm.Word),
		asm.StoreMem(regRec, 4, regErr, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, addr, asm.DWord),
		asm.StoreMem(regRec, headerSize, asm.R1, asm.DWord),
	)
	g.storeRun()
	g.submit(headerSize + 8)
	g.popStack(8)
	g.mark(full)
	g.emit(asm.Ja.Label(labelExit))
}

// Flags of bpf_ringbuf_submit and bpf_ringbuf_query (uapi/linux/bpf.h).
const (
	rbNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	rbForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	rbAvailData   = 0 // BPF_RB_AVAIL_DATA
)

// reserve emits R0 = bpf_ringbuf_reserve(ring, size, 0), leaving the
// record's address in R0; when the ring is full it counts a drop in
// DropsMap and jumps to the label it returns, which the caller must place.
// Clobbers R0-R5.
func (g *gen) reserve(size int) string {
	full := g.reserveOr(size)
	ok := full + "_reserved"
	g.emit(asm.JNE.Imm(asm.R0, 0, ok))
	// full: drops[0]++ on this CPU, atomically (nesting.go), the key in a
	// slot of its own: below it live the probe's locals and temporaries
	key := g.pushSlot()
	g.emit(emitLookupIndex(DropsMap, key, 0, full)...)
	g.popStack(8)
	g.emit(
		asm.Mov.Imm(asm.R1, 1),
		atomicOp(bpfAdd, asm.R0, asm.R1, 0),
		asm.Ja.Label(full),
		asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(ok), // no-op carrying the label
	)
	return full
}

// reserveOr emits R0 = bpf_ringbuf_reserve(ring, size, 0) and returns the
// label of the code for a full ring (R0 == 0), which the caller must emit
// and place. Clobbers R0-R5.
func (g *gen) reserveOr(size int) string {
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(RingMap),
		asm.Mov.Imm(asm.R2, int32(size)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
	)
	return g.newLabel("full")
}

// submit sends the record of size bytes whose address is in regRec.
// Waking the reader for every record costs ~350 ns per record (measured;
// more in a VM, where the self-IPI that raises the wake-up traps), so it
// submits with BPF_RB_NO_WAKEUP and forces a wake-up only when this record
// makes the data waiting in the ring cross a quarter of the ring (a
// quarter, a half), or when three quarters are waiting: once per quarter
// however slowly the reader drains, and always when the ring is about to
// fill (a record of another CPU reserved at the same moment can hide a
// crossing). The reader also polls (bpfrt.RingReader), so a record never
// waits long. Clobbers R0-R5.
func (g *gen) submit(size int) {
	label := g.newLabel("submit")
	quiet, wake, submit := label+"_quiet", label+"_wake", label+"_submit"
	quarter := bits.Len(uint(g.m.cfg.RingSize)) - 3 // log2(RingSize/4)
	g.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(RingMap),
		asm.Mov.Imm(asm.R2, rbAvailData),
		asm.FnRingbufQuery.Call(),
		asm.JGE.Imm(asm.R0, int32(3*(g.m.cfg.RingSize/4)), wake),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Sub.Imm(asm.R1, int32(ringRecordSize(size))),
		asm.RSh.Imm(asm.R0, int32(quarter)),
		asm.RSh.Imm(asm.R1, int32(quarter)),
		asm.JEq.Reg(asm.R0, asm.R1, quiet),
		asm.Mov.Imm(asm.R2, rbForceWakeup).WithSymbol(wake),
		asm.Ja.Label(submit),
		asm.Mov.Imm(asm.R2, rbNoWakeup).WithSymbol(quiet),
		asm.Mov.Reg(asm.R1, regRec).WithSymbol(submit),
		asm.FnRingbufSubmit.Call(),
	)
}

// ringRecordSize is the room a record of size bytes takes in the ring: an
// 8-byte header, rounded up to 8 (BPF_RINGBUF_HDR_SZ, kernel/bpf/ringbuf.c).
func ringRecordSize(size int) int { return (size + 8 + 7) &^ 7 }

// exitRecord marks the session stopped (StateMap) and sends RecordExit
// (exit()); the probe goes on.
func (g *gen) exitRecord() {
	g.emit(
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(StateMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreMem(asm.R1, 0, asm.R2, asm.DWord),
	)
	full := g.reserve(headerSize)
	g.emit(
		asm.Mov.Reg(regRec, asm.R0),
		asm.StoreImm(regRec, 0, int64(RecordExit), asm.Word),
		asm.StoreImm(regRec, 4, 0, asm.Word),
	)
	g.storeRun()
	g.submit(headerSize)
	g.mark(full)
}
