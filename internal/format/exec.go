package format

import (
	"encoding/binary"
	"strconv"
	"sync"
)

// Memory gives %m and %M the memory they dump.
type Memory interface {
	// ReadMemory fills p from address addr: the traced process's memory when
	// user is set (the '#' flag), the kernel's otherwise. It returns how many
	// bytes it read; fewer than len(p) means a fault at addr+n. An error
	// means it cannot read memory at all: the call fails with it.
	ReadMemory(addr uint64, p []byte, user bool) (n int, err error)
}

// RunError is an error SystemTap raises while printing. Arg is the index of the
// argument whose token stap names in the message's location, or -1 for the
// print call itself.
type RunError struct {
	Msg string
	Arg int
}

func (e *RunError) Error() string { return e.Msg }

// Append renders args with f and appends the output to dst, with printf's room
// (BufferSize). Memory dumps (%m, %M) need Exec; here they fail, and a failed
// call appends nothing.
func (f *Format) Append(dst []byte, args []Arg) []byte {
	out, _ := f.Exec(dst, args, nil, BufferSize)
	return out
}

// Sprint renders args as sprintf does under MAXSTRINGLEN maxLen: at most
// maxLen-1 bytes, cut at the first NUL byte (a string ends there).
func (f *Format) Sprint(args []Arg, mem Memory, maxLen int) (string, error) {
	maxLen = roomOf(maxLen)
	if s, ok := f.sprintPlain(args, maxLen); ok {
		return s, nil
	}
	buf := sprintBuffers.Get().(*[]byte)
	defer sprintBuffers.Put(buf)
	out, err := f.Exec((*buf)[:0], args, mem, maxLen)
	*buf = out[:0] // keep what larger limits grew
	if err != nil {
		return "", err
	}
	return StringValue(string(out), maxLen), nil
}

// sprintPlain is Sprint of a format that is one %d or %s and nothing
// else (sprint(x) of one value), without the formatter; ok is false for
// other formats.
func (f *Format) sprintPlain(args []Arg, maxLen int) (s string, ok bool) {
	if len(f.pieces) != 1 || len(args) != 1 {
		return "", false
	}
	switch d := f.pieces[0]; {
	case d.Width >= 0 || d.Prec >= 0 || d.WidthArg || d.PrecArg:
		return "", false
	case d.Verb == 'd' && d.Flags == FlagSign:
		return StringValue(strconv.FormatInt(args[0].Int, 10), maxLen), true
	case d.Verb == 's' && d.Flags == 0:
		return StringValue(args[0].Str, maxLen), true
	}
	return "", false
}

// sprintBuffers are Sprint's scratch buffers: Exec's buffer escapes, and
// a fresh one per call (a scrape makes 40,000) is garbage the collector
// then spends its time on.
var sprintBuffers = sync.Pool{New: func() any { b := make([]byte, 0, DefaultMaxStringLen); return &b }}

// Exec renders args with f and appends the output to dst. limit is the room
// the call has (BufferSize for printf, MAXSTRINGLEN for sprintf; <= 0 means
// BufferSize): widths and precisions are clamped to the room left and output
// past it is dropped. Missing arguments read as 0 or "". A nil mem is no
// memory at all (user-side probes): every dump faults. On error dst is
// returned unchanged.
func (f *Format) Exec(dst []byte, args []Arg, mem Memory, limit int) ([]byte, error) {
	if f.memory {
		if err := f.checkDumps(args); err != nil {
			return dst, err
		}
	}
	if limit <= 0 {
		limit = BufferSize
	}
	w := writer{buf: dst, end: len(dst) + limit}
	next := 0
	arg := func() Arg {
		next++
		if next-1 < len(args) {
			return args[next-1]
		}
		return Arg{}
	}
	for i := range f.pieces {
		d := &f.pieces[i]
		if d.Verb == 0 {
			w.buf = append(w.buf, d.Text...)
			w.clip()
			continue
		}
		width, prec := -1, -1
		if d.WidthArg {
			width = w.clamp(arg().Int)
		} else if d.Width >= 0 {
			width = w.clamp(int64(d.Width))
		}
		if d.PrecArg {
			prec = w.clamp(arg().Int)
		} else if d.Prec >= 0 {
			prec = w.clamp(int64(d.Prec))
		}
		if err := w.convert(d, arg(), width, prec, mem); err != nil {
			return dst, err
		}
		w.clip()
	}
	return w.buf, nil
}

// checkDumps refuses memory dumps larger than a page before anything is
// printed, as the translated code does.
func (f *Format) checkDumps(args []Arg) error {
	next := 0
	for i := range f.pieces {
		d := &f.pieces[i]
		if d.Verb == 0 {
			continue
		}
		if d.WidthArg {
			next++
		}
		size, at := int64(1), -1
		if d.PrecArg {
			at = next
			next++
			if at < len(args) {
				size = args[at].Int
			} else {
				size = 0
			}
		} else if d.Prec > 0 {
			size = int64(d.Prec)
		}
		next++
		if (d.Verb == 'm' || d.Verb == 'M') && size > pageSize {
			return &RunError{Msg: strconv.FormatInt(size, 10) + " is too many bytes for a memory dump", Arg: at}
		}
	}
	return nil
}

// writer appends to buf, never past end.
type writer struct {
	buf []byte
	end int
}

func (w *writer) room() int { return max(0, w.end-len(w.buf)) }

// clip drops what was written past the end.
func (w *writer) clip() {
	if len(w.buf) > w.end {
		w.buf = w.buf[:w.end]
	}
}

// clamp turns a width or precision into the runtime's int, between 0 and the
// room left.
func (w *writer) clamp(v int64) int {
	return min(max(int(int32(v)), 0), w.room())
}

func (w *writer) convert(d *Directive, a Arg, width, prec int, mem Memory) error {
	switch d.Verb {
	case 's':
		w.str(a.Str, width, prec, d.Flags)
	case 'c':
		w.char(byte(a.Int), width, d.Flags)
	case 'b':
		w.binary(a.Int, width, prec, d.Flags)
	case 'm', 'M':
		return w.dump(d.Verb == 'M', uint64(a.Int), width, prec, d.Flags, mem)
	default:
		w.buf = appendNumber(w.buf, uint64(a.Int), d.base, width, prec, d.Flags)
	}
	return nil
}

const (
	lowerDigits = "0123456789abcdefghijklmnopqrstuvwxyz"
	upperDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// appendNumber is the runtime's number(): size is the field width and
// precision the minimum number of digits, -1 when unspecified.
func appendNumber(b []byte, num, base uint64, size, precision int, flags Flags) []byte {
	digits := lowerDigits
	if flags&FlagLarge != 0 {
		digits = upperDigits
	}
	if flags&FlagLeft != 0 {
		flags &^= FlagZero
	}
	var sign byte
	if flags&FlagSign != 0 {
		switch {
		case int64(num) < 0:
			sign, num = '-', -num
		case flags&FlagPlus != 0:
			sign = '+'
		case flags&FlagSpace != 0:
			sign = ' '
		}
		if sign != 0 {
			size--
		}
	}
	special := flags&FlagSpecial != 0 && (base == 16 || base == 8)
	if special {
		size -= int(base / 8) // "0x" or "0"
	}
	var tmp [64]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = digits[num%base]
		num /= base
		if num == 0 {
			break
		}
	}
	n := len(tmp) - i
	precision = max(precision, n)
	size -= precision
	if flags&(FlagZero|FlagLeft) == 0 {
		b = pad(b, ' ', size)
		size = 0
	}
	if sign != 0 {
		b = append(b, sign)
	}
	if special {
		b = append(b, '0')
		if base == 16 {
			b = append(b, digits[33])
		}
	}
	if flags&FlagLeft == 0 {
		fill := byte(' ')
		if flags&FlagZero != 0 {
			fill = '0'
		}
		b = pad(b, fill, size)
		size = 0
	}
	b = pad(b, '0', precision-n)
	b = append(b, tmp[i:]...)
	if flags&FlagLeft != 0 {
		b = pad(b, ' ', size)
	}
	return b
}

// pad appends n copies of c (none when n <= 0).
func pad(b []byte, c byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, c)
	}
	return b
}

// char writes a %c: the byte itself, or under '#' a C escape for quotes,
// backslashes and anything but printable ASCII.
func (w *writer) char(c byte, width int, flags Flags) {
	escape := flags&FlagSpecial != 0 && (!isPrint(c) || c == '\'' || c == '\\')
	size := 1
	if escape {
		size = 4 // \ooo
		if shortEscape(c) != 0 {
			size = 2
		}
	}
	if flags&FlagLeft == 0 {
		w.buf = pad(w.buf, ' ', width-size)
	}
	switch {
	case !escape:
		w.buf = append(w.buf, c)
	case size == 2:
		w.buf = append(w.buf, '\\', shortEscape(c))
	default:
		w.buf = appendOctal(append(w.buf, '\\'), c)
	}
	if flags&FlagLeft != 0 {
		w.buf = pad(w.buf, ' ', width-size)
	}
}

// shortEscape is the letter of c's C escape (\n, \t, ...), or 0.
func shortEscape(c byte) byte {
	switch c {
	case '\a':
		return 'a'
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	case '\v':
		return 'v'
	case '\'', '"', '\\':
		return c
	}
	return 0
}

func appendOctal(b []byte, c byte) []byte {
	return append(b, '0'+c>>6, '0'+c>>3&7, '0'+c&7)
}

func isPrint(c byte) bool { return ' ' <= c && c <= '~' }

// str writes a %s: at most prec bytes of s (up to a NUL), padded to width,
// and a NUL byte after it under the '0' flag.
func (w *writer) str(s string, width, prec int, flags Flags) {
	s = cString(s)
	limit := BufferSize
	if prec >= 0 {
		limit = min(prec, BufferSize)
	}
	if len(s) > limit {
		s = s[:limit]
	}
	w.fieldStart(len(s), width, flags)
	w.buf = append(w.buf, s...)
	w.fieldEnd(len(s), width, flags)
}

// fieldStart and fieldEnd surround a field of n bytes with the layout shared
// by %s, %m and %M: spaces up to width on the left or (under '-') on the
// right, then a NUL byte under the '0' flag.
func (w *writer) fieldStart(n, width int, flags Flags) {
	if flags&FlagLeft == 0 {
		w.buf = pad(w.buf, ' ', min(width-n, w.room()))
	}
}

func (w *writer) fieldEnd(n, width int, flags Flags) {
	w.clip()
	if flags&FlagLeft != 0 {
		w.buf = pad(w.buf, ' ', min(width-n, w.room()))
	}
	if flags&FlagZero != 0 && w.room() > 0 {
		w.buf = append(w.buf, 0)
	}
}

// dump writes a %m (raw bytes) or %M (hex digits): prec bytes of memory (1 when
// unspecified), read from the kernel, or from the process under '#'.
func (w *writer) dump(hex bool, addr uint64, width, prec int, flags Flags, mem Memory) error {
	n := 1
	if prec > 0 {
		n = prec
	}
	size := n
	if hex {
		size = 2 * n
	}
	w.fieldStart(size, width, flags)
	// Only the bytes that fit are read: one per byte of room, or per two for hex.
	read := min(n, w.room())
	if hex {
		read = min(n, w.room()/2)
	}
	if read > 0 && mem == nil {
		return readFault(addr)
	}
	// A dynamic precision that passed the size check as a negative long can
	// still come out large once truncated to an int: read page by page.
	var buf [pageSize]byte
	for read > 0 {
		p := buf[:min(read, len(buf))]
		got, err := mem.ReadMemory(addr, p, flags&FlagSpecial != 0)
		if err != nil {
			return err
		}
		if got < len(p) {
			return readFault(addr + uint64(max(got, 0)))
		}
		if hex {
			for _, c := range p {
				w.buf = append(w.buf, lowerDigits[c>>4], lowerDigits[c&15])
			}
		} else {
			w.buf = append(w.buf, p...)
		}
		addr += uint64(len(p))
		read -= len(p)
	}
	w.fieldEnd(size, width, flags)
	return nil
}

func readFault(addr uint64) error {
	return &RunError{Msg: "read fault [man error::fault] at 0x" + strconv.FormatUint(addr, 16), Arg: -1}
}

// binary writes a %b: the value's low prec bytes in little-endian order, padded
// with NUL bytes to width. Width and precision default to each other, then to 8;
// a precision other than 1, 2, 4 or 8 counts as unspecified.
func (w *writer) binary(v int64, width, prec int, flags Flags) {
	prec = binaryPrecision(prec)
	switch {
	case width == -1 && prec == -1:
		width, prec = 8, 8
	case width == -1:
		width = prec
	case prec == -1:
		prec = binaryPrecision(width)
		if prec == -1 {
			prec = 8
		}
	}
	if flags&FlagLeft == 0 {
		w.buf = pad(w.buf, 0, min(width-prec, w.room()))
	}
	if w.room() >= prec {
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], uint64(v))
		w.buf = append(w.buf, le[:prec]...)
	}
	if flags&FlagLeft != 0 {
		w.buf = pad(w.buf, 0, min(width-prec, w.room()))
	}
}

func binaryPrecision(p int) int {
	switch p {
	case 1, 2, 4, 8:
		return p
	}
	return -1
}
