// Package probestest provides a fake kernel for tests of the kernel probe
// families: a handful of tracepoints whose parameters are typed by a small
// BTF blob encoded here (task_struct, linux_binprm, pt_regs), so member
// chains resolve through the real kernel.BTF code. Offsets are those of a
// 6.1 x86_64 kernel where stap's oracle shows them (comm at 2976, pid at
// 2416, filename at 96, di at 112).
package probestest

import (
	"encoding/binary"
	"fmt"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
)

// Kernel is a fake probes.KernelInfo.
type Kernel struct {
	btf *kernel.BTF
	tps []*kernel.Tracepoint
}

func (k *Kernel) Tracepoints() ([]*kernel.Tracepoint, error) { return k.tps, nil }
func (k *Kernel) BTF() (*kernel.BTF, error)                  { return k.btf, nil }

// MatchTracepoints matches spec against the fake kernel's tracepoints.
func (k *Kernel) MatchTracepoints(spec string) ([]*kernel.Tracepoint, error) {
	return kernel.MatchTracepoints(k.tps, spec)
}

// TracefsError says that the fake kernel's tracefs was read.
func (k *Kernel) TracefsError() error { return nil }

// ModuleBTF says that the fake kernel has no module with BTF.
func (k *Kernel) ModuleBTF(name string) (*kernel.BTF, error) {
	return nil, fmt.Errorf("the kernel publishes no BTF for module %s", name)
}

// Functions lists a few functions, none of which the fake BTF describes.
func (k *Kernel) Functions() ([]*kernel.Function, error) {
	return kernel.ParseFilterFunctions([]byte("vfs_read\nvfs_write\nnfs_read [nfs]\nstatic_twin\nstatic_twin\n")), nil
}

// Debuginfo says the fake kernel's debug package is not installed.
func (k *Kernel) Debuginfo(module string) (*debuginfo.File, error) {
	tried := "/usr/lib/debug/boot/vmlinux-6.1.0-fake"
	if module != "" {
		tried = "/usr/lib/debug/lib/modules/6.1.0-fake/kernel/.../" + module + ".ko"
	}
	return nil, &debuginfo.KernelMissingError{Release: "6.1.0-fake", Module: module, Tried: []string{tried}}
}

// Has says the fake kernel has every feature.
func (k *Kernel) Has(*target.Feature) bool { return true }

// Exported names vfs_read the only exported function.
func (k *Kernel) Exported() (map[string]bool, error) { return map[string]bool{"vfs_read": true}, nil }

// EventFields gives the classic events of the fake kernel the fields of a
// 6.18 x86_64 kernel's format files.
func (k *Kernel) EventFields(system, event string) ([]kernel.Field, error) {
	fields, ok := classicFields[system+":"+event]
	if !ok {
		return nil, fmt.Errorf("events/%s/%s/format: no such file or directory", system, event)
	}
	return kernel.ParseFormat(fields)
}

var classicFields = map[string]string{
	"syscalls:sys_enter_openat": `
	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:int flags;	offset:32;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;`,
	"syscalls:sys_exit_openat": `
	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:long ret;	offset:16;	size:8;	signed:1;`,
	"sched:sched_wakeup_classic": `
	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:__data_loc char[] name;	offset:24;	size:4;	signed:0;`,
}

// Attachable accepts every attach point: the fake kernel attaches anything.
func (k *Kernel) Attachable(*attach.Point) error { return nil }

// FindsTasks refuses what Linux 6.18's verifier refuses: bpf_task_from_pid
// in raw tracepoint and uprobe (kprobe-type) programs.
func (k *Kernel) FindsTasks(a *attach.Point) error {
	switch a.Kind {
	case attach.RawTracepoint, attach.Uprobe, attach.Uretprobe, attach.UprobeMulti, attach.UretprobeMulti:
		return fmt.Errorf("the kernel does not let %s programs call bpf_task_from_pid", a.Kind)
	}
	return nil
}

// Type IDs of the fake BTF, in encoding order.
const (
	tInt kernel.TypeID = iota + 1
	tLong
	tChar
	tCharArray // char[16]
	tConstChar
	tCharPtr // const char *
	tTask
	tTaskPtr
	tBinprm
	tBinprmPtr
	tRegs
	tRegsPtr
	tPidT // typedef int pid_t
	tSchedEntity
	// The BPF LSM's: two hooks and a function that is not one.
	tBprmHookProto // int (struct linux_binprm *bprm)
	tBprmHook      // bpf_lsm_bprm_check_security
	tTaskHookProto // int (struct task_struct *task, long clone_flags)
	tTaskHook      // bpf_lsm_task_alloc
	tVerifyProg    // bpf_lsm_verify_prog: not a hook
	tHookList      // union security_list_options
	// A netfilter program's context and what it points to.
	tSkb
	tSkbPtr
	tNetDev
	tNetDevPtr
	tHookState
	tHookStatePtr
	tNfCtx
	// Enums: @enum and @enumname read them.
	tPidType // enum pid_type
	tBig     // enum big, an enum64
)

// New returns the fake kernel.
func New() *Kernel {
	var e encoder
	e.strs = []byte{0}
	e.int("int", 4, true)
	e.int("long int", 8, true)
	e.int("char", 1, true)
	e.array(tChar, 16)
	e.rec("", kernel.KindConst, 0, uint32(tChar))
	e.rec("", kernel.KindPtr, 0, uint32(tConstChar))
	e.strct("task_struct", 9728, member{"se", tSchedEntity, 192}, member{"pid", tPidT, 2416}, member{"tgid", tPidT, 2420},
		member{"real_parent", tTaskPtr, 2432}, member{"comm", tCharArray, 2976})
	e.rec("", kernel.KindPtr, 0, uint32(tTask))
	e.strct("linux_binprm", 256, member{"filename", tCharPtr, 96}, member{"argc", tInt, 120})
	e.rec("", kernel.KindPtr, 0, uint32(tBinprm))
	e.strct("pt_regs", 168, member{"di", tLong, 112}, member{"orig_ax", tLong, 120})
	e.rec("", kernel.KindPtr, 0, uint32(tRegs))
	e.rec("pid_t", kernel.KindTypedef, 0, uint32(tInt))
	e.strct("sched_entity", 256, member{"avg", tLong, 0})
	e.proto(tInt, param{"bprm", tBinprmPtr})
	e.fn("bpf_lsm_bprm_check_security", tBprmHookProto)
	e.proto(tInt, param{"task", tTaskPtr}, param{"clone_flags", tLong})
	e.fn("bpf_lsm_task_alloc", tTaskHookProto)
	e.fn("bpf_lsm_verify_prog", tBprmHookProto)
	e.union("security_list_options", 8, member{"bprm_check_security", tBprmHookProto, 0}, member{"task_alloc", tTaskHookProto, 0})
	e.strct("sk_buff", 232, member{"len", tInt, 112})
	e.rec("", kernel.KindPtr, 0, uint32(tSkb))
	e.strct("net_device", 2048, member{"name", tCharArray, 0})
	e.rec("", kernel.KindPtr, 0, uint32(tNetDev))
	e.strct("nf_hook_state", 48, member{"hook", tChar, 0}, member{"pf", tChar, 1}, member{"in", tNetDevPtr, 8},
		member{"out", tNetDevPtr, 16}, member{"okfn", tCharPtr, 40})
	e.rec("", kernel.KindPtr, 0, uint32(tHookState))
	e.strct("bpf_nf_ctx", 16, member{"state", tHookStatePtr, 0}, member{"skb", tSkbPtr, 8})
	e.enum("pid_type", false, enumerator{"PIDTYPE_PID", 0}, enumerator{"PIDTYPE_TGID", 1}, enumerator{"PIDTYPE_PGID", 2},
		enumerator{"PIDTYPE_SID", 3}, enumerator{"PIDTYPE_MAX", 4})
	e.enum("big", true, enumerator{"BIG_ONE", 1 << 40}, enumerator{"BIG_NEG", -1})
	btf, err := kernel.Parse(e.blob())
	if err != nil {
		panic("probestest: " + err.Error())
	}
	// Every tracepoint has a prototype (Proto is nonzero, as on a kernel
	// with BTF), so the families offer tp_btf; no family looks it up.
	tp := func(sys, ev string, params ...kernel.Param) *kernel.Tracepoint {
		return &kernel.Tracepoint{System: sys, Event: ev, Proto: tInt, Params: params}
	}
	return &Kernel{btf: btf, tps: []*kernel.Tracepoint{
		tp("raw_syscalls", "sys_enter", kernel.Param{Name: "regs", Type: tRegsPtr}, kernel.Param{Name: "id", Type: tLong}),
		tp("raw_syscalls", "sys_exit", kernel.Param{Name: "regs", Type: tRegsPtr}, kernel.Param{Name: "ret", Type: tLong}),
		tp("sched", "sched_process_exec", kernel.Param{Name: "p", Type: tTaskPtr}, kernel.Param{Name: "old_pid", Type: tPidT},
			kernel.Param{Name: "bprm", Type: tBinprmPtr}),
		tp("sched", "sched_process_exit", kernel.Param{Name: "p", Type: tTaskPtr}),
		tp("sched", "sched_process_fork", kernel.Param{Name: "parent", Type: tTaskPtr}, kernel.Param{Name: "child", Type: tTaskPtr}),
		tp("sched", "sched_switch", kernel.Param{Name: "preempt", Type: tInt}, kernel.Param{Name: "prev", Type: tTaskPtr},
			kernel.Param{Name: "next", Type: tTaskPtr}),
		tp("enumname", "pid_type_argument", kernel.Param{Name: "type", Type: tPidType}, kernel.Param{Name: "p", Type: tTaskPtr}),
		// Classic events: no prototype, fields from EventFields.
		{System: "syscalls", Event: "sys_enter_openat"},
		{System: "syscalls", Event: "sys_exit_openat"},
		{System: "sched", Event: "sched_wakeup_classic"},
	}}
}

type member struct {
	name string
	typ  kernel.TypeID
	off  uint32 // bytes
}

// encoder writes BTF records (see the kernel's uapi/linux/btf.h).
type encoder struct {
	types, strs []byte
}

func (e *encoder) u32(v ...uint32) {
	for _, x := range v {
		e.types = binary.LittleEndian.AppendUint32(e.types, x)
	}
}

func (e *encoder) str(s string) uint32 {
	if s == "" {
		return 0
	}
	off := uint32(len(e.strs))
	e.strs = append(append(e.strs, s...), 0)
	return off
}

func (e *encoder) rec(name string, k kernel.Kind, vlen int, sizeOrType uint32) {
	e.u32(e.str(name), uint32(k)<<24|uint32(vlen), sizeOrType)
}

func (e *encoder) int(name string, size uint32, signed bool) {
	e.rec(name, kernel.KindInt, 0, size)
	enc := size * 8
	if signed {
		enc |= 1 << 24
	}
	e.u32(enc)
}

func (e *encoder) array(elem kernel.TypeID, n uint32) {
	e.rec("", kernel.KindArray, 0, 0)
	e.u32(uint32(elem), uint32(tInt), n)
}

func (e *encoder) strct(name string, size uint32, ms ...member) {
	e.rec(name, kernel.KindStruct, len(ms), size)
	for _, m := range ms {
		e.u32(e.str(m.name), uint32(m.typ), m.off*8)
	}
}

type param struct {
	name string
	typ  kernel.TypeID
}

func (e *encoder) proto(ret kernel.TypeID, ps ...param) {
	e.rec("", kernel.KindFuncProto, len(ps), uint32(ret))
	for _, p := range ps {
		e.u32(e.str(p.name), uint32(p.typ))
	}
}

// fn is a global function of prototype proto.
func (e *encoder) fn(name string, proto kernel.TypeID) {
	e.rec(name, kernel.KindFunc, 1, uint32(proto))
}

func (e *encoder) union(name string, size uint32, ms ...member) {
	e.rec(name, kernel.KindUnion, len(ms), size)
	for _, m := range ms {
		e.u32(e.str(m.name), uint32(m.typ), m.off*8)
	}
}

type enumerator struct {
	name  string
	value int64
}

// enum is an enum of 4-byte values, or with wide of 8-byte ones (an
// enum64), signed.
func (e *encoder) enum(name string, wide bool, list ...enumerator) {
	if !wide {
		e.rec(name, kernel.KindEnum, len(list), 4)
		e.types[len(e.types)-5] |= 0x80 // kind_flag: signed
		for _, c := range list {
			e.u32(e.str(c.name), uint32(c.value))
		}
		return
	}
	e.rec(name, kernel.KindEnum64, len(list), 8)
	e.types[len(e.types)-5] |= 0x80
	for _, c := range list {
		e.u32(e.str(c.name), uint32(c.value), uint32(uint64(c.value)>>32))
	}
}

func (e *encoder) blob() []byte {
	hdr := make([]byte, 0, 24)
	le := binary.LittleEndian
	hdr = le.AppendUint16(hdr, 0xeb9f)
	hdr = append(hdr, 1, 0)
	hdr = le.AppendUint32(hdr, 24)
	hdr = le.AppendUint32(hdr, 0)
	hdr = le.AppendUint32(hdr, uint32(len(e.types)))
	hdr = le.AppendUint32(hdr, uint32(len(e.types)))
	hdr = le.AppendUint32(hdr, uint32(len(e.strs)))
	return append(append(hdr, e.types...), e.strs...)
}

// KprobeAt places vfs_read at 0xffffffff81000000, 0x100 bytes long, the
// fake kernel's only text symbol.
func (k *Kernel) KprobeAt(addr uint64) (string, uint64, string, error) {
	const vfsRead = 0xffffffff81000000
	if addr < vfsRead || addr >= vfsRead+0x100 {
		return "", 0, "", fmt.Errorf("no kernel symbol in /proc/kallsyms holds %#x", addr)
	}
	return "vfs_read", addr - vfsRead, "vfs_read", nil
}
