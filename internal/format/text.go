package format

import (
	"errors"
	"time"
)

// StringValue turns text into a script string value under MAXSTRINGLEN
// maxLen: at most maxLen-1 bytes, ending at the first NUL byte (as a C string
// does). Sprint applies it already; sprint(@hist_log(s)) and the like need it.
func StringValue(s string, maxLen int) string {
	if limit := roomOf(maxLen) - 1; len(s) > limit {
		s = s[:limit]
	}
	return cString(s)
}

// roomOf is the size of a string buffer under MAXSTRINGLEN maxLen: at least
// one byte, for the NUL.
func roomOf(maxLen int) int { return max(maxLen, 1) }

// TextStr is the tapset's text_str(s) under MAXSTRINGLEN maxLen: s with every
// character that is not printable ASCII escaped (C escapes, \ooo for bytes,
// \uXXXX or \UXXXXXXXX for UTF-8 sequences), cut when the result would exceed
// maxLen-1 bytes.
func TextStr(s string, maxLen int) string {
	if len(s) < roomOf(maxLen) && plainText(s) {
		return s // nothing to escape or cut (a value in every Prometheus line)
	}
	return textStr(s, 0, 0, false, false, maxLen)
}

// plainText reports whether s is printable ASCII that text_str leaves as
// it is: no quote and no backslash.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isPrint(c) || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TextStrN is the tapset's text_strn(s, len, quoted): like TextStr with the
// result limited to len bytes (0 means maxLen-1) and, when quoted is
// non-zero, in double quotes; a truncated quoted string ends with `"...`.
func TextStrN(s string, length, quoted int64, maxLen int) string {
	return textStr(s, 0, int(min(max(length, 0), int64(roomOf(maxLen)))), quoted != 0, false, maxLen)
}

// StringQuoted is the tapset's string_quoted(s): TextStr in double quotes.
func StringQuoted(s string, maxLen int) string {
	return textStr(s, maxLen, maxLen, true, false, maxLen)
}

// BufferQuoted is the tapset's kernel_buffer_quoted(addr, inlen, outLen)
// of the bytes b it read: StringQuoted of a buffer in at most outLen bytes
// (0 or too large: maxLen-1), whose NUL bytes are written `\0` (and take
// the room of an octal escape, as in the runtime) instead of ending it.
func BufferQuoted(b []byte, outLen, maxLen int) string {
	return textStr(string(b), len(b), outLen, true, true, maxLen)
}

// textStr follows the runtime's _stp_text_str: it reads at most inLen bytes
// of s and writes at most outLen (0 or too large: maxLen-1). A quoted
// string keeps room for its quotes; when it is cut, the last three bytes that
// fit give way to `"...`, and an escape sequence that would be split goes
// whole. A buffer's NUL bytes are characters (the runtime's buffer flag).
func textStr(s string, inLen, outLen int, quoted, buffer bool, maxLen int) string {
	limit := roomOf(maxLen) - 1
	if inLen <= 0 || inLen > limit {
		inLen = limit
	}
	if outLen <= 0 || outLen > limit {
		outLen = limit
	}
	var buf [DefaultMaxStringLen + 8]byte // larger limits grow it on the heap
	out := buf[:0]
	if quoted {
		outLen = max(outLen, 5) - 2
		out = append(out, '"')
	}
	esc, escLen := -1, 0 // first escape sequence a cut could split
	c := rune(0)
	in := 0
	for inLen > 0 {
		var n int
		n, c = decodeUTF8(s, in, inLen)
		if c == 0 && !buffer || outLen <= 0 {
			break
		}
		in += n
		inLen -= n
		num := 1
		switch {
		case n > 1:
			num = 6
			if c > 0xFFFF {
				num = 10
			}
		case c >= 0x80 || !isPrint(byte(c)) || c == '"' || c == '\\':
			num = 4
			if shortEscape(byte(c)) != 0 {
				num = 2
			}
		}
		if num > 1 && esc < 0 && outLen-3 < num {
			esc, escLen = len(out), num
		}
		if outLen < num {
			break
		}
		if c == 0 { // the runtime writes a buffer's NUL short, in an octal escape's room
			out = append(out, '\\', '0')
		} else {
			out = appendTextChar(out, c, num)
		}
		outLen -= num
	}
	if quoted {
		if c != 0 && inLen > 0 {
			cut := len(out) - 3 + outLen
			if esc >= 0 && esc < cut && cut < esc+escLen {
				cut = esc
			}
			out = append(out[:cut], `"...`...)
		} else {
			out = append(out, '"')
		}
	}
	// Only a limit too small for `"..."` leaves more than fits.
	return string(out[:min(len(out), limit)])
}

// appendTextChar writes c in num bytes: itself, a C escape, an octal escape,
// or a \u / \U escape of a code point.
func appendTextChar(out []byte, c rune, num int) []byte {
	switch num {
	case 1:
		return append(out, byte(c))
	case 2:
		return append(out, '\\', shortEscape(byte(c)))
	case 4:
		return appendOctal(append(out, '\\'), byte(c))
	}
	u := byte('u')
	if num == 10 {
		u = 'U'
	}
	out = append(out, '\\', u)
	for i := num - 3; i >= 0; i-- {
		out = append(out, upperDigits[(c>>(4*i))&15])
	}
	return out
}

// decodeUTF8 decodes the character at s[i] as the runtime's _stp_decode_utf8
// does, reading at most size bytes; bytes past the end of s read as NUL. It
// returns the bytes consumed and the code point, or 1 and the byte itself for
// anything that is not a well-formed, shortest, non-surrogate sequence of 2 to
// 4 bytes.
func decodeUTF8(s string, i, size int) (int, rune) {
	at := func(k int) byte {
		if k < len(s) {
			return s[k]
		}
		return 0
	}
	b := at(i)
	var n int
	var c rune
	switch {
	case b&0xE0 == 0xC0 && size >= 2:
		n, c = 2, rune(b&0x1F)
	case b&0xF0 == 0xE0 && size >= 3:
		n, c = 3, rune(b&0x0F)
	case b&0xF8 == 0xF0 && size >= 4:
		n, c = 4, rune(b&0x07)
	default:
		return 1, rune(b)
	}
	for k := 1; k < n; k++ {
		b2 := at(i + k)
		if b2&0xC0 != 0x80 {
			return 1, rune(b)
		}
		c = c<<6 | rune(b2&0x3F)
	}
	if (0xD800 <= c && c <= 0xDFFF) || c > 0x10FFFF || c < 0x80 ||
		(n == 3 && c < 0x800) || (n == 4 && c < 0x10000) {
		return 1, rune(b)
	}
	return n, c
}

// Errors of ctime for times a 32-bit time_t cannot hold.
var (
	ErrTimeFuture = errors.New("Time too far in the future to be converted")
	ErrTimePast   = errors.New("Time too far in the past to be converted")
)

// Ctime is the tapset's ctime(epochsecs): the UTC date in 24 characters,
// "Wed Jun 30 21:49:08 1993". Like stap it refuses times outside a signed
// 32-bit count of seconds.
func Ctime(epochsecs int64) (string, error) {
	switch {
	case epochsecs > 1<<31-1:
		return "", ErrTimeFuture
	case epochsecs < -1<<31:
		return "", ErrTimePast
	}
	return time.Unix(epochsecs, 0).UTC().Format("Mon Jan _2 15:04:05 2006"), nil
}
