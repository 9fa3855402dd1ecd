package kernelside

import (
	"errors"
	"os"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
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
	return loads("probe_may_goto", bpfgen.MayGotoProbe())
})

// HasV4ISA tells whether the kernel knows the instructions of BPF's fourth
// ISA version that bpfgen uses (Linux 6.6: signed division and modulo,
// sign-extending loads): bpfgen.V4ISAProbe is loaded once per process, as
// HasMayGoto's probe. (cilium/ebpf's features.HaveV4ISA tries a long jump,
// which Debian's 6.1 accepts while it refuses these.) BPFTAP_V4ISA=0 says
// no without asking.
var HasV4ISA = sync.OnceValue(func() bool {
	if os.Getenv("BPFTAP_V4ISA") == "0" {
		return false
	}
	return loads("probe_v4isa", bpfgen.V4ISAProbe())
})

// HasSleepableUprobes tells whether uprobe programs may sleep, so that
// their user string reads fault pages in (bpfgen's sleepable.go):
// bpfgen.SleepableProbe, which calls bpf_copy_from_user, is loaded once
// per process as a sleepable kprobe-type program (never attached; the
// kernel checks at attach time that such a program goes on a uprobe).
// Any failure says no. BPFTAP_SLEEPABLE_UPROBES=0 says no without asking.
var HasSleepableUprobes = sync.OnceValue(func() bool {
	if os.Getenv("BPFTAP_SLEEPABLE_UPROBES") == "0" {
		return false
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "probe_sleepable", Type: ebpf.Kprobe,
		Flags: unix.BPF_F_SLEEPABLE, License: "GPL", Instructions: bpfgen.SleepableProbe()})
	if err != nil {
		return false
	}
	prog.Close()
	return true
})

// loads tells whether the verifier accepts insns as a raw tracepoint
// program: only its refusal says no.
func loads(name string, insns asm.Instructions) bool {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.RawTracepoint,
		License: "GPL", Instructions: insns})
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return false
	}
	if err == nil {
		prog.Close()
	}
	return true
}
