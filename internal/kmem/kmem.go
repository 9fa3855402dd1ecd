// Package kmem reads kernel memory for the user-side probes (begin, end,
// timers), which bpftap runs in its interpreter, outside the kernel: stap
// runs them in the kernel, where kernel_string(addr) reads what a kernel
// probe saved the address of (interrupts-by-dev.stp prints the names of the
// interrupt handlers its irq_handler probe counted).
//
// A read is exactly as safe as a kernel probe's, because it is one: a BPF
// program, loaded on first use and never attached, copies the bytes with
// bpf_probe_read_kernel, or a NUL-terminated string with
// bpf_probe_read_kernel_str, which fail on an unmapped address, and on any
// address below the kernel's half, instead of faulting the kernel. The
// program is a raw tracepoint program (BPF_PROG_TYPE_RAW_TRACEPOINT) that
// bpftap runs on demand with BPF_PROG_TEST_RUN: the run's context is the
// tracepoint's u64 arguments, here the address, the size and whether to
// copy a string. The program copies into the value of a one-element array
// map created BPF_F_MMAPABLE, which bpftap has mapped into its own memory,
// and returns the helper's result, which the test run hands back as the
// program's return value; so a read costs one bpf() call and a memcpy
// (docs/bpf-backend.md has the measured cost). Other routes, tried on
// Linux 6.18: a syscall program (BPF_PROG_TYPE_SYSCALL) gets a writable
// context from the test run, but the verifier refuses the context as a
// helper's destination; reading the result back with a map lookup instead
// of the mapping costs a second bpf() call.
//
// Reads longer than the map's value (Chunk bytes) are made in chunks; a
// string goes on from where the last chunk's copy stopped without finding
// its end, bytes are read a page at a time, so that a read running into
// an unmapped page says how far it got (printf's %m needs it). One reader
// serves the process; a mutex makes each read whole. task.go finds the
// task_struct of a thread (pid2task, task_current() in user-side probes)
// with a second program, a syscall program, which may call the kfunc
// that looks tasks up.
package kmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Chunk is the size of the reader's buffer: the most one run copies.
const Chunk = 4096

// pageSize is the size of the pages kernel memory is mapped in.
var pageSize = uint64(os.Getpagesize())

// ErrFault is the error of a read the kernel refused: an unmapped address,
// or one outside the kernel's memory.
var ErrFault = errors.New("kernel memory fault")

// Reader copies kernel memory through its BPF program.
type Reader struct {
	mu    sync.Mutex
	prog  *ebpf.Program
	buf   *ebpf.Map
	mem   *ebpf.Memory
	chunk int
	args  [3 * 8]byte // the run's context: address, size, string (1) or bytes (0)
}

// Kernel returns the process's reader, loading its program on the first
// call; the error says why kernel memory cannot be read (privileges, a
// kernel without test runs of raw tracepoint programs).
var Kernel = sync.OnceValues(func() (*Reader, error) { return newReader(Chunk) })

// newReader loads a reader copying at most chunk bytes a run.
func newReader(chunk int) (*Reader, error) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		return nil, err
	}
	buf, err := ebpf.NewMap(&ebpf.MapSpec{Name: "bpftap_kread", Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(chunk), MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		return nil, fmt.Errorf("creating its buffer: %w", err)
	}
	r := &Reader{buf: buf, chunk: chunk}
	if r.mem, err = buf.Memory(); err != nil {
		buf.Close()
		return nil, fmt.Errorf("mapping its buffer: %w", err)
	}
	r.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "bpftap_kread", Type: ebpf.RawTracepoint,
		License: "GPL", Instructions: program(buf, chunk)})
	if err != nil {
		buf.Close()
		return nil, fmt.Errorf("loading its program: %w", err)
	}
	// a size of 0 copies nothing: the run tells whether test runs work
	if _, err := r.run(0, 0, false); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// program is the reader's code: R0 is the helper's result (0 or the
// string's length with its NUL, or -errno), or -EINVAL for a size outside
// 1..chunk.
func program(buf *ebpf.Map, chunk int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R3, asm.R1, 0, asm.DWord),  // the address
		asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord),  // the size
		asm.LoadMem(asm.R4, asm.R1, 16, asm.DWord), // a string?
		asm.Mov.Imm(asm.R0, -int32(unix.EINVAL)),
		asm.JEq.Imm(asm.R2, 0, "out"),
		asm.JGT.Imm(asm.R2, int32(chunk), "out"),
		asm.LoadMapValue(asm.R1, buf.FD(), 0),
		asm.JEq.Imm(asm.R4, 0, "bytes"),
		asm.FnProbeReadKernelStr.Call(),
		asm.Return(),
		asm.FnProbeReadKernel.Call().WithSymbol("bytes"),
		asm.Return().WithSymbol("out"),
	}
}

// Close releases the program and its buffer.
func (r *Reader) Close() error {
	return errors.Join(r.prog.Close(), r.buf.Close())
}

// run runs the program once: it copies size bytes at addr (a string:
// at most size-1 and a NUL) into the buffer and returns the helper's
// result.
func (r *Reader) run(addr uint64, size int, str bool) (int32, error) {
	binary.NativeEndian.PutUint64(r.args[0:], addr)
	binary.NativeEndian.PutUint64(r.args[8:], uint64(size))
	binary.NativeEndian.PutUint64(r.args[16:], 0)
	if str {
		r.args[16] = 1
	}
	ret, err := r.prog.Run(&ebpf.RunOptions{Context: r.args[:]})
	if err != nil {
		return 0, fmt.Errorf("running its program: %w", err)
	}
	return int32(ret), nil
}

// Read fills p with the kernel memory at addr as far as it can be read:
// it returns how many bytes it read, fewer than len(p) with ErrFault when
// the memory at addr+n cannot be read. It reads a page at a time (at most
// a chunk), the unit the kernel maps memory in, so n is exact.
func (r *Reader) Read(addr uint64, p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := 0
	for done < len(p) {
		n := min(len(p)-done, r.chunk, int(pageSize-addr%pageSize))
		ret, err := r.run(addr, n, false)
		if err != nil {
			return done, err
		}
		if ret < 0 {
			return done, ErrFault
		}
		r.mem.ReadAt(p[done:done+n], 0)
		done, addr = done+n, addr+uint64(n)
	}
	return done, nil
}

// String returns the string at addr: its bytes up to the first NUL, at
// most limit of them. Like bpf_probe_read_kernel_str, it fails with
// ErrFault when a byte it needs cannot be read (the first, even when limit
// is 0).
func (r *Reader) String(addr uint64, limit int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	limit = max(limit, 0)
	var s strings.Builder
	for {
		size := min(limit-s.Len(), r.chunk-1) + 1 // room for the NUL
		ret, err := r.run(addr, size, true)
		if err != nil {
			return "", err
		}
		if ret <= 0 { // (never 0: the copy ends with its NUL)
			return "", ErrFault
		}
		part := make([]byte, ret-1) // without the NUL
		r.mem.ReadAt(part, 0)
		s.Write(part)
		if int(ret) < size || s.Len() >= limit { // the end, or enough
			return s.String(), nil
		}
		addr += uint64(len(part))
	}
}
