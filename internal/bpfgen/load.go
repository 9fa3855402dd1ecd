package bpfgen

import (
	"errors"
	"fmt"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
)

// Maps are the kernel objects of a module: the globals' maps, the ring,
// the zero value, the target set and the scratch area of each program.
type Maps struct {
	ByName map[string]*ebpf.Map
	Ring   *bpfrt.Ring
	// Globals maps each global's layout to its map.
	Globals map[*Global]*ebpf.Map
	// Caches maps the layout of a global with a last-key cache to the cache.
	Caches map[*Global]*ebpf.Map
	owned  []*ebpf.Map
}

// CreateMaps creates the shared maps; call it after compiling every
// program (compilation decides the globals' layouts).
func (m *Module) CreateMaps() (*Maps, error) {
	ms := &Maps{ByName: map[string]*ebpf.Map{}, Globals: map[*Global]*ebpf.Map{}, Caches: map[*Global]*ebpf.Map{}}
	ring, err := bpfrt.NewRing("stap_ring", uint32(m.cfg.RingSize))
	if err != nil {
		return nil, err
	}
	ms.Ring = ring
	ms.ByName[RingMap], ms.ByName[DropsMap] = ring.Map, ring.Drops
	specs := []*ebpf.MapSpec{
		{Name: "stap_zero", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(max(m.zeroSize, 8)), MaxEntries: 1},
		{Name: "stap_state", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	}
	refs := []string{ZeroMap, StateMap}
	if m.cfg.Target {
		specs = append(specs, &ebpf.MapSpec{Name: "stap_target", Type: ebpf.Hash, KeySize: 4, ValueSize: 1,
			MaxEntries: uint32(m.cfg.MaxMapEntries)})
		refs = append(refs, TargetMap)
	}
	for _, gl := range m.order {
		specs = append(specs, gl.Spec)
		refs = append(refs, gl.Ref)
		if gl.Cache != nil {
			specs = append(specs, gl.Cache.Spec)
			refs = append(refs, gl.Cache.Ref)
		}
	}
	if m.cfg.Timing {
		mp, err := newTimingMap(m.programs)
		if err != nil {
			ms.Close()
			return nil, err
		}
		ms.owned = append(ms.owned, mp)
		ms.ByName[TimingMap] = mp
	}
	if m.syscalls {
		mp, err := newSyscallMap()
		if err != nil {
			ms.Close()
			return nil, err
		}
		ms.owned = append(ms.owned, mp)
		ms.ByName[SyscallMap] = mp
	}
	for i, spec := range specs {
		mp, err := ebpf.NewMap(spec)
		if err != nil {
			ms.Close()
			return nil, fmt.Errorf("map %s: %w", spec.Name, err)
		}
		ms.owned = append(ms.owned, mp)
		ms.ByName[refs[i]] = mp
	}
	for _, gl := range m.order {
		ms.Globals[gl] = ms.ByName[gl.Ref]
		if gl.Cache != nil {
			ms.Caches[gl] = ms.ByName[gl.Cache.Ref]
		}
	}
	return ms, nil
}

// Close frees every map.
func (ms *Maps) Close() error {
	var errs []error
	for _, mp := range ms.owned {
		errs = append(errs, mp.Close())
	}
	ms.owned = nil
	if ms.Ring != nil {
		errs = append(errs, ms.Ring.Close())
		ms.Ring = nil
	}
	return errors.Join(errs...)
}

// Load creates p's scratch area (owned by ms from then on) and loads p
// for tp; the program is not attached. A verifier rejection comes back as
// *LoadError naming the script position of the failing instruction.
func (p *Program) Load(ms *Maps, tp *kernel.Tracepoint, logLevel uint32) (*bpfrt.Program, error) {
	maps := make(map[string]*ebpf.Map, len(ms.ByName)+1)
	for k, v := range ms.ByName {
		maps[k] = v
	}
	if p.ScratchSize > 0 {
		scratch, err := bpfrt.NewPerCPUArray("stap_scratch", uint32(p.ScratchSize), 1)
		if err != nil {
			return nil, err
		}
		ms.owned = append(ms.owned, scratch)
		maps[ScratchMap] = scratch
	}
	spec := &bpfrt.ProgramSpec{Name: programName(p), Mechanism: p.mech, Tracepoint: tp,
		Instructions: p.Instructions, Maps: maps, LogLevel: logLevel}
	prog, err := bpfrt.Load(spec)
	var ve *bpfrt.VerifierError
	if errors.As(err, &ve) {
		return nil, &LoadError{Pos: p.PosOf(ve.Insn), Err: ve}
	}
	return prog, err
}

// LoadError is a verifier rejection with the script position of the
// instruction the verifier stopped at.
type LoadError struct {
	Pos syntax.Pos
	Err *bpfrt.VerifierError
}

func (e *LoadError) Error() string {
	if !e.Pos.IsValid() {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (at %s)", e.Err, e.Pos)
}

func (e *LoadError) Unwrap() error { return e.Err }

// programName is the kernel name of a probe's program.
func programName(p *Program) string {
	if p.Probe.Point != nil && len(p.Probe.Point.Components) > 0 {
		return "stap_" + p.Probe.Point.Components[len(p.Probe.Point.Components)-1].Name
	}
	return "stap_probe"
}
