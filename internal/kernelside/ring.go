package kernelside

import (
	"errors"

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
// record to sink. Records that follow an exit() record are dropped: stap
// runs no probe handler once exit() was called.
func (s *Session) Start(sink Sink) error {
	if s.objs == nil {
		return nil
	}
	rr, err := bpfrt.NewRingReader(s.objs.shared[bpfgen.RingMap], 0)
	if err != nil {
		return output.Failf("%w", err)
	}
	s.reader, s.readerDone = rr, make(chan error, 1)
	exited := false
	deliver := func(rec []byte) {
		if exited {
			return
		}
		r, err := s.mod.Decode(rec)
		switch {
		case err != nil:
			sink.KernelError(err.Error(), syntax.Pos{})
		case r.Kind == bpfgen.RecordPrint:
			for i := range r.Args {
				r.Args[i].Str = s.stacks.expand(r.Args[i].Str)
			}
			if r.Output.Effect != nil {
				sink.KernelCall(r.Output.Effect, r.Args)
			} else {
				sink.KernelPrint(r.Output.Call, r.Args)
			}
		case r.Kind == bpfgen.RecordError:
			sink.KernelError(r.Error.Text(r.Arg), r.Error.Pos)
		case r.Kind == bpfgen.RecordExit:
			exited = true
			sink.Flush()
			sink.KernelExit()
		}
	}
	go func() { s.readerDone <- rr.Run(deliver, sink.Flush) }()
	return nil
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
