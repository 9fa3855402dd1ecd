package target

import (
	"errors"
	"fmt"
	"sync"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// detector detects the running kernel's features, each once per process.
type detector struct {
	mu      sync.Mutex
	results map[*Feature]*detection
}

type detection struct {
	once sync.Once
	err  error
}

// detect runs f's probe once and returns its verdict: nil when the kernel
// has f (or f has no probe).
func (d *detector) detect(f *Feature) error {
	if f.probe == nil {
		return nil
	}
	d.mu.Lock()
	if d.results == nil {
		d.results = map[*Feature]*detection{}
	}
	r := d.results[f]
	if r == nil {
		r = &detection{}
		d.results[f] = r
	}
	d.mu.Unlock()
	r.once.Do(func() {
		RaiseMemlock() // best effort: see RaiseMemlock
		r.err = f.probe()
	})
	return r.err
}

// The probes of the features nothing a program does tells: the running
// kernel's version decides. (Set in init: a probe reads its feature's
// own Since.)
func init() {
	CommPadded.probe = byRelease(CommPadded, "copies a task's new name with strlcpy")
	RuntimeAllocMaps.probe = byRelease(RuntimeAllocMaps, "has no BPF memory allocator for tracing programs")
}

// byRelease is the probe of f by the running kernel's version; why says
// what a kernel before f.Since does.
func byRelease(f *Feature, why string) func() error {
	return func() error {
		if v := runningKernel().Release; v.Before(f.Since) {
			return fmt.Errorf("Linux %s %s", v, why)
		}
		return nil
	}
}

// helper probes for a helper the kernel lets kprobe programs call (every
// helper bpftap uses is one tracing programs may call).
func helper(fn asm.BuiltinFunc) func() error {
	return func() error { return unsupportedOnly(features.HaveProgramHelper(ebpf.Kprobe, fn)) }
}

func mapType(t ebpf.MapType) func() error {
	return func() error { return unsupportedOnly(features.HaveMapType(t)) }
}

// btfTracepoints loads a BTF-typed tracepoint program on sys_enter.
// cilium/ebpf's probe of the tracing program type loads an fentry program,
// which needs a BPF trampoline: Debian's 5.10 arm64 kernel has none and
// runs tp_btf programs all the same. A refusal for want of permission is
// not the kernel's verdict: pass 4 reports it with the script's programs.
func btfTracepoints() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
		AttachTo: "sys_enter", License: "GPL", Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	switch {
	case err == nil:
		prog.Close()
		return nil
	case errors.Is(err, unix.EPERM):
		return nil
	}
	return fmt.Errorf("a tp_btf program on sys_enter does not load: %w", err)
}

// unsupportedOnly keeps cilium/ebpf's verdict that the kernel lacks a
// feature and drops any other failure (no permission to load programs):
// pass 4 reports that one with the script's own programs.
func unsupportedOnly(err error) error {
	if errors.Is(err, ebpf.ErrNotSupported) {
		return err
	}
	return nil
}

// loads probes by loading the program insns builds as a raw tracepoint
// program (never attached): only the verifier's refusal says no.
func loads(build func() (asm.Instructions, error)) func() error {
	return func() error {
		insns, err := build()
		if err != nil {
			return err
		}
		return verifierRefuses(insns)
	}
}

// verifierRefuses loads insns as a raw tracepoint program and returns the
// verifier's refusal, nil if it accepts them or another failure comes
// first.
func verifierRefuses(insns asm.Instructions) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns})
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the verifier refuses it: %w", err)
	}
	if err == nil {
		prog.Close()
	}
	return nil
}

// sleepableUprobes loads a sleepable kprobe-type program that calls
// bpf_copy_from_user (never attached: the kernel checks at attach time
// that such a program goes on a uprobe). Any failure says no.
func sleepableUprobes() error {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R0, 0), asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8),
		asm.Mov.Imm(asm.R2, 1), asm.Mov.Imm(asm.R3, 0),
		asm.FnCopyFromUser.Call(),
		asm.Mov.Imm(asm.R0, 0), asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Flags: unix.BPF_F_SLEEPABLE,
		License: "GPL", Instructions: insns})
	if err != nil {
		return err
	}
	return prog.Close()
}

// bigKeys creates a hash map with a 513-byte key: kernels before 5.11
// refuse keys longer than the BPF stack (E2BIG).
func bigKeys() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 513, ValueSize: 8, MaxEntries: 1})
	if errors.Is(err, unix.E2BIG) {
		return err
	}
	if err == nil {
		m.Close()
	}
	return nil
}

// batchMapUpdate creates an array of one element and updates it in a batch.
func batchMapUpdate() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return nil // not the feature's verdict: pass 4 reports it with the script's maps
	}
	defer m.Close()
	_, err = m.BatchUpdate([]uint32{0}, []uint32{1}, nil)
	return unsupportedOnly(err)
}

// kfuncs probes for kernel functions by name in the kernel's BTF.
func kfuncs(names ...string) func() error {
	return func() error {
		_, err := kernel.KfuncIDs(names...)
		return err
	}
}

// mayGotoProbe is a may_goto (Linux 6.9), which older verifiers refuse.
func mayGotoProbe() (asm.Instructions, error) {
	return asm.Instructions{
		asm.Mov.Imm(asm.R0, 0),
		MayGotoJump("out"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return().WithSymbol("out"),
	}, nil
}

// MayGotoJump is the instruction may_goto to label: a jump while the
// kernel's budget for the program's loops lasts.
func MayGotoJump(label string) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.JCOND), Src: asm.PseudoMayGoto, Offset: -1}.WithReference(label)
}

// v4ISAProbe uses the fourth ISA's signed division and sign-extending
// load (Linux 6.6).
func v4ISAProbe() (asm.Instructions, error) {
	return asm.Instructions{
		asm.Mov.Imm(asm.R0, -4),
		asm.Mov.Imm(asm.R1, 2),
		asm.SDiv.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.LoadMemSX(asm.R0, asm.R10, -8, asm.Word),
		asm.Return(),
	}, nil
}

// atomicFetchProbe adds with BPF_FETCH to a stack word (Linux 5.12; older
// verifiers say "BPF_STX uses reserved fields").
func atomicFetchProbe() (asm.Instructions, error) {
	fetchAdd := asm.AddAtomic.Mem(asm.R10, asm.R1, asm.DWord, -8)
	fetchAdd.Constant = 0x01 // BPF_ADD | BPF_FETCH
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 1), fetchAdd,
		asm.Mov.Reg(asm.R0, asm.R1), asm.Return(),
	}, nil
}

// globalPointerProbe calls a global function that takes a pointer to
// eight bytes (Linux 5.12; older verifiers say "Arg#0 type PTR in f() is
// not supported yet").
func globalPointerProbe() (asm.Instructions, error) {
	return callWithPointer(asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 0, asm.Byte)}), nil
}

// memMapKeys looks the eight bytes a global function's pointer argument
// points to up as a map key (Linux 6.2; older verifiers say "R2 type=mem
// expected=fp, pkt, pkt_meta, map_key, map_value").
func memMapKeys() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil // not the verifier's word: pass 4 reports it with the script's maps
	}
	defer m.Close()
	return verifierRefuses(callWithPointer(asm.Instructions{
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.FnMapLookupElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
	}))
}

// subprogTailCalls loads a program that calls a BPF function and makes a
// tail call: older verifiers (arm64's before Linux 6.0, x86-64's before
// 5.10) say "tail_calls are not allowed in non-JITed programs with
// bpf-to-bpf calls".
func subprogTailCalls() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return nil // not the verifier's word: pass 4 reports it with the script's maps
	}
	defer m.Close()
	return verifierRefuses(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Call.Label("callee"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, m.FD()),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("callee"),
		asm.Return(),
	})
}

// callWithPointer is a program that calls a global function with a
// pointer to eight bytes of its stack; the function runs body on it (in
// R1, not null) and returns R0.
func callWithPointer(body asm.Instructions) asm.Instructions {
	bytes8 := &btf.Pointer{Target: &btf.Array{Index: &btf.Int{Name: "unsigned int", Size: 4},
		Type: &btf.Int{Name: "unsigned char", Size: 1}, Nelems: 8}}
	intType := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	main := &btf.Func{Name: "probe", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intType,
		Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}}}}
	callee := &btf.Func{Name: "callee", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: intType,
		Params: []btf.FuncParam{{Name: "p", Type: bytes8}}}}
	insns := asm.Instructions{
		btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0), main).WithSymbol("probe"),
		asm.StoreMem(asm.R10, -8, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8),
		asm.Call.Label("callee"),
		asm.Return(),
		btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0), callee).WithSymbol("callee"),
		asm.JEq.Imm(asm.R1, 0, "out"),
	}
	insns = append(insns, body...)
	return append(insns, asm.Return().WithSymbol("out"))
}
