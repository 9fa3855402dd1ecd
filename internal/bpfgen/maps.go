package bpfgen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The maps of a module, described for whoever creates them (package
// kernelside): bpfgen decides every layout and emits the instructions that
// use them, and never creates a kernel object itself. Instructions name a
// map by its Ref (asm.LoadMapPtr(...).WithReference(Ref)); the loader binds
// each Ref to the map it created from the Spec.

// Map is one map of a module: the name its programs reference it by, and
// how to create it.
type Map struct {
	Ref  string
	Spec *ebpf.MapSpec
}

// Names under which programs reference the module's shared maps.
const (
	RingMap   = "ring"       // BPF_MAP_TYPE_RINGBUF of output and error records
	DropsMap  = "ring_drops" // per-CPU count of records that found the ring full
	TargetMap = "target"     // HASH u32 tgid → u8, maintained by the driver
	ZeroMap   = "zero"       // ARRAY of one zeroed value, the initial value of new map elements
	StateMap  = "state"      // ARRAY of one u64: nonzero once exit() was called (probes then do nothing)
)

// StatePaused is StateMap's word while user space pauses the probes
// (--monitor's pause key); exit() writes 1.
const StatePaused = 2

// wordSpec describes an ARRAY map of one u64 named name (a counter or a
// state word the programs share).
func wordSpec(name string) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
}

// ScratchMap is the name under which a program references its scratch area.
const ScratchMap = "scratch"

// Maps describes the maps the module's programs share; call it after
// compiling every program (compilation decides the globals' layouts).
func (m *Module) Maps() []Map {
	maps := []Map{
		{RingMap, &ebpf.MapSpec{Name: "ring", Type: ebpf.RingBuf, MaxEntries: uint32(m.cfg.RingSize)}},
		{DropsMap, perCPUArray("drops", 8, 1)},
		{ZeroMap, &ebpf.MapSpec{Name: "zero", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(max(m.zeroSize, 8)), MaxEntries: 1}},
		{StateMap, wordSpec("state")},
	}
	if m.skips {
		maps = append(maps, Map{SkipMap, wordSpec("skipped")})
	}
	if m.unread {
		maps = append(maps, Map{UnreadMap, wordSpec("unread_strings")})
	}
	if m.together {
		maps = append(maps, Map{RunMap, perCPUArray("run_sent", 8, 1)})
	}
	if m.guards {
		maps = append(maps, Map{NestMap, perCPUArray("nest", nestSize, 1)})
	}
	if m.cfg.Target {
		maps = append(maps, Map{TargetMap, &ebpf.MapSpec{Name: "target", Type: ebpf.Hash, KeySize: 4, ValueSize: 1,
			MaxEntries: uint32(m.cfg.Limits.MaxMapEntries)}})
	}
	if m.gens {
		maps = append(maps, Map{GenMap, genSpec()})
	}
	for _, gl := range m.order {
		maps = append(maps, Map{gl.Ref, gl.mapSpec()})
		if gl.Cache != nil {
			maps = append(maps, Map{gl.Cache.Ref, gl.Cache.Spec})
		}
		if gl.Ring != nil {
			maps = append(maps, *gl.Ring, *gl.Heads)
		}
		if gl.Changes != nil {
			maps = append(maps, *gl.Changes)
		}
	}
	if m.cfg.Timing {
		maps = append(maps, Map{TimingMap, perCPUArray("timing", uint32(TimingLayout.Size), uint32(max(m.programs, 1)))})
	}
	if m.syscalls {
		maps = append(maps, Map{SyscallMap, syscallMapSpec()})
	}
	maps = append(maps, m.syscallTextMapSpecs()...)
	if m.syscallNative {
		maps = append(maps, Map{SyscallNativeMap, syscallNativeMapSpec()})
	}
	if len(m.syscallSets) > 0 {
		maps = append(maps, Map{SyscallSetMap, syscallSetMapSpec(m.syscallSets)})
	}
	maps = append(maps, m.callTables...)
	maps = append(maps, m.stackMaps()...)
	if m.regexBase != nil {
		maps = append(maps, Map{RegexMap, m.regexMapSpec()})
	}
	if m.symbols {
		maps = append(maps, Map{SymbolMap, rangeMapSpec("ksyms", m.symtab)})
	}
	if m.modules {
		maps = append(maps, Map{ModuleMap, rangeMapSpec("kmods", m.modtab)})
	}
	if m.code {
		maps = append(maps, Map{CodeMap, rangeMapSpec("kcode", m.codetab)})
	}
	maps = append(maps, m.perfCounterMaps()...)
	return maps
}

// perCPUArray describes a per-CPU array of n slots of valueSize bytes.
func perCPUArray(name string, valueSize, n uint32) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: name, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: valueSize, MaxEntries: n}
}

// emitLookup emits R0 = bpf_map_lookup_elem(map, R10+keySlot), the key
// stored at stack offset keySlot, then a jump to miss when the element is
// absent (none when miss is ""). Clobbers R0-R5.
func emitLookup(mapRef string, keySlot int16, miss string) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapRef),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keySlot)),
		asm.FnMapLookupElem.Call(),
	}
	if miss != "" {
		insns = append(insns, asm.JEq.Imm(asm.R0, 0, miss))
	}
	return insns
}

// emitLookupIndex is emitLookup of element index of an array map: it
// stores the u32 key at keySlot first.
func emitLookupIndex(mapRef string, keySlot int16, index int32, miss string) asm.Instructions {
	return append(asm.Instructions{asm.StoreImm(asm.R10, keySlot, int64(index), asm.Word)},
		emitLookup(mapRef, keySlot, miss)...)
}
