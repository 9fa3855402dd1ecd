package format

import (
	"math"
	"slices"
	"strconv"
	"testing"
)

// ValueSpans finds the values a call's text holds as they are, and only
// those: which arguments have a span, each the value itself.
func TestValueSpans(t *testing.T) {
	long, str := Long, String
	for _, c := range []struct {
		format string
		args   []Arg
		room   int
		found  []bool // per argument: a span
	}{
		{"%d %s: %s %d\n", []Arg{long(12345), str("getppid"), str("sys_enter"), long(-1)}, 0, []bool{true, true, true, true}},
		{"%-16s %6d %i|%5s|%-3d|", []Arg{str("bash"), long(-42), long(math.MinInt64), str("toolong"), long(7)}, 0, []bool{true, true, true, true, true}},
		{"%s|%s", []Arg{str("a\x00b"), str("c")}, 0, []bool{false, true}},                 // cut at the NUL, the next still found
		{"%x %d %s", []Arg{long(255), long(1), str("a")}, 0, []bool{false, false, false}}, // after a field of unknown length
		{"%+d %05d %.3s %.2d %0s", []Arg{long(1), long(2), str("abcd"), long(3), str("x")}, 0, []bool{false, false, false, false, false}},
		{"%*d %s", []Arg{long(5), long(1), str("a")}, 0, []bool{false, false, false}},
		{"%u %c %d", []Arg{long(-1), long('x'), long(0)}, 0, []bool{false, false, false}},
		{"%d %s", nil, 0, []bool{true, true}},                                                   // missing: the 0 and "" written
		{"abc%d%s%d", []Arg{long(123456), str("xyz"), long(9)}, 8, []bool{false, false, false}}, // the room cuts the first number
		{"%d%s%d", []Arg{long(12), str("xyz"), long(9)}, 4, []bool{true, false, false}},
		{"%10s%d", []Arg{str("a"), long(1)}, 5, []bool{false, false}}, // the width clamped to the room
	} {
		f, err := Compile(c.format)
		if err != nil {
			t.Fatal(err)
		}
		text, err := f.Exec(nil, c.args, nil, c.room)
		if err != nil {
			t.Fatal(err)
		}
		spans := slices.Repeat([]Span{{7, 7}}, len(f.Args()))
		f.ValueSpans(len(text), c.args, spans)
		var found []bool
		for i, s := range spans {
			found = append(found, s != NoSpan)
			if s != NoSpan && string(text[s.Start:s.End]) != valueText(f.Args()[i], argOf(c.args, i)) {
				t.Errorf("%q: argument %d's span %v is %q in %q", c.format, i, s, text[s.Start:s.End], text)
			}
		}
		if !slices.Equal(found, c.found) {
			t.Errorf("%q of %q: spans %v, want found %v", c.format, text, spans, c.found)
		}
	}
}

// valueText is an argument's value as text: a long in decimal, a string
// whole.
func valueText(k Kind, a Arg) string {
	if k == KindString {
		return a.Str
	}
	return strconv.FormatInt(a.Int, 10)
}

func argOf(args []Arg, i int) Arg {
	if i < len(args) {
		return args[i]
	}
	return Arg{}
}

func TestDecimalLen(t *testing.T) {
	values := []int64{0, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		values = append(values, p-1, p, -p, -p+1)
	}
	for _, v := range values {
		if got, want := decimalLen(v), len(strconv.FormatInt(v, 10)); got != want {
			t.Errorf("decimalLen(%d) = %d, want %d", v, got, want)
		}
	}
}
