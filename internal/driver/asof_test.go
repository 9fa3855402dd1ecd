package driver

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/kernelside"
	kern "github.com/bpftap/bpftap/internal/target"
	"github.com/bpftap/bpftap/internal/target/targettest"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// TestAsOf510Code compiles the kernel probes of every script of
// testdata/run for a kernel told to lack what Linux 5.10 lacks, and checks
// the instructions for what 5.10's verifier refuses and this kernel's
// accepts (TestRunAsOf510 runs them here, so it cannot tell): atomics with
// BPF_FETCH, helpers and kfuncs of later kernels, global functions with
// pointer arguments, task storage, may_goto, more than 64 maps (which no
// kernel allows a program). A script the compiler refuses
// for a missing feature passes: that refusal is the fallback.
func TestAsOf510Code(t *testing.T) {
	k := targettest.Running(t).AsOf(kern.Version{Major: 5, Minor: 10})
	for _, script := range runScripts(t) {
		name := strings.TrimSuffix(filepath.Base(script), ".stp")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prog, err := elaborateScript(t, script, false, io.Discard)
			if err != nil || len(kernelside.KernelProbes(prog)) == 0 {
				return
			}
			ks, err := kernelside.Compile(prog, kernelside.Config{Kernel: k})
			if errors.Is(err, kern.ErrMissing) {
				return
			}
			if err != nil {
				t.Skipf("does not compile here: %v", err)
			}
			for _, p := range ks.Compiled() {
				maps := map[string]bool{}
				for i, in := range p.Instructions {
					if why := notOn510(in); why != "" {
						t.Errorf("%s: instruction %d (%v): %s", p.Probe.Name, i, in, why)
					}
					if in.IsLoadFromMap() {
						maps[in.Reference()] = true
					}
				}
				if len(maps) > 64 { // MAX_USED_MAPS
					t.Errorf("%s uses %d maps, more than a program may", p.Probe.Name, len(maps))
				}
			}
		})
	}
}

// helpersAfter510 are the helpers bpfgen calls that came after Linux 5.10.
var helpersAfter510 = map[asm.BuiltinFunc]string{
	asm.FnGetCurrentTaskBtf: "5.11", asm.FnTaskStorageGet: "5.11", asm.FnForEachMapElem: "5.13",
	asm.FnTaskPtRegs: "5.15", asm.FnGetFuncIp: "5.15", asm.FnLoop: "5.17",
}

// notOn510 says why Linux 5.10's verifier would refuse in, "" when it
// would not.
func notOn510(in asm.Instruction) string {
	switch {
	case in.OpCode.Class().IsStore() && in.OpCode.Mode() == asm.AtomicMode && in.Constant != 0:
		return "an atomic with fetch (Linux 5.12)"
	case in.IsBuiltinCall() && helpersAfter510[asm.BuiltinFunc(in.Constant)] != "":
		return "a helper of Linux " + helpersAfter510[asm.BuiltinFunc(in.Constant)]
	case in.IsKfuncCall():
		return "a kfunc call"
	case in.OpCode.JumpOp() == asm.JCOND:
		return "may_goto (Linux 6.9)"
	}
	if fn := btf.FuncMetadata(&in); fn != nil && fn.Linkage == btf.GlobalFunc && fn.Name != "probe" {
		for _, p := range fn.Type.(*btf.FuncProto).Params {
			if _, ptr := p.Type.(*btf.Pointer); ptr {
				return "a global function with a pointer argument (Linux 5.12)"
			}
		}
	}
	return ""
}
