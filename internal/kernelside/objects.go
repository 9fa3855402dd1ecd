package kernelside

import (
	"errors"
	"fmt"
	"maps"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/cilium/ebpf"
)

// objects are the kernel objects of a session: the maps package bpfgen
// describes, created here, and the programs, loaded through package bpfrt
// with every map reference bound.
type objects struct {
	shared map[string]*ebpf.Map // the module's maps, by bpfgen.Map.Ref
	owned  []*ebpf.Map          // every map created: shared ones and the programs' own
}

// createMaps creates the maps of a module.
func createMaps(defs []bpfgen.Map) (*objects, error) {
	o := &objects{shared: map[string]*ebpf.Map{}}
	for _, d := range defs {
		m, err := o.create(d)
		if err != nil {
			o.close()
			return nil, err
		}
		o.shared[d.Ref] = m
	}
	return o, nil
}

// create creates one map, which o then owns.
func (o *objects) create(d bpfgen.Map) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(d.Spec)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", d.Spec.Name, err)
	}
	o.owned = append(o.owned, m)
	return m, nil
}

// load creates p's own maps and loads p for its probe's attach point; the
// program is not attached. A verifier rejection comes back as *Error at the
// script position of the instruction the verifier stopped at.
func (o *objects) load(p *bpfgen.Program, logLevel uint32) (*bpfrt.Program, error) {
	refs := maps.Clone(o.shared)
	for _, d := range p.Maps {
		m, err := o.create(d)
		if err != nil {
			return nil, err
		}
		refs[d.Ref] = m
	}
	lp, err := bpfrt.Load(&bpfrt.ProgramSpec{Name: programName(p), Attach: p.Probe.Attach,
		Instructions: p.Instructions, Maps: refs, LogLevel: logLevel})
	var ve *bpfrt.VerifierError
	if errors.As(err, &ve) {
		pos := p.PosOf(ve.Insn)
		if !pos.IsValid() {
			pos = p.Probe.Point.Position()
		}
		return nil, &Error{Pos: pos, Msg: fmt.Sprintf("%v in probe %s", ve, p.Probe.Name), Log: ve.Log}
	}
	return lp, err
}

// programName is the kernel name of a probe's program.
func programName(p *bpfgen.Program) string {
	if p.Probe.Point != nil && len(p.Probe.Point.Components) > 0 {
		return "stap_" + p.Probe.Point.Components[len(p.Probe.Point.Components)-1].Name
	}
	return "stap_probe"
}

// close frees every map.
func (o *objects) close() error {
	var errs []error
	for _, m := range o.owned {
		errs = append(errs, m.Close())
	}
	o.owned = nil
	return errors.Join(errs...)
}
