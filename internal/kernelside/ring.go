package kernelside

import (
	"errors"
	"slices"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Sink receives what kernel probes send, in ring order (the interpreter).
type Sink interface {
	KernelPrint(call *syntax.PrintCall, args []format.Arg)
	// KernelCall makes call, of a tapset.Deferred builtin (system, log,
	// warn), with the arguments a kernel probe sent.
	KernelCall(call *syntax.Call, args []format.Arg)
	KernelError(msg string, at syntax.Pos)
	// KernelExit is exit() in a kernel probe.
	KernelExit()
	// Flush is called at the end of each batch of records.
	Flush()
}

// Start reads the ring in a goroutine until Stop or Close, handing each
// record to sink (delivery).
func (s *Session) Start(sink Sink) error {
	if s.objs == nil {
		return nil
	}
	rr, err := bpfrt.NewRingReader(s.objs.shared[bpfgen.RingMap], 0)
	if err != nil {
		return output.Failf("%w", err)
	}
	s.reader, s.readerDone = rr, make(chan error, 1)
	d := &delivery{sink: sink, mod: s.mod, stacks: s.stacks}
	go func() {
		err := rr.Run(d.receive, sink.Flush)
		d.endRuns()
		s.readerDone <- err
	}()
	return nil
}

// delivery hands the ring's records to a Sink in ring order, but those of
// a run that keeps its records together (bpfgen's together.go) all at
// once, when its RecordRunEnd comes, as stap prints what a handler
// printed at its end. Records that follow an exit() record are dropped,
// as stap runs no probe handler once exit() was called; a run already
// under way then is handed on whole, as stap's handler runs to its end.
type delivery struct {
	sink   Sink
	mod    *bpfgen.Module
	stacks *stackTexts
	// stopped: an exit() record came; exited: it was handed on
	stopped, exited bool
	// runs are the runs under way, oldest first: about one per CPU, so
	// that a scan finds a run sooner than a map would
	runs  []heldRun
	spare [][]bpfgen.Record // emptied record lists, for the next runs
}

// heldRun is a run under way: its mark and its records so far.
type heldRun struct {
	mark    uint64
	records []bpfgen.Record
}

func (d *delivery) receive(rec []byte) {
	r, err := d.mod.Decode(rec)
	switch {
	case err != nil:
		if !d.stopped {
			d.sink.KernelError(err.Error(), syntax.Pos{})
		}
	case r.Run == 0:
		if !d.stopped {
			d.hand(r)
		}
	default:
		d.hold(r)
	}
	d.stopped = d.stopped || r.Kind == bpfgen.RecordExit
}

// hold adds r to its run, or hands the run on when r ends it.
func (d *delivery) hold(r bpfgen.Record) {
	i := slices.IndexFunc(d.runs, func(h heldRun) bool { return h.mark == r.Run })
	switch {
	case r.Kind == bpfgen.RecordRunEnd:
		if i >= 0 {
			held := d.runs[i].records
			d.runs = slices.Delete(d.runs, i, i+1)
			d.handAll(held)
			d.spare = append(d.spare, held[:0])
		}
	case i >= 0:
		d.runs[i].records = append(d.runs[i].records, r)
	case !d.stopped:
		var records []bpfgen.Record
		if n := len(d.spare); n > 0 {
			records, d.spare = d.spare[n-1], d.spare[:n-1]
		}
		d.runs = append(d.runs, heldRun{r.Run, append(records, r)})
	}
}

// endRuns hands on the records of the runs that had not ended when the
// reader stopped (a run whose RecordRunEnd found the ring full).
func (d *delivery) endRuns() {
	for _, h := range d.runs {
		d.handAll(h.records)
	}
	d.runs, d.spare = nil, nil
	d.sink.Flush()
}

func (d *delivery) handAll(rs []bpfgen.Record) {
	for _, r := range rs {
		d.hand(r)
	}
}

// hand passes one record to the sink.
func (d *delivery) hand(r bpfgen.Record) {
	switch r.Kind {
	case bpfgen.RecordPrint:
		for i := range r.Args {
			r.Args[i].Str = d.stacks.expand(r.Args[i].Str)
		}
		if r.Output.Effect != nil {
			d.sink.KernelCall(r.Output.Effect, r.Args)
		} else {
			d.sink.KernelPrint(r.Output.Call, r.Args)
		}
	case bpfgen.RecordError:
		d.sink.KernelError(r.Error.Text(r.Arg), r.Error.Pos)
	case bpfgen.RecordExit:
		if !d.exited {
			d.exited = true
			d.sink.Flush()
			d.sink.KernelExit()
		}
	}
}

// stopReader lets the reader deliver what is in the ring, then frees it.
func (s *Session) stopReader() error {
	if s.reader == nil {
		return nil
	}
	s.reader.Stop()
	err := errors.Join(<-s.readerDone, s.reader.Close())
	s.reader = nil
	return err
}

// Stop detaches every program, then lets the reader deliver what is left
// in the ring and returns the number of records the ring had no room for.
func (s *Session) Stop() (lost uint64, err error) {
	err = errors.Join(s.detach(), s.stopReader())
	if s.gens != nil {
		s.gens.stopped = true
		err = errors.Join(err, s.gens.err)
	}
	if s.objs != nil {
		lost, _ = bpfrt.SumPerCPU(s.objs.shared[bpfgen.DropsMap], 0)
	}
	return lost, err
}
