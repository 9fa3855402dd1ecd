package target

import (
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// Feature is a facility of the kernel that bpftap relies on.
type Feature struct {
	// Name is how BPFTAP_KERNEL_WITHOUT names it ("atomic_fetch").
	Name string
	// What it is, for messages: "this kernel lacks WHAT (Linux SINCE has
	// it)".
	What string
	// Since is the first upstream release that has it; OnARM64 the first
	// that has it on arm64, where that is a later one (else zero).
	Since, OnARM64 Version
	// Config is the kernel option it needs besides ("CONFIG_KPROBES"), ""
	// when every kernel of Since's version has it.
	Config string
	// RefusedBy names the policy of the running kernel that may refuse
	// it on any release ("lockdown"), "" for none: such a feature
	// is always detected, never inferred from the version.
	RefusedBy string
	// Detect says how bpftap finds out, Fallback what bpftap does without
	// it ("" when what needs it is refused, naming the feature).
	Detect, Fallback string
	// probe detects it on the running kernel: nil when it has it. Nil
	// for the kinds of attach point, which package bpfrt tries on the
	// point itself (Detect says so).
	probe func() error
}

// SinceOn is the first upstream release that has f on the architecture
// regs (nil: Since).
func (f *Feature) SinceOn(regs *arch.Regs) Version {
	if regs == arch.ARM64 && f.OnARM64 != (Version{}) {
		return f.OnARM64
	}
	return f.Since
}

// The features, oldest first. Minimum versions are upstream's; Debian 11
// ships 5.10, RHEL 8 a 4.18 with many backports (detection, not the
// version, decides), RHEL 9 5.14, Ubuntu 22.04 5.15.
var (
	// The kernel refuses bpf_probe_write_user to every program under
	// lockdown (integrity or confidentiality mode: a kernel booted with
	// lockdown=, or Secure Boot's).
	WriteUser = &Feature{Name: "probe_write_user", What: "bpf_probe_write_user",
		Since: Version{4, 8}, RefusedBy: "lockdown", Detect: "helper probe (cilium/ebpf features)", probe: helper(asm.FnProbeWriteUser)}
	ProbeReadKernel = &Feature{Name: "probe_read_kernel", What: "bpf_probe_read_kernel and bpf_probe_read_user",
		Since: Version{5, 5}, Detect: "helper probe (cilium/ebpf features)", probe: helper(asm.FnProbeReadKernel)}
	TracingPrograms = &Feature{Name: "tp_btf", What: "BTF-typed tracepoints and fentry/fexit programs",
		Since: Version{5, 5}, Config: "CONFIG_DEBUG_INFO_BTF",
		Detect: "a tp_btf program loaded on sys_enter", probe: btfTracepoints,
		Fallback: "raw tracepoints with arguments read from the context"}
	BatchMapUpdate = &Feature{Name: "batch_map_update", What: "updates of many array elements in one call (BPF_MAP_UPDATE_BATCH)",
		Since: Version{5, 6}, Detect: "a batch update of a one-element array", probe: batchMapUpdate,
		Fallback: "one update per element (about 3 µs each: 4 ms for the 1,400 elements of syscall.*.return's name tables)"}
	RingBuffer = &Feature{Name: "ringbuf", What: "the BPF ring buffer", Since: Version{5, 8},
		Detect: "map type probe (cilium/ebpf features)", probe: mapType(ebpf.RingBuf),
		Fallback: "none yet: kernel probes are refused (below)"}
	TaskStack = &Feature{Name: "task_stack", What: "bpf_get_task_stack", Since: Version{5, 9},
		Detect: "helper probe", probe: helper(asm.FnGetTaskStack)}
	MemcgAccounting = &Feature{Name: "memcg_accounting", What: "BPF memory charged to the memory cgroup",
		Since: Version{5, 11}, Detect: "a map created under a zero RLIMIT_MEMLOCK, when bpftap first makes a BPF object",
		Fallback: "RLIMIT_MEMLOCK raised to unlimited before the first map"}
	BigKeys = &Feature{Name: "big_keys", What: "hash map keys longer than 512 bytes", Since: Version{5, 11},
		Detect: "a hash map created with a 513-byte key", probe: bigKeys,
		Fallback: "the string columns of a longer key narrowed to fit 512 bytes (a longer string is cut there, as at MAXSTRINGLEN)"}
	TaskBTF = &Feature{Name: "task_btf", What: "bpf_get_current_task_btf", Since: Version{5, 11},
		Detect: "helper probe", probe: helper(asm.FnGetCurrentTaskBtf),
		Fallback: "bpf_get_current_task and probe reads of the task's fields"}
	TaskStorage = &Feature{Name: "task_storage", What: "task-local storage in tracing programs", Since: Version{5, 11},
		Detect: "map type probe", probe: mapType(ebpf.TaskStorage),
		Fallback: "a hash map keyed by thread id, entries deleted when the thread exits"}
	GlobalFuncPointers = &Feature{Name: "global_func_pointers",
		What: "global BPF functions with pointer arguments", Since: Version{5, 12},
		Detect: "trial load", probe: loads(globalPointerProbe),
		Fallback: "global functions that take offsets into the scratch element, each with a frame of its own"}
	AtomicFetch = &Feature{Name: "atomic_fetch", What: "atomic fetch-and-add and compare-and-exchange (BPF_FETCH)",
		Since: Version{5, 12}, Detect: "trial load", probe: loads(atomicFetchProbe),
		Fallback: "plain atomic adds (the value of n++ may include other CPUs' adds), min and max raised in the keys of the nesting depth; wrapping arrays refused"}
	ForEachMapElem = &Feature{Name: "for_each_map_elem", What: "bpf_for_each_map_elem", Since: Version{5, 13},
		Detect: "helper probe", probe: helper(asm.FnForEachMapElem)}
	TaskPtRegs = &Feature{Name: "task_pt_regs", What: "bpf_task_pt_regs", Since: Version{5, 15},
		Detect: "helper probe", probe: helper(asm.FnTaskPtRegs)}
	FuncIP = &Feature{Name: "func_ip", What: "bpf_get_func_ip in kprobe programs", Since: Version{5, 15},
		Detect: "helper probe", probe: helper(asm.FnGetFuncIp),
		Fallback: "the address of the function the program is attached to, a constant"}
	TracingScalarPointers = &Feature{Name: "tracing_scalar_pointers",
		What: "fentry/fexit programs that read an argument pointing to a scalar (an int *, a char *)", Since: Version{5, 17},
		Detect:   "trial load of an fentry program on vfs_read that reads its loff_t * (bpfrt)",
		Fallback: "a kprobe on a function that takes such a pointer"}
	CommPadded = &Feature{Name: "comm_padded", What: "task names zero-padded to their 16 bytes", Since: Version{5, 17},
		Detect:   "the running kernel's version (before 5.17 __set_task_comm leaves an older, longer name's bytes after the NUL)",
		Fallback: "execname() copied with bpf_get_current_comm, which pads (a map key by name is then the same whatever name the task had before)"}
	Loop = &Feature{Name: "loop", What: "bpf_loop", Since: Version{5, 17}, Detect: "helper probe", probe: helper(asm.FnLoop),
		Fallback: "foreach walks the map at each iteration instead of a snapshot; over a wrapping array it is refused"}
	KprobeMulti = &Feature{Name: "kprobe_multi", What: "kprobe-multi links", Since: Version{5, 18}, Config: "CONFIG_FPROBE",
		Detect: "link probe (cilium/ebpf features)", probe: features.HaveBPFLinkKprobeMulti,
		Fallback: "a kprobe or fentry program per function"}
	SleepableUprobes = &Feature{Name: "sleepable_uprobes", What: "sleepable uprobe programs", Since: Version{6, 0},
		Detect: "trial load of a sleepable kprobe-type program calling bpf_copy_from_user", probe: sleepableUprobes,
		Fallback: "user strings read with bpf_probe_read_user: one in a page the process has not touched yet fails with stap's fault error"}
	SubprogTailCalls = &Feature{Name: "subprog_tail_calls", What: "tail calls from BPF programs that call BPF functions",
		Since: Version{6, 0}, Detect: "trial load (x86-64's JIT has them from 5.10, arm64's from 6.0)", probe: subprogTailCalls,
		Fallback: "the entries of syscall.* in one program, not two joined by a tail call (verified in about twice the time)"}
	RuntimeAllocMaps = &Feature{Name: "runtime_alloc_maps",
		What: "hash maps in tracing programs that allocate an element when it is added (BPF_F_NO_PREALLOC)", Since: Version{6, 1},
		Detect:   "the running kernel's version (before 6.1's BPF memory allocator the verifier calls them unsafe in tracing programs and refuses them in perf event programs)",
		Fallback: "hash maps that allocate all their elements when created (1-3 ms of start-up per 2,048 per-CPU elements)"}
	MemMapKeys = &Feature{Name: "mem_map_keys",
		What: "map keys and values in memory a global function's pointer argument points to", Since: Version{6, 2},
		Detect: "trial load", probe: memMapKeys,
		Fallback: "global functions that take offsets into the scratch element, as without global_func_pointers"}
	TaskFromPid = &Feature{Name: "task_from_pid", What: "the kfunc bpf_task_from_pid", Since: Version{6, 2},
		Detect: "kfunc in the kernel's BTF, then a trial load for the attach kind", probe: kfuncs("bpf_task_from_pid", "bpf_task_release")}
	IterNum = &Feature{Name: "iter_num", What: "the numeric iterator kfuncs (bpf_iter_num_new)", Since: Version{6, 4},
		Detect: "kfuncs in the kernel's BTF", probe: kfuncs("bpf_iter_num_new", "bpf_iter_num_next", "bpf_iter_num_destroy")}
	UprobeMulti = &Feature{Name: "uprobe_multi", What: "uprobe-multi links", Since: Version{6, 6},
		Detect: "link probe (cilium/ebpf features)", probe: features.HaveBPFLinkUprobeMulti,
		Fallback: "a uprobe link per address"}
	V4ISA = &Feature{Name: "v4isa", What: "BPF's fourth instruction set (signed division, sign-extending loads)",
		Since: Version{6, 6}, Detect: "trial load (cilium/ebpf's HaveV4ISA tries a long jump, which 6.1 accepts)",
		probe: loads(v4ISAProbe), Fallback: "the same with older instructions"}
	MayGoto = &Feature{Name: "may_goto", What: "the may_goto instruction", Since: Version{6, 9},
		Detect: "trial load", probe: loads(mayGotoProbe), Fallback: "loops bounded by counters the verifier walks"}
	KprobeSession = &Feature{Name: "kprobe_session", What: "kprobe sessions", Since: Version{6, 10}, Config: "CONFIG_FPROBE",
		Detect: "link probe (cilium/ebpf features)", probe: features.HaveBPFLinkKprobeSession,
		Fallback: "entry and return programs paired through a map"}

	Kprobes = &Feature{Name: "kprobes", What: "kprobes", Since: Version{4, 1}, Config: "CONFIG_KPROBES",
		Detect: "a trial attach on the probed function (bpfrt)"}
	// On arm64 a trampoline on a kernel function needs ftrace direct
	// calls (Linux 6.4, "arm64: ftrace: Add direct call support"):
	// Debian's 6.12 has them, its 5.10 and 6.1 do not.
	Fentry = &Feature{Name: "fentry", What: "fentry/fexit programs (BPF trampolines)", Since: Version{5, 5}, OnARM64: Version{6, 4},
		Detect:   "a trial attach on the probed function (bpfrt)",
		Fallback: "kprobes"}
	LSM = &Feature{Name: "bpf_lsm", What: "the BPF LSM (booted with bpf in lsm=)", Since: Version{5, 7}, OnARM64: Version{6, 4},
		Config: "CONFIG_BPF_LSM", Detect: "a trial attach on the hook (bpfrt)"}
)

// Features are the features bpftap relies on, in order of Since.
var Features = []*Feature{
	Kprobes, WriteUser, ProbeReadKernel, TracingPrograms, Fentry, LSM, BatchMapUpdate, RingBuffer, TaskStack, MemcgAccounting, BigKeys, TaskBTF,
	TaskStorage, GlobalFuncPointers, AtomicFetch, ForEachMapElem, TaskPtRegs, FuncIP, TracingScalarPointers, CommPadded, Loop,
	KprobeMulti, SleepableUprobes, SubprogTailCalls, RuntimeAllocMaps, MemMapKeys, TaskFromPid, IterNum, UprobeMulti, V4ISA, MayGoto, KprobeSession,
}

// Probed tells whether Kernel.Check detects f itself; the kinds of attach
// point are tried where they attach (package bpfrt), and Check reports
// them missing only when they are masked.
func (f *Feature) Probed() bool { return f.probe != nil }

// SetProbe gives f the probe that detects it, for a feature only the
// loader can try (package bpfrt sets them when the program starts).
func (f *Feature) SetProbe(probe func() error) { f.probe = probe }

// ByName returns the feature called name, or nil.
func ByName(name string) *Feature {
	for _, f := range Features {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func featureNames() string {
	names := make([]string, len(Features))
	for i, f := range Features {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
