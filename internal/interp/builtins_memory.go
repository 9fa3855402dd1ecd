package interp

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/kmem"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Memory readers. The kernel readers read kernel memory as a kernel probe
// would, through package kmem's BPF program (loaded by the first read):
// a fault raises stap's error (tapset.KernelCopyFault), kernel_string2
// returns its error message instead. printf's %m and %M dump kernel
// memory the same way (kernelMemory). A user-side probe has no traced
// process: user_string reports stap's fault, user_long and friends
// return 0, as the tapset's try/catch wrappers do, and user_string2 its
// error message.
func memoryBuiltins() map[string]builtinFunc {
	m := map[string]builtinFunc{
		"kernel_string": func(cc *callContext, a []Value) Value {
			return str(cc.kernelString(a[0].Int, cc.in.maxStringLen()-1))
		},
		"kernel_string_n": func(cc *callContext, a []Value) Value {
			return str(cc.kernelString(a[0].Int, int(min(max(a[1].Int, 0), int64(cc.in.maxStringLen()-1)))))
		},
		"kernel_string2":             kernelString2,
		"__kernel_buffer_quoted":     bufferQuoted(false, false),
		"kernel_buffer_quoted_error": bufferQuoted(false, true),
		"user_buffer_quoted":         bufferQuoted(true, false),
		"user_buffer_quoted_error":   bufferQuoted(true, true),
		"__kernel_buffer_hex":        kernelBufferHex,
		"user_string":                userStringFault,
		"user_string_n":              userStringFault,
		"user_string2":               errMsg,
		"@kderef":                    kderef,
		"@uderef": func(cc *callContext, a []Value) Value {
			cc.fail(fmt.Sprintf(tapset.DerefFault, uint64(a[1].Int)))
			return Value{}
		},
	}
	for name, read := range tapset.NumberReads {
		switch what, kernel := strings.CutPrefix(name, "kernel_"); {
		case kernel:
			m[name] = func(cc *callContext, a []Value) Value { return long(cc.kernelNumber(a[0].Int, read.Size, what)) }
		case read.Fault != "": // a user-side probe has no process: every read faults
			m[name] = func(cc *callContext, a []Value) Value {
				cc.fail(fmt.Sprintf(read.Fault, uint64(a[0].Int)))
				return Value{}
			}
		default:
			m[name] = zero
		}
	}
	return m
}

// kernelString reads the string at addr, at most limit bytes of it.
func (cc *callContext) kernelString(addr int64, limit int) string {
	s, err := cc.kernelReader().String(uint64(addr), limit)
	cc.kernelFault(err, "string", addr)
	return s
}

// kernelString2 is kernel_string2(addr, err_msg) (and kernel_string(addr,
// err_msg)): the string, or err_msg when it cannot be read.
func kernelString2(cc *callContext, a []Value) Value {
	s, err := cc.kernelReader().String(uint64(a[0].Int), cc.in.maxStringLen()-1)
	if errors.Is(err, kmem.ErrFault) {
		return a[1]
	}
	cc.kernelFault(err, "string", a[0].Int)
	return str(s)
}

// bufferQuoted is __kernel_buffer_quoted(addr, inlen, outlen) (the
// tapset's kernel_buffer_quoted), user_buffer_quoted and their _error
// forms, as the tapset's C: inlen bytes (MAXSTRINGLEN-1 at the most, and
// for inlen <= 0) quoted as a buffer in at most outlen bytes (clamped to
// [0, MAXSTRINGLEN]; 0 gives ""), or, when they cannot be read (user
// memory never can: a user-side probe has no process), the address in hex
// in outlen-1 bytes; the _error forms raise stap's error instead.
func bufferQuoted(user, raise bool) builtinFunc {
	return func(cc *callContext, a []Value) Value {
		maxLen := cc.in.maxStringLen()
		outlen := int(min(max(a[2].Int, 0), int64(maxLen)))
		n := a[1].Int
		if n <= 0 || n > int64(maxLen-1) {
			n = int64(maxLen - 1)
		}
		buf := make([]byte, n)
		err := kmem.ErrFault
		if !user && outlen > 0 {
			_, err = cc.kernelReader().Read(uint64(a[0].Int), buf)
		}
		switch {
		case err == nil:
			return str(format.BufferQuoted(buf, outlen, maxLen))
		case !errors.Is(err, kmem.ErrFault):
			cc.cannotRead(err)
		case raise:
			cc.fail(fmt.Sprintf(tapset.BufferReadFault(user), uint64(a[0].Int)))
		case outlen > 0:
			return str(format.StringValue(fmt.Sprintf("0x%x", uint64(a[0].Int)), outlen))
		}
		return Value{}
	}
}

// kernelBufferHex is __kernel_buffer_hex(addr, len), the netfilter
// tapset's sprintf("%.*M", len, addr): two hex digits a byte, as many
// bytes as fit in MAXSTRINGLEN, none for len <= 0; a fault raises stap's
// kernel read error.
func kernelBufferHex(cc *callContext, a []Value) Value {
	buf := make([]byte, min(max(a[1].Int, 0), int64(cc.in.maxStringLen()-1)/2))
	_, err := cc.kernelReader().Read(uint64(a[0].Int), buf)
	switch {
	case errors.Is(err, kmem.ErrFault):
		cc.fail(fmt.Sprintf(tapset.KernelReadFault, uint64(a[0].Int)))
	case err != nil:
		cc.cannotRead(err)
	}
	return str(hex.EncodeToString(buf))
}

// kernelNumber is kernel_WHAT(addr): the signed number of size bytes at
// addr (every kernel_ reader of tapset.NumberReads is signed).
func (cc *callContext) kernelNumber(addr int64, size int, what string) int64 {
	v, err := kernelWord(addr, size, true)
	cc.kernelFault(err, what, addr)
	return v
}

// kderef is @kderef(size, addr): the size bytes at addr, unsigned; a
// fault raises stap's error (tapset.DerefFault).
func kderef(cc *callContext, a []Value) Value {
	v, err := kernelWord(a[1].Int, int(a[0].Int), false)
	cc.readFault(err, tapset.DerefFault, a[1].Int)
	return long(v)
}

// kernelWord is the number of size bytes at addr, sign-extended when
// signed; the error is kmem.ErrFault, or why the reader cannot run.
func kernelWord(addr int64, size int, signed bool) (int64, error) {
	r, err := kmem.Kernel()
	if err != nil {
		return 0, err
	}
	var b [8]byte
	_, err = r.Read(uint64(addr), b[:size])
	v := binary.NativeEndian.Uint64(b[:])
	if signed && size < 8 {
		return int64(v<<(64-8*size)) >> (64 - 8*size), err
	}
	return int64(v), err
}

// kernelReader returns the process's kernel reader, or fails the call
// with the reason there is none.
func (cc *callContext) kernelReader() *kmem.Reader {
	r, err := kmem.Kernel()
	if err != nil {
		cc.cannotRead(err)
	}
	return r
}

// cannotRead fails the call: the kernel reader could not run (err).
func (cc *callContext) cannotRead(err error) {
	cc.fail(unreadable(cc.call.Name+"()", err).Error())
}

// unreadable is the error of a reader of kernel memory (what) that could
// not run: no privilege, no test runs of BPF programs (err).
func unreadable(what string, err error) error {
	return fmt.Errorf("%s cannot read kernel memory in a user-side probe: %w", what, err)
}

// kernelFault fails the call when a read of what at addr failed: stap's
// fault error, or why the reader could not run.
func (cc *callContext) kernelFault(err error, what string, addr int64) {
	cc.readFault(err, tapset.KernelCopyFault(what), addr)
}

// readFault raises msg, a fmt format taking the address, where err is a
// fault of a kernel read at addr, or says why the reader cannot run.
func (cc *callContext) readFault(err error, msg string, addr int64) {
	switch {
	case errors.Is(err, kmem.ErrFault):
		cc.fail(fmt.Sprintf(msg, uint64(addr)))
	case err != nil:
		cc.cannotRead(err)
	}
}

func userStringFault(cc *callContext, a []Value) Value {
	cc.fail(fmt.Sprintf(tapset.UserStringFault, uint64(a[0].Int)))
	return Value{}
}

func zero(*callContext, []Value) Value { return Value{} }

// errMsg is user_string2 on a fault: its second argument.
func errMsg(_ *callContext, a []Value) Value { return a[1] }

// kernelMemory gives printf's %m and %M the kernel's memory (kmem). A
// user-side probe has no process: the user memory '#' asks for faults.
type kernelMemory struct{}

func (kernelMemory) ReadMemory(addr uint64, p []byte, user bool) (int, error) {
	if user {
		return 0, nil
	}
	r, err := kmem.Kernel()
	if err != nil {
		return 0, unreadable("%m and %M", err)
	}
	n, err := r.Read(addr, p)
	if err != nil && !errors.Is(err, kmem.ErrFault) {
		return n, unreadable("%m and %M", err)
	}
	return n, nil
}
