package kernelside

import (
	"errors"
	"os"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
)

// HasMayGoto tells whether the kernel's verifier knows may_goto (Linux
// 6.9), with which bpfgen bounds loops: bpfgen.MayGotoProbe is loaded
// once per process, as a raw tracepoint program (never attached). Only a
// verifier's refusal says no; a load that fails for another reason (no
// permission) says yes, and pass 4 reports the reason with the script's
// own programs. BPFTAP_MAY_GOTO=0 in the environment says no without
// asking, so that the code for older kernels can be tried on a newer one.
var HasMayGoto = sync.OnceValue(func() bool {
	if os.Getenv("BPFTAP_MAY_GOTO") == "0" {
		return false
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "probe_may_goto", Type: ebpf.RawTracepoint,
		License: "GPL", Instructions: bpfgen.MayGotoProbe()})
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return false
	}
	if err == nil {
		prog.Close()
	}
	return true
})

// HasV4ISA tells whether the kernel knows the instructions of BPF's fourth
// ISA version (Linux 6.6: signed division and modulo, sign-extending
// loads), as cilium/ebpf's feature test finds (once per process).
// BPFTAP_V4ISA=0 says no without asking.
var HasV4ISA = sync.OnceValue(func() bool {
	if os.Getenv("BPFTAP_V4ISA") == "0" {
		return false
	}
	err := features.HaveV4ISA()
	return !errors.Is(err, ebpf.ErrNotSupported)
})
