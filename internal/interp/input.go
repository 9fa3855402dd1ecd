package interp

import (
	"bufio"
	"context"
	"io"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
)

// Standard input: the procfs("__stdin").write probes (input.char and
// input.line) run once for each byte of Config.Stdin, in program order, as
// stapio writes its standard input to stap's module one byte a write. The
// probes run while the session runs; the end of the input, or a read error,
// ends the feeding and nothing else.

// ReadsInput tells whether the program has input probes, which read
// Config.Stdin.
func (in *Interp) ReadsInput() bool { return len(in.inputProbes()) > 0 }

// inputProbes returns the procfs("__stdin").write probes.
func (in *Interp) inputProbes() []*sema.Probe {
	var list []*sema.Probe
	for _, p := range in.prog.Probes {
		if !p.Kernel && p.Family == probes.ProcfsFamily && probes.Procfs(p.Point.Components).Name == probes.StdinFile {
			list = append(list, p)
		}
	}
	return list
}

// feedInput reads stdin byte by byte and runs the input probes for each,
// until the input ends or the session stops.
func (in *Interp) feedInput(stdin io.Reader, list []*sema.Probe) {
	r := bufio.NewReader(stdin)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		select {
		case <-in.done:
			return
		default:
		}
		for _, p := range list {
			in.fireProcfs(context.Background(), p, string([]byte{b}))
		}
	}
}
