package kernelside

import (
	"bytes"
	"encoding/binary"
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
	prefix   string               // of every object's name: see Config.NamePrefix
	progress func(string)         // Config.Progress, or nil
	shared   map[string]*ebpf.Map // the module's maps, by bpfgen.Map.Ref
	// inner are the maps in each map of maps the module describes (a global
	// in generations), by the outer map's Ref, in the order of their
	// elements.
	inner map[string][]*ebpf.Map
	owned []*ebpf.Map // every map created: shared ones and the programs' own
	// batch says the kernel fills an array's contents in one call
	// (target.BatchMapUpdate).
	batch bool
}

// createMaps creates the maps of a module, their names after prefix,
// telling progress about the big ones, the contents of arrays put in one
// call where batch says the kernel can.
func createMaps(defs []bpfgen.Map, prefix string, progress func(string), batch bool) (*objects, error) {
	o := &objects{prefix: prefix, progress: progress, shared: map[string]*ebpf.Map{}, inner: map[string][]*ebpf.Map{},
		batch: batch}
	for _, d := range defs {
		m, err := o.create(d)
		if err != nil {
			o.close()
			return nil, err
		}
		o.shared[d.Ref] = m
		if d.Spec.Type == ebpf.ArrayOfMaps {
			// The other elements when first needed (a global's second
			// generation: generations.go).
			if _, err := o.addInner(d, 0); err != nil {
				o.close()
				return nil, err
			}
		}
	}
	return o, nil
}

// addInner creates a map of d's inner spec and puts it in element i of
// d's map, the map of maps o.shared[d.Ref]; o.inner[d.Ref] lists it.
func (o *objects) addInner(d bpfgen.Map, i uint32) (*ebpf.Map, error) {
	m, err := o.create(bpfgen.Map{Ref: d.Ref, Spec: d.Spec.InnerMap})
	if err != nil {
		return nil, err
	}
	if err := o.shared[d.Ref].Update(i, m, ebpf.UpdateAny); err != nil {
		return nil, fmt.Errorf("map %s: %w", d.Spec.Name, err)
	}
	o.inner[d.Ref] = append(o.inner[d.Ref], m)
	return m, nil
}

// create creates one map, which o then owns.
func (o *objects) create(d bpfgen.Map) (*ebpf.Map, error) {
	spec := d.Spec.Copy()
	spec.Name = o.name(spec.Name)
	if mib := mapMiB(spec); o.progress != nil && mib >= bigMapMiB {
		o.progress(fmt.Sprintf("creating map %s: %d elements, about %d MiB", d.Spec.Name, spec.MaxEntries, mib))
	}
	contents := spec.Contents
	batched := o.batch && spec.Type == ebpf.Array && len(contents) > 1
	if batched {
		spec.Contents = nil
	}
	m, err := ebpf.NewMap(spec)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", d.Spec.Name, err)
	}
	o.owned = append(o.owned, m)
	if batched {
		if err := fillArray(m, contents); err != nil {
			return nil, fmt.Errorf("map %s: %w", d.Spec.Name, err)
		}
	}
	return m, nil
}

// fillArray puts contents in array m with one batch update: one system
// call, where cilium/ebpf's call an element cost 4 ms for the 1,400 elements
// of syscall.*.return's tables of names.
func fillArray(m *ebpf.Map, contents []ebpf.MapKV) error {
	keys := make([]uint32, len(contents))
	values := make(valueRows, len(contents))
	for i, kv := range contents {
		key, ok := kv.Key.(uint32)
		if !ok {
			return fmt.Errorf("array key %v is not a uint32", kv.Key)
		}
		keys[i] = key
		var err error
		if values[i], err = binary.Append(nil, binary.NativeEndian, kv.Value); err != nil {
			return err
		}
	}
	_, err := m.BatchUpdate(keys, values, nil)
	return err
}

// valueRows are the values of a batch update, each marshalled: cilium/ebpf
// counts them as a slice and sends them as one buffer.
type valueRows [][]byte

// MarshalBinary implements encoding.BinaryMarshaler.
func (r valueRows) MarshalBinary() ([]byte, error) { return bytes.Join(r, nil), nil }

// bind creates p's own maps and returns the maps p's instructions name.
func (o *objects) bind(p *bpfgen.Program) (map[string]*ebpf.Map, error) {
	refs := maps.Clone(o.shared)
	for _, d := range p.Maps {
		m, err := o.create(d)
		if err != nil {
			return nil, err
		}
		refs[d.Ref] = m
	}
	return refs, nil
}

// load loads p, its maps bound (refs), for its probe's attach point; the
// program is not attached. A verifier rejection comes back as *Error at the
// script position of the instruction the verifier stopped at. Safe to call
// for several programs at once.
func (o *objects) load(p *bpfgen.Program, refs map[string]*ebpf.Map, logLevel uint32) (*bpfrt.Program, error) {
	lp, err := bpfrt.Load(&bpfrt.ProgramSpec{Name: o.name(programName(p)), Attach: p.Attach,
		Instructions: p.Instructions, Maps: refs, LogLevel: logLevel, Sleepable: p.Sleepable})
	var ve *bpfrt.VerifierError
	if errors.As(err, &ve) {
		pos := p.PosOf(ve.Insn)
		if !pos.IsValid() && p.Probe.Point != nil { // the programs bpftap adds have none
			pos = p.Probe.Point.Position()
		}
		return nil, &Error{Pos: pos, Msg: fmt.Sprintf("%v in probe %s", ve, p.Probe.Name), Log: ve.Log}
	}
	return lp, err
}

// bigMapMiB is the size from which creating a map is worth a progress line
// (a preallocated hash of 4 million elements takes about a second).
const bigMapMiB = 64

// mapMiB estimates the memory of a map: its elements' keys and values,
// a value per possible CPU in per-CPU maps.
func mapMiB(spec *ebpf.MapSpec) uint64 {
	copies := uint64(1)
	if spec.Type == ebpf.PerCPUHash || spec.Type == ebpf.PerCPUArray {
		n, _ := ebpf.PossibleCPU()
		copies = uint64(max(n, 1))
	}
	return uint64(spec.MaxEntries) * (uint64(spec.KeySize) + copies*uint64(spec.ValueSize)) >> 20
}

// programName names a probe's program after its attach point's event, or
// the probe point's last component.
func programName(p *bpfgen.Program) string {
	switch {
	case p.Probe.Attach != nil && p.Probe.Attach.Event != "":
		return p.Probe.Attach.Event
	case p.Probe.Point != nil && len(p.Probe.Point.Components) > 0:
		return p.Probe.Point.Components[len(p.Probe.Point.Components)-1].Name
	}
	return "probe"
}

// name is the kernel name of the object called name: the run's prefix,
// then name, within the kernel's 15 bytes.
func (o *objects) name(name string) string {
	name = o.prefix + name
	if len(name) > maxObjectName {
		name = name[:maxObjectName]
	}
	return name
}

// maxObjectName is BPF_OBJ_NAME_LEN without its NUL.
const maxObjectName = 15

// close frees every map.
func (o *objects) close() error {
	var errs []error
	for _, m := range o.owned {
		errs = append(errs, m.Close())
	}
	o.owned = nil
	return errors.Join(errs...)
}
