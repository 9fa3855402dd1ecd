package format

import (
	"math"
	"strings"
	"testing"
)

// Expectations follow the module runtime's _stp_text_str (runtime/stp_string.c);
// SystemTap's BPF runtime escapes differently (\xNN, no UTF-8 decoding).
func TestTextStr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"", ""},
		{`a"b\c`, `a\"b\\c`},
		{"'", "'"},
		{"\n\t\a\b\f\r\v", `\n\t\a\b\f\r\v`},
		{"\x01\x1f\x7f", `\001\037\177`},
		{"\xff", `\377`},
		{"é", `\u00E9`},
		{"€", `\u20AC`},
		{"😀", `\U0001F600`},
		{"\xc3", `\303`},                         // sequence cut by the end of the string
		{"\xc3(", `\303(`},                       // bad continuation byte
		{"\xc0\x80", `\300\200`},                 // overlong encoding of NUL
		{"\xe0\x80\xaf", `\340\200\257`},         // overlong three-byte sequence
		{"\xed\xa0\x80", `\355\240\200`},         // UTF-16 surrogate
		{"\xf4\x90\x80\x80", `\364\220\200\200`}, // beyond U+10FFFF
		{"a\x00b", "a"},
		{strings.Repeat("a", 600), strings.Repeat("a", 511)},
		{strings.Repeat("\x01", 200), strings.Repeat(`\001`, 127)},
		{strings.Repeat("é", 100), strings.Repeat(`\u00E9`, 85)},
	}
	for _, tt := range tests {
		if got := TextStr(tt.in, DefaultMaxStringLen); got != tt.want {
			t.Errorf("TextStr(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextStrN(t *testing.T) {
	tests := []struct {
		in             string
		length, quoted int64
		want           string
	}{
		{"abc", 0, 0, "abc"},
		{"abcdef", 3, 0, "abc"},
		{"abcdef", -5, 0, "abcdef"},
		{"abcdef", 1000, 0, "abcdef"},
		{"ab\ncd", 4, 0, `ab\n`},
		{"ab\ncd", 3, 0, "ab"},
		{"abcdef", 8, 1, `"abcdef"`},
		{"abcdefgh", 8, 1, `"abc"...`},
		{"abcdefgh", 5, 1, `""...`},
		{"abcdefgh", 2, 1, `""...`},
		{"ab", 2, 1, `"ab"`},
		{"abc\x01defgh", 8, 1, `"abc"...`},
		{"ab\x01cdefgh", 8, 1, `"ab"...`}, // the escape a cut would split goes whole
		{"abcd\x01", 8, 1, `"abc"...`},
		{"é", 6, 0, `\u00E9`},
		{"é", 5, 0, ""},
		{"a\tb", 0, 7, `"a\tb"`},
	}
	for _, tt := range tests {
		if got := TextStrN(tt.in, tt.length, tt.quoted, DefaultMaxStringLen); got != tt.want {
			t.Errorf("TextStrN(%q, %d, %d) = %q, want %q", tt.in, tt.length, tt.quoted, got, tt.want)
		}
	}
}

func TestStringQuoted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x\ty", `"x\ty"`},
		{"", `""`},
		{`say "hi"`, `"say \"hi\""`},
		{strings.Repeat("a", 509), `"` + strings.Repeat("a", 509) + `"`},
		{strings.Repeat("a", 600), `"` + strings.Repeat("a", 506) + `"...`},
	}
	for _, tt := range tests {
		if got := StringQuoted(tt.in, DefaultMaxStringLen); got != tt.want {
			t.Errorf("StringQuoted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestBufferQuoted follows the runtime's _stp_text_str with its buffer
// flag: a NUL is `\0` in the room of `\000`, the text is cut with `"...`
// where the room ends (an escape that would be split goes whole), unless
// the byte that does not fit is a NUL.
func TestBufferQuoted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sh\x00\x00", `"sh\0\0"`},
		{"E\x00\x00!\r\xfe hello\"\\", `"E\0\0!\r\376 hello\"\\"`},
		{strings.Repeat("a", 510), `"` + strings.Repeat("a", 506) + `"...`},
		{strings.Repeat("a", 505) + "\x01", `"` + strings.Repeat("a", 505) + `\001"`},
		{strings.Repeat("a", 504) + "\x01aa", `"` + strings.Repeat("a", 504) + `"...`},
		{strings.Repeat("\x00", 128), `"` + strings.Repeat(`\0`, 127) + `"`},
		{strings.Repeat("a", 509), `"` + strings.Repeat("a", 509) + `"`},
	}
	for _, tt := range tests {
		if got := BufferQuoted([]byte(tt.in), DefaultMaxStringLen, DefaultMaxStringLen); got != tt.want {
			t.Errorf("BufferQuoted(%q) =\n%q, want\n%q", tt.in, got, tt.want)
		}
	}
}

// Every string the helpers build fits the MAXSTRINGLEN they are given.
func TestStringLimit(t *testing.T) {
	long := strings.Repeat("a", 40)
	sprint := func(format string, args ...Arg) string {
		f, err := Compile(format)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Sprint(args, nil, 16)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct{ call, got, want string }{
		{"TextStr(long)", TextStr(long, 16), long[:15]},
		{"TextStr(15 plain bytes)", TextStr(long[:15], 16), long[:15]},
		{"TextStr(16 plain bytes)", TextStr(long[:16], 16), long[:15]},
		{"TextStr(a\\b)", TextStr(`a\b`, 16), `a\\b`},
		{"TextStr(\\001...)", TextStr(strings.Repeat("\x01", 10), 16), strings.Repeat(`\001`, 3)},
		{"TextStrN(long, 100, 0)", TextStrN(long, 100, 0, 16), long[:15]},
		{"TextStrN(long, 8, 1)", TextStrN(long, 8, 1, 16), `"aaa"...`},
		{"StringQuoted(abc)", StringQuoted("abc", 16), `"abc"`},
		{"StringQuoted(long)", StringQuoted(long, 16), `"` + long[:10] + `"...`},
		{"StringQuoted(long) at 2", StringQuoted(long, 2), `"`},
		{"Sprint(%s-%d)", sprint("%s-%d", String(long), Long(7)), long[:15]},
		{"Sprint(%20d)", sprint("%-20d|", Long(7)), "7" + strings.Repeat(" ", 14)},
		{"StringValue(long)", StringValue("0123456789abcdefXYZ", 16), "0123456789abcde"},
		{"StringValue(string)", StringValue("01\x0023", 16), "01"},
		{"StringValue at 0", StringValue("abc", 0), ""},
		{"TextStr at 0", TextStr("abc", 0), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.call, tt.got, tt.want)
		}
	}
}

// Expected dates are from `date -u -d @SECONDS`, and the tapset's own
// documentation for the ends of the range.
func TestCtime(t *testing.T) {
	tests := []struct {
		secs int64
		want string
		err  error
	}{
		{0, "Thu Jan  1 00:00:00 1970", nil},
		{-1, "Wed Dec 31 23:59:59 1969", nil},
		{86399, "Thu Jan  1 23:59:59 1970", nil},
		{741476948, "Wed Jun 30 21:49:08 1993", nil},
		{951782400, "Tue Feb 29 00:00:00 2000", nil},
		{1700000000, "Tue Nov 14 22:13:20 2023", nil},
		{-2147483648, "Fri Dec 13 20:45:52 1901", nil},
		{2147483647, "Tue Jan 19 03:14:07 2038", nil},
		{2147483648, "", ErrTimeFuture},
		{-2147483649, "", ErrTimePast},
		{1 << 62, "", ErrTimeFuture},
	}
	for _, tt := range tests {
		got, err := Ctime(tt.secs)
		if got != tt.want || err != tt.err {
			t.Errorf("Ctime(%d) = %q, %v; want %q, %v", tt.secs, got, err, tt.want, tt.err)
		}
	}
	if ErrTimeFuture.Error() != "Time too far in the future to be converted" ||
		ErrTimePast.Error() != "Time too far in the past to be converted" {
		t.Error("ctime error texts differ from the tapset's")
	}
}

// TestSprintPlain checks Sprint's shortcut for a lone %d or %s against
// the formatter, at limits that cut and limits that do not.
func TestSprintPlain(t *testing.T) {
	args := []Arg{Long(0), Long(-1), Long(math.MinInt64), Long(math.MaxInt64), Long(1234567),
		String(""), String("plain"), String("cut\x00here"), String(strings.Repeat("x", 600))}
	for _, spec := range []string{"%d", "%s"} {
		f, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.sprintPlain(args[:1], 512); !ok {
			t.Errorf("Sprint(%q) does not take the shortcut", spec)
		}
		for _, a := range args {
			for _, maxLen := range []int{0, 1, 2, 5, 20, 21, 512} {
				got, err := f.Sprint([]Arg{a}, nil, maxLen)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := f.Exec(nil, []Arg{a}, nil, roomOf(maxLen))
				if want := StringValue(string(out), roomOf(maxLen)); got != want {
					t.Errorf("Sprint(%q, %v) at %d = %q, want %q", spec, a, maxLen, got, want)
				}
			}
		}
	}
}
