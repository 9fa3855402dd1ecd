package sema

import (
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/snapshot"
	"github.com/bpftap/bpftap/internal/syntax"
)

// programCodec writes a Program to bytes and reads it back in another
// run (internal/driver's program cache): its syntax trees, symbols and
// the kernel probes' accesses, the BTF they name by name. Pass 2's
// working state (Probe.context) is not written.
var programCodec = sync.OnceValues(func() (*snapshot.Codec, error) {
	return snapshot.New((*Program)(nil), snapshot.Types{
		Concrete: syntax.NodeTypes(),
		Externs: []snapshot.Extern{{
			Type:    (*kernel.BTF)(nil),
			Name:    func(x any) (string, error) { return x.(*kernel.BTF).Name() },
			Resolve: func(name string) (any, error) { return kernel.Named(name) },
		}},
	})
})

// Encode writes the program for Decode to read back.
func (p *Program) Encode() ([]byte, error) {
	c, err := programCodec()
	if err != nil {
		return nil, err
	}
	return c.Encode(p)
}

// Decode reads a program Encode wrote, in a run of the same binary; the
// program's strings are data's bytes, which must not change afterwards.
func Decode(data []byte) (*Program, error) {
	c, err := programCodec()
	if err != nil {
		return nil, err
	}
	p, err := c.Decode(data)
	if err != nil {
		return nil, err
	}
	return p.(*Program), nil
}
