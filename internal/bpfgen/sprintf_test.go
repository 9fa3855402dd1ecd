package bpfgen_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
)

// sprintfCase is one sprintf call: a format and its arguments.
type sprintfCase struct {
	format string
	args   []format.Arg
	kinds  []format.Kind
}

// TestSprintfMatchesInterpreter renders formats through the BPF formatter
// in a real kernel program and through format.Sprint (the interpreter's
// sprintf), and wants the same bytes. Long arguments reach the program as
// values the verifier does not know (pid() - pid() + v).
func TestSprintfMatchesInterpreter(t *testing.T) {
	requireBPF(t)
	cases := sprintfCases()
	const perProgram = 12
	for start := 0; start < len(cases); start += perProgram {
		chunk := cases[start:min(start+perProgram, len(cases))]
		t.Run(strconv.Itoa(start), func(t *testing.T) {
			script, want := sprintfScript(t, chunk)
			got := runScript(t, script, newChild(t, "sh", "-c", "read x"))
			if got != want {
				gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
				for i := range min(len(gotLines), len(wantLines)) {
					if gotLines[i] != wantLines[i] {
						t.Errorf("line %d:\n got %q\nwant %q", i, gotLines[i], wantLines[i])
						break
					}
				}
				t.Fatalf("script:\n%s\noutput:\n%q\nwant:\n%q", script, got, want)
			}
		})
	}
}

// sprintfScript prints each case's sprintf on a line, and returns the
// output format.Sprint predicts.
func sprintfScript(t *testing.T, cases []sprintfCase) (script, want string) {
	var b, w strings.Builder
	b.WriteString("global once\nprobe begin {\n  if (once++) next\n")
	for _, c := range cases {
		f, err := format.Compile(c.format)
		if err != nil {
			t.Fatalf("%q: %v", c.format, err)
		}
		args := make([]format.Arg, len(c.args))
		src := []string{stapString(c.format)}
		for i, a := range c.args {
			if c.kinds[i] == format.KindString {
				args[i] = format.String(format.StringValue(a.Str, format.DefaultMaxStringLen))
				src = append(src, stapString(a.Str))
			} else {
				args[i] = a
				src = append(src, fmt.Sprintf("(pid() - pid() + %s)", stapLong(a.Int)))
			}
		}
		s, err := f.Sprint(args, nil, format.DefaultMaxStringLen)
		if err != nil {
			t.Fatalf("%q: %v", c.format, err)
		}
		fmt.Fprintf(&b, "  printf(\"%%s\\n\", sprintf(%s))\n", strings.Join(src, ", "))
		w.WriteString(s + "\n")
	}
	b.WriteString("}\n")
	return b.String(), w.String()
}

// stapString is s as a script string literal.
func stapString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// stapLong is v as a script expression (the most negative long has no
// literal).
func stapLong(v int64) string {
	if v == math.MinInt64 {
		return "(-9223372036854775807 - 1)"
	}
	return strconv.FormatInt(v, 10)
}

// sprintfCases crosses integer, character and string formats with values
// that reach their corners, and adds cases that fill MAXSTRINGLEN.
func sprintfCases() []sprintfCase {
	var cases []sprintfCase
	long := func(f string, vs ...int64) {
		for _, v := range vs {
			cases = append(cases, sprintfCase{f, []format.Arg{format.Long(v)}, []format.Kind{format.KindLong}})
		}
	}
	longs := []int64{0, 1, -1, 42, -42, 255, 1 << 31, -(1 << 31), 0xdeadbeef, math.MaxInt64, math.MinInt64}
	for _, f := range []string{
		"%d", "%i", "%u", "%x", "%X", "%o", "%p", "%ld", "%5d", "%-5d|", "%05d", "%+d", "% d",
		"%#x", "%#o", "%#X", "%.3d", "%8.3d", "%-8.3x|", "%+08d", "%020d", "%#08x", "%.0d",
		"%5.0d", "%+5u", "%#10o|", "%#.5x", "%08p", "%-24d|", "%22o", "%.25u",
	} {
		long(f, longs...)
	}
	long("%c", 'A', 0, '~', 200, -1)
	long("[%5c]", 'A', 0)
	long("[%-3c]", 'z')
	long("[%#c]", '\n', '\'', '\\', '"', 7, 0, 127, 200, 'q', ' ', 0x1b)
	long("[%#6c]", '\t', 200)
	long("[%-6c]", 'v')
	strs := []string{"", "a", "hello", "hello world, a longer string", strings.Repeat("0123456789", 60)}
	for _, f := range []string{"[%s]", "[%10s]", "[%-10s]", "[%.2s]", "[%5.1s]", "[%0s]x", "[%.0s]", "%-3.5s|"} {
		for _, s := range strs {
			cases = append(cases, sprintfCase{f, []format.Arg{format.String(s)}, []format.Kind{format.KindString}})
		}
	}
	two := func(f string, a, b format.Arg, ka, kb format.Kind) {
		cases = append(cases, sprintfCase{f, []format.Arg{a, b}, []format.Kind{ka, kb}})
	}
	L, S := format.KindLong, format.KindString
	for _, w := range []int64{-5, 0, 3, 12, 600, 1<<32 + 4, 1 << 31} {
		two("[%*d]", format.Long(w), format.Long(-42), L, L)
		two("[%-*x]", format.Long(w), format.Long(255), L, L)
		two("[%.*d]", format.Long(w), format.Long(7), L, L)
		two("[%*s]", format.Long(w), format.String("abc"), L, S)
		two("[%.*s]", format.Long(w), format.String("abcdef"), L, S)
		two("[%*c]", format.Long(w), format.Long('c'), L, L)
	}
	big := strings.Repeat("abcdefghij", 50) // 500 bytes
	two("%s%s", format.String(big), format.String(big), S, S)
	two("%s%d", format.String(big), format.Long(1234567890123), S, L)
	two("%s%20d", format.String(big), format.Long(-5), S, L)
	two("%s%-20d|", format.String(big), format.Long(-5), S, L)
	two("%s%#c", format.String(strings.Repeat("z", 509)), format.Long(200), S, L)
	two("%s%.30d", format.String(big), format.Long(9), S, L)
	long("ab%600d", 12345)
	long("ab%-600d|", 12345)
	long("%.600d", 123)
	long("%0600d", -123)
	long("%#0600x", 123)
	long(strings.Repeat("x", 600)+"%d", 1)
	long(strings.Repeat("y", 505)+"%+d", 1234)
	long("%d\x00hidden", 5)
	cases = append(cases, sprintfCase{"no directives %% at all", nil, nil})
	cases = append(cases, sprintfCase{"%s=%d %s=%x %c%c", []format.Arg{
		format.String("pid"), format.Long(77), format.String("mask"), format.Long(0xff), format.Long('o'), format.Long('k')},
		[]format.Kind{S, L, S, L, L, L}})
	return cases
}

// TestSprintfRefused checks that the conversions the BPF formatter does
// not do are refused at the format, naming the conversion.
func TestSprintfRefused(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`probe begin { println(sprintf("%b", 1)) }`,
			`<input>:1:31: conversion %b of sprintf() cannot be compiled in a kernel probe`},
		{`probe begin { x = sprintf("a%d %m", 1, 2) . ""; println(x) }`,
			`<input>:1:27: conversion %m of sprintf() cannot be compiled in a kernel probe`},
		{`probe begin { print(sprintf("%5M", 0)) }`,
			`<input>:1:29: conversion %M of sprintf() cannot be compiled in a kernel probe`},
	} {
		if err := compileError(t, c.script); err == nil || err.Error() != c.want {
			t.Errorf("%s:\nerror %v\nwant  %s", c.script, err, c.want)
		}
	}
}
