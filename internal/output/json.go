package output

import (
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// JSON renders every event as one JSON object on a line of its own, with
// a "type" naming the event; docs/json-output.md is the schema. A print
// record's "data" is exactly the text Text would write for it. Strings
// are the script's bytes: valid UTF-8 passes unchanged (escaped as JSON
// needs), a byte that is not is written as U+FFFD. Diagnostics go to the
// same stream as the rest, in order.
type JSON struct {
	buffer
	scratch []byte // a print call's text that is not UTF-8, to quote
	headOf  *format.Format
	head    []byte // the start of headOf's print records (printHead)
}

// NewJSON returns a JSON writing to w.
func NewJSON(w io.Writer) *JSON { return &JSON{buffer: buffer{w: w}} }

// Print writes {"type":"print","format":F,"args":[...],"data":TEXT}
// ("format" for a printf call only); a failed call writes nothing. What
// comes before the arguments is the same for every call of a format: it
// is made once per format in a row (printHead). The text is rendered in
// place, after the arguments, and quoted there (quoteInPlace).
func (j *JSON) Print(f *format.Format, args []format.Arg, mem format.Memory) error {
	start := len(j.buf)
	b := appendArgsJSON(append(j.buf, j.printHead(f)...), f.Args(), args)
	b = append(b, `],"data":"`...)
	data := len(b)
	b, err := f.Exec(b, args, mem, format.BufferSize)
	if err != nil {
		j.buf = b[:start]
		return err
	}
	j.buf = append(j.quoteInPlace(b, data), '"')
	j.endLine()
	return nil
}

// printHead is the start of f's print records, up to its first argument:
// {"type":"print","format":F,"args":[ (without "format" for a format no
// format string wrote). The last one made is kept: a flood of records
// comes from one call.
func (j *JSON) printHead(f *format.Format) []byte {
	if j.headOf == f {
		return j.head
	}
	j.head = append(j.head[:0], `{"type":"print"`...)
	if src, ok := f.Source(); ok {
		j.head = appendQuoted(append(j.head, `,"format":`...), src)
	}
	j.head = append(j.head, `,"args":[`...)
	j.headOf = f
	return j.head
}

// appendArgsJSON appends the arguments a format consumed, the inside of a
// JSON array, in order ('*' widths and precisions included): a long as a
// number, a string as a string, by the kind the format reads each as; a
// missing argument as the 0 or "" the format reads.
func appendArgsJSON(b []byte, kinds []format.Kind, args []format.Arg) []byte {
	for i, k := range kinds {
		var a format.Arg
		if i < len(args) {
			a = args[i]
		}
		b = appendComma(b, i)
		if k == format.KindString {
			b = appendQuoted(b, a.Str)
		} else {
			b = appendInt(b, a.Int)
		}
	}
	return b
}

// appendInt is strconv.AppendInt(b, v, 10), with the digits written in
// place, two at a time, rather than copied from a scratch array: a flood
// of records formats millions of numbers.
func appendInt(b []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u
	}
	n := decimalDigits(u)
	b = slices.Grow(b, n)[:len(b)+n]
	i := len(b)
	for ; u >= 10; u /= 100 {
		d := u % 100 * 2
		i -= 2
		b[i], b[i+1] = digitPairs[d], digitPairs[d+1]
	}
	if i > len(b)-n {
		b[i-1] = byte('0' + u)
	}
	return b
}

// decimalDigits is how many digits u has in decimal.
func decimalDigits(u uint64) int {
	u |= 1 // 0 has a digit, as 1 has
	// t is log10(u) or one more, from log2(u): 1233/4096 is just over log10(2)
	t := bits.Len64(u) * 1233 >> 12
	if u < powersOf10[t] {
		return t
	}
	return t + 1
}

// powersOf10 are 10^0 to 10^19, the largest a uint64 holds.
var powersOf10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// digitPairs are "00" to "99".
var digitPairs = func() (t [200]byte) {
	for i := range 100 {
		t[2*i], t[2*i+1] = byte('0'+i/10), byte('0'+i%10)
	}
	return t
}()

// quoteInPlace escapes b[from:] as the inside of a JSON string. The bytes
// before the first one to escape stay where they are (found a word at a
// time, plainLen: a print record's text usually has one, its final
// newline); from there the bytes move back by what the escapes add, from
// the end. Text that is not UTF-8 is quoted through scratch by
// appendQuoted.
func (j *JSON) quoteInPlace(b []byte, from int) []byte {
	first := from + plainLen(b[from:])
	extra := 0
	for i := first; i < len(b); i++ {
		c := b[i]
		switch {
		case c < utf8.RuneSelf && plain[c]:
		case c < utf8.RuneSelf:
			extra += escapeLen(c) - 1
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				j.scratch = append(j.scratch[:0], b[from:]...)
				b = appendQuoted(b[:from-1], j.scratch)
				return b[:len(b)-1]
			}
			i += size - 1
		}
	}
	if extra == 0 {
		return b
	}
	end := len(b)
	b = append(b, make([]byte, extra)...)
	w := len(b)
	var esc [6]byte
	for i := end - 1; i >= first; i-- {
		c := b[i]
		if c >= utf8.RuneSelf || plain[c] {
			w--
			b[w] = c
			continue
		}
		e := appendEscape(esc[:0], c)
		w -= len(e)
		copy(b[w:], e)
	}
	return b
}

// Hist writes {"type":"hist","data":STAT} with the statistic's buckets.
func (j *JSON) Hist(s *format.Stat) error {
	if err := s.HistError(); err != nil {
		return err
	}
	j.buf = appendStatJSON(append(j.buf, `{"type":"hist","data":`...), s)
	j.endLine()
	return nil
}

// Log writes {"type":"log","data":MSG}.
func (j *JSON) Log(msg string) {
	j.buf = appendQuoted(append(j.buf, `{"type":"log","data":`...), msg)
	j.endLine()
}

// Global writes the global as one object: its name, types and elements.
func (j *JSON) Global(g *Global) {
	b := append(j.buf, `{"type":"global","name":`...)
	b = appendQuoted(b, g.Name)
	b = appendQuoted(append(b, `,"value_type":`...), g.Type.String())
	if g.Keys != nil {
		b = append(b, `,"key_types":[`...)
		for i, k := range g.Keys {
			b = appendQuoted(appendComma(b, i), k.String())
		}
		b = append(b, ']')
	}
	b = append(b, `,"elements":[`...)
	for i := range g.Elements {
		b = appendElementJSON(appendComma(b, i), g, &g.Elements[i])
	}
	j.buf = append(b, ']')
	j.endLine()
}

// appendElementJSON appends {"keys":[...],"value":V} or {"keys":[...],"stat":STAT}.
func appendElementJSON(b []byte, g *Global, e *Element) []byte {
	b = append(b, '{')
	if g.Keys != nil {
		b = append(b, `"keys":[`...)
		for i, k := range e.Key {
			b = appendValueJSON(appendComma(b, i), i < len(g.Keys) && g.Keys[i] == syntax.TypeString, k)
		}
		b = append(b, "],"...)
	}
	if g.Type == syntax.TypeStats {
		s := e.Stat
		if s == nil {
			s = &format.Stat{}
		}
		return append(appendStatJSON(append(b, `"stat":`...), s), '}')
	}
	return append(appendValueJSON(append(b, `"value":`...), g.Type == syntax.TypeString, e.Value), '}')
}

// appendValueJSON appends a long as a number, a string (up to its first
// NUL byte, as Text shows it) as a JSON string.
func appendValueJSON(b []byte, isString bool, v format.Arg) []byte {
	if !isString {
		return strconv.AppendInt(b, v.Int, 10)
	}
	s, _, _ := strings.Cut(v.Str, "\x00")
	return appendQuoted(b, s)
}

// appendStatJSON appends {"count":N,"sum":N,"min":N,"max":N,"avg":N} (min,
// max and avg 0 when empty, as Text shows them), with "hist" and
// "buckets" when s has a histogram: the buckets that counted a value, in
// order, each with the value stap's histogram shows for it.
func appendStatJSON(b []byte, s *format.Stat) []byte {
	b = append(b, '{')
	for i, op := range statOps {
		v, _ := s.Get(op)
		b = append(appendComma(b, i), '"')
		b = strconv.AppendInt(append(append(b, op...), `":`...), v, 10)
	}
	if h := s.Hist; h != nil && len(s.Counts) == h.Buckets() {
		b = appendHistJSON(b, h, s.Counts)
	}
	return append(b, '}')
}

// appendHistJSON appends the layout and the buckets of a histogram.
func appendHistJSON(b []byte, h *format.Hist, counts []int64) []byte {
	if h.Linear {
		b = append(b, `,"hist":"linear","start":`...)
		b = strconv.AppendInt(b, int64(h.Start), 10)
		b = strconv.AppendInt(append(b, `,"stop":`...), int64(h.Stop), 10)
		b = strconv.AppendInt(append(b, `,"interval":`...), int64(h.Interval), 10)
	} else {
		b = append(b, `,"hist":"log"`...)
	}
	b = append(b, `,"buckets":[`...)
	n := 0
	for i, c := range counts {
		if c == 0 {
			continue
		}
		value, mark := h.Label(i)
		b = strconv.AppendInt(append(appendComma(b, n), `{"value":`...), value, 10)
		switch mark {
		case "<":
			b = append(b, `,"below":true`...)
		case ">":
			b = append(b, `,"above":true`...)
		}
		b = append(strconv.AppendInt(append(b, `,"count":`...), c, 10), '}')
		n++
	}
	return append(b, ']')
}

// Diagnostic writes {"type":"error"|"warning","kind":KIND,"msg":MSG}
// with "near", "file", "line", "column" and "hint" when it has them.
func (j *JSON) Diagnostic(d *Diagnostic) {
	b := append(j.buf, `{"type":`...)
	b = appendQuoted(b, severityName[d.Severity])
	b = appendQuoted(append(b, `,"kind":`...), string(d.Kind))
	b = appendQuoted(append(b, `,"msg":`...), d.Msg)
	if d.At.IsValid() {
		if d.Near != "" {
			b = appendQuoted(append(b, `,"near":`...), d.Near)
		}
		b = appendPosition(b, d.At)
	}
	if d.Hint != "" {
		b = appendQuoted(append(b, `,"hint":`...), d.Hint)
	}
	j.buf = b
	j.endLine()
}

var severityName = map[Severity]string{Error: "error", Warning: "warning"}

// appendPosition appends ,"file":F,"line":L,"column":C.
func appendPosition(b []byte, p syntax.Pos) []byte {
	b = appendQuoted(append(b, `,"file":`...), p.File())
	b = strconv.AppendInt(append(b, `,"line":`...), int64(p.Line), 10)
	return strconv.AppendInt(append(b, `,"column":`...), int64(p.Col), 10)
}

// Loss writes {"type":"lost","what":W,"count":N,"option":O,"limit":L,"size":S}.
func (j *JSON) Loss(l *Loss) {
	b := appendQuoted(append(j.buf, `{"type":"lost","what":`...), l.What)
	b = strconv.AppendInt(append(b, `,"count":`...), l.Count, 10)
	b = appendQuoted(append(b, `,"option":`...), l.Option)
	b = appendQuoted(append(b, `,"limit":`...), l.Limit)
	j.buf = strconv.AppendInt(append(b, `,"size":`...), l.Size, 10)
	j.endLine()
}

// Summary writes {"type":"summary","errors":N,"skipped":N}, always.
func (j *JSON) Summary(s *Summary) {
	b := strconv.AppendInt(append(j.buf, `{"type":"summary","errors":`...), s.Errors, 10)
	j.buf = strconv.AppendInt(append(b, `,"skipped":`...), s.Skipped, 10)
	j.endLine()
}

// HitReport writes {"type":"probe_hits","probes":[...]}, a probe per Hit.
func (j *JSON) HitReport(hits []Hit) {
	b := append(j.buf, `{"type":"probe_hits","probes":[`...)
	for i, h := range hits {
		b = appendQuoted(append(appendComma(b, i), `{"probe":`...), h.Probe)
		b = appendPosition(b, h.At)
		for _, f := range []struct {
			name string
			v    int64
		}{{"hits", h.Hits}, {"min_ns", h.Min}, {"avg_ns", h.Avg}, {"max_ns", h.Max}, {"variance", h.Variance}} {
			b = strconv.AppendInt(append(append(append(b, `,"`...), f.name...), `":`...), f.v, 10)
		}
		b = appendQuoted(append(b, `,"from":`...), h.From)
		b = append(strconv.AppendInt(append(b, `,"index":`...), int64(h.Index), 10), '}')
	}
	j.buf = append(b, ']')
	j.endLine()
}

// Attached writes {"type":"attached_probes","programs":N}.
func (j *JSON) Attached(a *Attached) {
	j.buf = strconv.AppendInt(append(j.buf, `{"type":"attached_probes","programs":`...), int64(a.Programs), 10)
	j.endLine()
}

// System writes {"type":"system","data":TEXT} at once.
func (j *JSON) System(out []byte) {
	j.buf = appendQuoted(append(j.buf, `{"type":"system","data":`...), out)
	j.buf = append(j.buf, "}\n"...)
	j.keepErr(j.write())
}

// SwitchFile writes {"type":"switch_file"} at the end of the file it
// leaves, then switches.
func (j *JSON) SwitchFile() error {
	j.buf = append(j.buf, `{"type":"switch_file"`...)
	j.endLine()
	return j.switchFile()
}

// endLine closes the object and the line.
func (j *JSON) endLine() {
	j.buf = append(j.buf, "}\n"...)
	j.flushIfFull()
}

func appendComma(b []byte, i int) []byte {
	if i > 0 {
		return append(b, ',')
	}
	return b
}

// plain marks the ASCII bytes a JSON string holds as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != 0x7f
	}
	return t
}()

// appendQuoted appends s as a JSON string: runs of plain bytes copied at
// once, control characters, quotes and backslashes escaped, valid UTF-8
// sequences as they are, any other byte as U+FFFD.
func appendQuoted[T ~string | ~[]byte](b []byte, s T) []byte {
	if n := plainLen(s); n < len(s) {
		return appendQuotedFrom(b, s, n)
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendQuotedFrom is appendQuoted of s whose first n bytes are plain.
func appendQuotedFrom[T ~string | ~[]byte](b []byte, s T, n int) []byte {
	b = append(b, '"')
	for {
		b = append(b, s[:n]...)
		s = s[n:]
		if len(s) == 0 {
			return append(b, '"')
		}
		size := 1
		if c := s[0]; c < utf8.RuneSelf {
			b = appendEscape(b, c)
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(string(s[:min(utf8.UTFMax, len(s))]))
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[:size]...)
			}
		}
		s = s[size:]
		n = plainLen(s)
	}
}

// plainLen is the length of the start of s that is plain ASCII: none of
// its bytes is a control character, '"', '\\', DEL or a byte of a
// multi-byte sequence. It reads s eight bytes at a time (a string of 4 to
// 7 bytes four at a time), the last word overlapping the one before.
func plainLen[T ~string | ~[]byte](s T) int {
	if len(s) < 8 {
		return shortPlainLen(s)
	}
	n := 0
	for ; n+8 <= len(s); n += 8 {
		if m := specialBytes(load64(s[n : n+8])); m != 0 {
			return n + firstByte(m)
		}
	}
	if n == len(s) {
		return n
	}
	// The last word overlaps the one before: its bytes before n are plain
	// and borrow nothing, so the first it flags is the first not plain.
	if m := specialBytes(load64(s[len(s)-8:])); m != 0 {
		return len(s) - 8 + firstByte(m)
	}
	return len(s)
}

// shortPlainLen is plainLen of fewer than 8 bytes.
func shortPlainLen[T ~string | ~[]byte](s T) int {
	if len(s) < 4 {
		n := 0
		for n < len(s) && ' ' <= s[n] && s[n] < 0x7f && s[n] != '"' && s[n] != '\\' {
			n++
		}
		return n
	}
	const low = 0x80808080 // the four bytes loaded; the zeros above are not s
	if m := specialBytes(load32(s[:4])) & low; m != 0 {
		return firstByte(m)
	}
	if m := specialBytes(load32(s[len(s)-4:])) & low; m != 0 {
		return len(s) - 4 + firstByte(m)
	}
	return len(s)
}

// specialBytes has the high bit set in each byte of the word x (loaded
// little-endian) that is not plain, and maybe in bytes after such a byte
// (a subtraction's borrow), never before the first: firstByte finds it.
func specialBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	special := (x - 0x20*ones) | ((x ^ '"'*ones) - ones) | ((x ^ '\\'*ones) - ones) | ((x ^ 0x7f*ones) - ones) | x
	return special & highs
}

// firstByte is the index of the first byte specialBytes flags in m.
func firstByte(m uint64) int { return bits.TrailingZeros64(m) / 8 }

// load64 and load32 read a little-endian word of s.
func load64[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load32[T ~string | ~[]byte](s T) uint64 {
	_ = s[3]
	return uint64(uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24)
}

// escapeLen is the length of the JSON escape of an ASCII byte that is not
// plain.
func escapeLen(c byte) int {
	switch c {
	case '"', '\\', '\n', '\t', '\r':
		return 2
	}
	return len(`\u0000`)
}

// appendEscape appends the JSON escape of an ASCII byte.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\t':
		return append(b, '\\', 't')
	case '\r':
		return append(b, '\\', 'r')
	}
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}
