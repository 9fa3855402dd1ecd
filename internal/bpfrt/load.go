// Package bpfrt is bpftap's kernel runtime: it loads the BPF programs the
// code generator builds (cilium/ebpf asm instructions with labels and
// named map references), attaches them to their attach points, reads their
// ring buffer output and their run-time statistics, and closes everything.
//
// # Loading
//
// Programs are loaded with our own BPF_PROG_LOAD call rather than
// ebpf.NewProgram: a BTF-typed program needs the BTF ID of its attach
// target (the typedef btf_trace_EVENT of a tracepoint), which package
// kernel finds in about a millisecond, while cilium/ebpf would first decode
// the whole kernel BTF (16 ms or more) and probe features. Instructions are encoded by asm.Instructions.Marshal
// (which resolves labels), after map references named by
// asm.Instruction.Reference are bound to the maps the caller created. A load
// first runs without a verifier log; when it fails it is repeated with the
// log on, so a rejection carries the verifier's explanation and the index of
// the offending instruction (VerifierError). The loaded fd is then wrapped
// as an *ebpf.Program, so links, stats and Close work as in cilium/ebpf.
//
// # Attaching
//
// A program attaches to the attach point (package attach) its probe family
// chose; attach.go dispatches to a file per kind, which also tells the
// families whether the running kernel offers the kind (CanAttach).
//
// # Output and statistics
//
// See ring.go (batched wake-ups, a poll timer, lost-record counting) and
// stats.go (BPF_ENABLE_STATS run counts and times for -t).
package bpfrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/target"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// ProgramSpec is a program to load.
type ProgramSpec struct {
	// Name is shown by bpftool and in errors; at most 15 bytes reach the kernel.
	Name   string
	Attach *attach.Point
	// Instructions may jump to labels (asm.Instruction.WithSymbol) and load
	// maps by name (asm.LoadMapPtr(...).WithReference(name)).
	Instructions asm.Instructions
	// Maps binds the names of map references.
	Maps map[string]*ebpf.Map
	// LogLevel 0 logs only when the verifier rejects the program; 1 or 2 (as
	// for -v) keep the log of a successful load in Program.VerifierLog.
	LogLevel uint32
	// Sleepable loads it with BPF_F_SLEEPABLE (a uprobe program that may
	// fault user pages in).
	Sleepable bool
}

// Program is a loaded program, possibly attached.
type Program struct {
	*ebpf.Program
	Spec        *ProgramSpec
	VerifierLog string
	link        io.Closer
}

// VerifierError is a program the verifier rejected.
type VerifierError struct {
	Err error
	Log string
	// Insn is the index in ProgramSpec.Instructions of the instruction the
	// verifier stopped at, or -1 when the log names none.
	Insn int
}

func (e *VerifierError) Error() string {
	if r := verifierReason(e.Log); r != "" {
		return fmt.Sprintf("the kernel's verifier rejected the program: %s", r)
	}
	return fmt.Sprintf("the kernel's verifier rejected the program: %v", e.Err)
}

// verifierReason is the verifier's last message: the last line of its log
// that is neither an instruction trace ("12: (85) call ...") nor the
// closing statistics ("processed N insns ..."), or "".
func verifierReason(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "processed ") || lastInsnRE.MatchString(l) || strings.HasPrefix(l, "verification time") || strings.HasPrefix(l, "stack depth") {
			continue
		}
		return l
	}
	return ""
}

func (e *VerifierError) Unwrap() error { return e.Err }

// ErrPermission is returned (wrapped) when the process may not use BPF.
var ErrPermission = errors.New("loading BPF programs needs root (or CAP_BPF and CAP_PERFMON)")

// Load loads spec into the kernel; the program is not attached yet.
func Load(spec *ProgramSpec) (*Program, error) {
	target.RaiseMemlock() // best effort: a load it fails fails saying why
	insns, err := encode(spec)
	if err != nil {
		return nil, err
	}
	attr, err := loadAttr(spec, insns)
	if err != nil {
		return nil, err
	}
	funcs, err := funcInfo(spec, attr)
	if err != nil {
		return nil, err
	}
	defer funcs.close()
	fd, log, err := progLoad(attr, spec.LogLevel)
	if err != nil {
		return nil, loadError(spec, insns, log, err)
	}
	p, err := ebpf.NewProgramFromFD(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("probe program %s: %w", spec.Name, err)
	}
	return &Program{Program: p, Spec: spec, VerifierLog: log}, nil
}

// encode binds map references and encodes the instructions.
func encode(spec *ProgramSpec) ([]byte, error) {
	insns := make(asm.Instructions, len(spec.Instructions))
	copy(insns, spec.Instructions)
	for i := range insns {
		ins := &insns[i]
		if !ins.IsLoadFromMap() || ins.Reference() == "" {
			continue
		}
		m, ok := spec.Maps[ins.Reference()]
		if !ok {
			return nil, fmt.Errorf("probe program %s: instruction %d loads unknown map %q", spec.Name, i, ins.Reference())
		}
		if err := ins.AssociateMap(m); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, nativeOrder()); err != nil {
		return nil, fmt.Errorf("probe program %s: %w", spec.Name, err)
	}
	return buf.Bytes(), nil
}

// funcTypes holds what the kernel reads of a program's functions: their
// BTF (in the kernel, as a handle) and the func_info records naming the
// type of each function's first instruction.
type funcTypes struct {
	handle *btf.Handle
	info   []byte
}

// funcInfo points attr at the BTF of spec's functions when it has several
// (instructions with btf.FuncMetadata: the first, then each subprogram).
func funcInfo(spec *ProgramSpec, attr *progLoadAttr) (*funcTypes, error) {
	b, err := btf.NewBuilder(nil, nil)
	if err != nil {
		return nil, err
	}
	info, _, err := btf.MarshalExtInfos(spec.Instructions, b)
	if err != nil || len(info) == 0 {
		return nil, err
	}
	h, err := btf.NewHandle(b)
	if err != nil {
		return nil, fmt.Errorf("probe program %s: loading the BTF of its functions: %w", spec.Name, err)
	}
	ft := &funcTypes{handle: h, info: info}
	attr.progBTFFd = uint32(h.FD())
	attr.funcInfoRecSize = funcInfoRecSize
	attr.funcInfo = uint64(uintptr(unsafe.Pointer(&ft.info[0])))
	attr.funcInfoCnt = uint32(len(info) / funcInfoRecSize)
	return ft, nil
}

// HasFuncTypes tells whether the program of insns loads the BTF of its
// functions (funcInfo): its first instruction names the main function's
// type when it has subprograms.
func HasFuncTypes(insns asm.Instructions) bool {
	return len(insns) > 0 && btf.FuncMetadata(&insns[0]) != nil
}

// PrepareFuncTypes asks the kernel, once and in the background, what the
// first funcInfo's btf.NewHandle asks it before loading any BTF: the
// cilium/ebpf probes of the BTF it takes (btf.KernelMarshalOptions: func
// linkage, decl and type tags, 64-bit enums), six small BTF loads, 1.3 to
// 1.6 ms here, kept for the process. Started while the other programs
// compile, they are answered by the time the first program loads: pass
// 4 waited for them after creating the maps (syscall.*'s two programs).
// A probe refused for want of locked memory is not kept (cilium asks
// again), so the limit is raised first, as Load raises it.
func PrepareFuncTypes() {
	prepareFuncTypes.Do(func() {
		go func() {
			target.RaiseMemlock()
			btf.KernelMarshalOptions()
		}()
	})
}

var prepareFuncTypes sync.Once

// funcInfoRecSize is the size of struct bpf_func_info: insn_off, type_id.
const funcInfoRecSize = 8

// close releases the BTF handle once the program is loaded.
func (ft *funcTypes) close() {
	if ft != nil {
		runtime.KeepAlive(ft.info)
		ft.handle.Close()
	}
}

// nativeOrder is the host's byte order as one of the two values asm accepts.
func nativeOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

// progLoadAttr is the BPF_PROG_LOAD part of union bpf_attr, up to fd_array.
type progLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              uint64
	license            uint64
	logLevel           uint32
	logSize            uint32
	logBuf             uint64
	kernVersion        uint32
	progFlags          uint32
	progName           [16]byte
	progIfindex        uint32
	expectedAttachType uint32
	progBTFFd          uint32
	funcInfoRecSize    uint32
	funcInfo           uint64
	funcInfoCnt        uint32
	lineInfoRecSize    uint32
	lineInfo           uint64
	lineInfoCnt        uint32
	attachBTFID        uint32
	attachBTFObjFd     uint32
	coreReloCnt        uint32
	fdArray            uint64
}

var license = []byte("GPL\x00")

func loadAttr(spec *ProgramSpec, insns []byte) (*progLoadAttr, error) {
	attr := &progLoadAttr{
		insnCnt: uint32(len(insns) / asm.InstructionSize),
		insns:   uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license: uint64(uintptr(unsafe.Pointer(&license[0]))),
	}
	copy(attr.progName[:15], sanitizeName(spec.Name))
	if spec.Sleepable {
		attr.progFlags |= unix.BPF_F_SLEEPABLE
	}
	k, err := kindOf(spec.Attach)
	if err == nil {
		err = k.prepare(spec.Attach, attr)
	}
	if err != nil {
		return nil, fmt.Errorf("probe program %s: %w", spec.Name, err)
	}
	return attr, nil
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9_.]`)

// sanitizeName keeps the characters the kernel accepts in object names.
func sanitizeName(name string) string { return nameChars.ReplaceAllString(name, "_") }

// maxLogSize is the kernel's limit on a verifier log buffer (UINT_MAX >> 2).
const maxLogSize = 1<<30 - 1

// progLoad runs BPF_PROG_LOAD, retrying with the verifier log on when the
// first attempt fails without one, with larger buffers while it is cut, and
// when the verifier was interrupted (EAGAIN).
func progLoad(attr *progLoadAttr, level uint32) (int, string, error) {
	size := uint32(64 << 10)
	for {
		var logBuf []byte
		if level != 0 {
			logBuf = make([]byte, size)
			attr.logLevel, attr.logSize = level, size
			attr.logBuf = uint64(uintptr(unsafe.Pointer(&logBuf[0])))
		}
		fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
		runtime.KeepAlive(logBuf)
		runtime.KeepAlive(license)
		log := cString(logBuf)
		switch {
		case errno == 0:
			return int(fd), log, nil
		case errno == unix.EAGAIN:
			// A signal (the Go runtime's preemption, for one) interrupted
			// the verifier: load again, as libbpf and cilium/ebpf do.
			continue
		case errno == unix.EMFILE || errno == unix.ENFILE:
			return -1, "", errno // no descriptor: verifying again would not help
		case level == 0 && errno != unix.EPERM:
			level = 1
		case errno == unix.ENOSPC && size < maxLogSize/4:
			size *= 4
		default:
			return -1, log, errno
		}
	}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// loadError explains a failed load. EPERM means missing privileges only
// where the process lacks them: a kernel may refuse a kind of program to
// root (this machine's refuses fentry and LSM programs).
func loadError(spec *ProgramSpec, insns []byte, log string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) && log == "" {
		if CheckPrivileges() == nil {
			return fmt.Errorf("probe program %s: the kernel refuses to load %s programs, though bpftap has the privileges BPF needs: %w", spec.Name, spec.Attach.Kind, err)
		}
		return fmt.Errorf("probe program %s: %w (%w)", spec.Name, ErrPermission, err)
	}
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		// no verdict: the kernel had no descriptor to give the program
		return fmt.Errorf("probe program %s: %w (each program, map and link takes a file descriptor: see ulimit -n)", spec.Name, err)
	}
	return &VerifierError{Err: err, Log: log, Insn: failedInsn(spec.Instructions, log)}
}

// lastInsnRE matches the verifier's trace lines "123: (85) call ...".
var lastInsnRE = regexp.MustCompile(`(?m)^(\d+): \([0-9a-f]{2}\)`)

// failedInsn maps the last raw instruction offset the log traces to an
// index in insns (a 16-byte load of a 64-bit constant counts twice in raw
// offsets and once in insns).
func failedInsn(insns asm.Instructions, log string) int {
	all := lastInsnRE.FindAllStringSubmatch(log, -1)
	if len(all) == 0 {
		return -1
	}
	raw, _ := strconv.Atoi(all[len(all)-1][1])
	iter := insns.Iterate()
	for iter.Next() {
		if int(iter.Offset) >= raw {
			return iter.Index
		}
	}
	return -1
}

// Attach attaches p to its spec's attach point. A *RefusedError says
// which points of a set it could not attach at; p is attached at the
// others.
func (p *Program) Attach() error {
	if p.link != nil {
		return fmt.Errorf("probe program %s is already attached", p.Spec.Name)
	}
	a := p.Spec.Attach
	k, err := kindOf(a)
	if err != nil {
		return err
	}
	l, err := k.attach(p.Program, a)
	var refused *RefusedError
	if errors.As(err, &refused) && l != nil { // attached, but not at every point
		p.link = l
		return refused
	}
	if err != nil {
		return fmt.Errorf("attach %s to %s (%s): %w", p.Spec.Name, a.Target(), a.Kind, err)
	}
	p.link = l
	return nil
}

// Close detaches and unloads p.
func (p *Program) Close() error {
	var err error
	if p.link != nil {
		err = p.link.Close()
		p.link = nil
	}
	return errors.Join(err, p.Program.Close())
}

// CheckPrivileges says plainly when the process cannot use BPF at all:
// which capabilities it lacks, as which user.
func CheckPrivileges() error {
	missing, err := missingCapabilities(capability{unix.CAP_BPF, "CAP_BPF"}, capability{unix.CAP_PERFMON, "CAP_PERFMON"})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPermission, err)
	}
	if missing == nil {
		return nil
	}
	return fmt.Errorf("%w; bpftap runs as uid %d without %s", ErrPermission, os.Geteuid(), strings.Join(missing, " and "))
}

// CheckAttachPrivileges says plainly when the process may load programs
// but not attach them at a: the kernel opens a uprobe's perf event (the
// perf_uprobe PMU) only for CAP_SYS_ADMIN, whatever CAP_PERFMON allows.
func CheckAttachPrivileges(a *attach.Point) error {
	if a == nil || a.Kind != attach.Uprobe && a.Kind != attach.Uretprobe {
		return nil
	}
	missing, err := missingCapabilities(capability{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"})
	if err == nil && missing == nil {
		return nil
	}
	return fmt.Errorf("user-space probes (uprobes) need root or CAP_SYS_ADMIN: the kernel opens uprobe perf events only with it; bpftap runs as uid %d without CAP_SYS_ADMIN", os.Geteuid())
}

type capability struct {
	bit  uint
	name string
}

// missingCapabilities names those of caps the process lacks (none as
// root).
func missingCapabilities(caps ...capability) ([]string, error) {
	if os.Geteuid() == 0 {
		return nil, nil
	}
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil, err
	}
	var missing []string
	for _, c := range caps {
		if data[c.bit/32].Effective&(1<<(c.bit%32)) == 0 {
			missing = append(missing, c.name)
		}
	}
	return missing, nil
}
