package interp

import (
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/tapset"
)

var stringBuiltins = map[string]builtinFunc{
	"strlen": func(_ *callContext, a []Value) Value { return long(int64(len(a[0].Str))) },
	"substr": func(_ *callContext, a []Value) Value { return str(substr(a[0].Str, a[1].Int, a[2].Int)) },
	"stringat": func(cc *callContext, a []Value) Value {
		if a[1].Int < 0 || a[1].Int >= int64(len(a[0].Str)) {
			cc.fail(tapset.MsgPositionOutOfBounds)
		}
		return long(int64(int8(a[0].Str[a[1].Int])))
	},
	"isinstr": func(_ *callContext, a []Value) Value { return boolean(strings.Contains(a[0].Str, a[1].Str)) },
	"strpos":  func(_ *callContext, a []Value) Value { return long(int64(strings.Index(a[0].Str, a[1].Str))) },
	"str_replace": func(cc *callContext, a []Value) Value {
		if a[1].Str == "" {
			return a[0]
		}
		return str(cc.in.clip(strings.ReplaceAll(a[0].Str, a[1].Str, a[2].Str)))
	},
	"tokenize": func(cc *callContext, a []Value) Value {
		return str(cc.in.tokenizeState.next(a[0].Str, a[1].Str))
	},
	"text_str": func(cc *callContext, a []Value) Value {
		return str(format.TextStr(a[0].Str, cc.in.maxStringLen()))
	},
	"text_strn": func(cc *callContext, a []Value) Value {
		return str(format.TextStrN(a[0].Str, a[1].Int, a[2].Int, cc.in.maxStringLen()))
	},
	"string_quoted": func(cc *callContext, a []Value) Value {
		return str(format.StringQuoted(a[0].Str, cc.in.maxStringLen()))
	},
	"strtol": func(_ *callContext, a []Value) Value { return long(strtol(a[0].Str, a[1].Int)) },
	"isdigit": func(_ *callContext, a []Value) Value {
		return boolean(a[0].Str != "" && isDigit(a[0].Str[0]))
	},
	"matched": func(cc *callContext, a []Value) Value { return str(cc.in.match.group(cc, a[0].Int)) },
	"matched_str": func(cc *callContext, a []Value) Value {
		return str(cc.in.match.group(cc, 0))
	},
	"ngroups": func(cc *callContext, a []Value) Value { return long(cc.in.match.count(cc)) },
}

// substr is the tapset's substr: length bytes from start, "" when start is
// outside the string.
func substr(s string, start, length int64) string {
	if start < 0 || start >= int64(len(s)) || length <= 0 {
		return ""
	}
	end := min(start+length, int64(len(s)))
	return s[start:end]
}

// strtol is the kernel's simple_strtol: an optional '-', then digits of the
// base (0: 0x for hexadecimal, 0 for octal, else decimal; 16 accepts 0x), up
// to the first character that is not one.
func strtol(s string, base int64) int64 {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	hexPrefix := len(s) >= 2 && s[0] == '0' && (s[1]|0x20) == 'x' && isHexDigit(s, 2)
	switch {
	case base == 0 && hexPrefix:
		base, s = 16, s[2:]
	case base == 0 && strings.HasPrefix(s, "0"):
		base = 8
	case base == 0:
		base = 10
	case base == 16 && hexPrefix:
		s = s[2:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := digitValue(s[i])
		if d >= base {
			break
		}
		v = v*uint64(base) + uint64(d)
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

func isHexDigit(s string, i int) bool { return i < len(s) && digitValue(s[i]) < 16 }

func digitValue(c byte) int64 {
	switch {
	case isDigit(c):
		return int64(c - '0')
	case 'a' <= c|0x20 && c|0x20 <= 'z':
		return int64(c|0x20-'a') + 10
	}
	return 99
}

// tokenizer is tokenize()'s state: the rest of the string being split.
type tokenizer struct {
	rest   string
	active bool
}

// next follows the tapset: a non-empty input restarts the split; tokens are
// separated by any byte of delim, and empty tokens are skipped.
func (t *tokenizer) next(input, delim string) string {
	if input != "" {
		t.rest, t.active = input, true
	}
	for t.active {
		i := strings.IndexAny(t.rest, delim)
		if delim == "" {
			i = -1
		}
		var tok string
		if i < 0 {
			tok, t.rest, t.active = t.rest, "", false
		} else {
			tok, t.rest = t.rest[:i], t.rest[i+1:]
		}
		if tok != "" {
			return tok
		}
	}
	return ""
}
