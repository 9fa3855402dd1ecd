package format

import (
	"reflect"
	"strings"
	"testing"
)

// The print family; checked with stap-oracle:
// print(1, "a", -2); printd(",", 1, "a"); printdln("%d", 7, "x"); println("z", 3);
// sprint(-5, "b"); sprintd(":", 1, 2).
func TestPrint(t *testing.T) {
	L, S := KindLong, KindString
	tests := []struct {
		kinds   []Kind
		delim   string
		newline bool
		args    []Arg
		want    string
	}{
		{[]Kind{L, S, L}, "", false, []Arg{Long(1), String("a"), Long(-2)}, "1a-2"},
		{[]Kind{L, S}, ",", false, []Arg{Long(1), String("a")}, "1,a"},
		{[]Kind{L, S}, "%d", true, []Arg{Long(7), String("x")}, "7%dx\n"},
		{[]Kind{S, L}, "", true, []Arg{String("z"), Long(3)}, "z3\n"},
		{[]Kind{L, S}, "", false, []Arg{Long(-5), String("b")}, "-5b"},
		{[]Kind{L, L}, ":", false, []Arg{Long(1), Long(2)}, "1:2"},
		{[]Kind{L}, "", false, []Arg{Long(-1 << 63)}, "-9223372036854775808"},
		{[]Kind{S}, "", true, []Arg{String("")}, "\n"},
		{nil, "", true, nil, "\n"},
		{[]Kind{S, S}, "a\x00b", false, []Arg{String("x"), String("y")}, "xay"},
	}
	for _, tt := range tests {
		f := Print(tt.kinds, tt.delim, tt.newline)
		if got := string(f.Append(nil, tt.args)); got != tt.want {
			t.Errorf("Print(%v, %q, %v) = %q, want %q", tt.kinds, tt.delim, tt.newline, got, tt.want)
		}
		if !reflect.DeepEqual(f.Args(), tt.kinds) && len(tt.kinds) > 0 {
			t.Errorf("Print(%v).Args() = %v", tt.kinds, f.Args())
		}
	}
}

// The room of a call: printf writes at most BufferSize bytes, sprintf
// MAXSTRINGLEN-1; widths and precisions shrink to the room left.
func TestRoom(t *testing.T) {
	tests := []struct {
		format string
		args   []Arg
		sprint bool
		want   string
	}{
		{"%600d", []Arg{Long(5)}, true, strings.Repeat(" ", 511)},
		{"%-600d", []Arg{Long(5)}, true, "5" + strings.Repeat(" ", 510)},
		{"%s%s", []Arg{String(strings.Repeat("a", 300)), String(strings.Repeat("b", 300))}, true,
			strings.Repeat("a", 300) + strings.Repeat("b", 211)},
		// after 508 bytes a width of 10 shrinks to the 4 left: "   5", cut to 3
		{"%508s%10d", []Arg{String("x"), Long(5)}, true, strings.Repeat(" ", 507) + "x   "},
		// %b writes nothing when its bytes do not fit; what follows still does
		{"%509s%8bXYZ", []Arg{String("x"), Long(0x4142)}, true, strings.Repeat(" ", 508) + "xXY"},
		// a string ends at a NUL byte
		{"%d%c%d", []Arg{Long(1), Long(0), Long(2)}, true, "1"},
		{"[%05s]", []Arg{String("ab")}, true, "[   ab"},
		{"%9000s", []Arg{String("a")}, false, strings.Repeat(" ", BufferSize-1) + "a"},
		{"%s%9000s", []Arg{String("ab"), String("c")}, false, "ab" + strings.Repeat(" ", BufferSize-3) + "c"},
		{"%.9000d", []Arg{Long(7)}, false, strings.Repeat("0", BufferSize-1) + "7"},
	}
	for _, tt := range tests {
		f, err := Compile(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if tt.sprint {
			got, err = f.Sprint(tt.args, nil, DefaultMaxStringLen)
		} else {
			got = string(f.Append(nil, tt.args))
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q (%d bytes), %v; want %q (%d bytes)", tt.format, got, len(got), err, tt.want, len(tt.want))
		}
	}
}

func TestDirectives(t *testing.T) {
	f, err := Compile("a%%b%-5d|%*.*s|%#x%lu%.3m%%")
	if err != nil {
		t.Fatal(err)
	}
	L, S := KindLong, KindString
	if want := []Kind{L, L, L, S, L, L, L}; !reflect.DeepEqual(f.Args(), want) {
		t.Errorf("Args() = %v, want %v", f.Args(), want)
	}
	if f.NumArgs() != 7 || f.CheckArgs(7) != nil || f.CheckArgs(6) != ErrArgCount || !f.ReadsMemory() {
		t.Error("NumArgs/CheckArgs/ReadsMemory")
	}
	var verbs []byte
	for _, d := range f.Directives() {
		if d.Verb == 0 {
			verbs = append(verbs, '_')
		} else {
			verbs = append(verbs, d.Verb)
		}
	}
	if string(verbs) != "_d_s_xum_" {
		t.Errorf("directives %q", verbs)
	}
	if d := f.Directives()[1]; d.Flags != FlagLeft|FlagSign || d.Width != 5 || d.Prec != -1 || d.Kind() != KindLong {
		t.Errorf("%%-5d: %+v", d)
	}
	if d := f.Directives()[3]; !d.WidthArg || !d.PrecArg || d.Width != -1 || d.Kind() != KindString {
		t.Errorf("%%*.*s: %+v", d)
	}
	if got := f.String(); got != "a%%b%-5d|%*.*s|%#x%u%.3m%%" {
		t.Errorf("String() = %q", got)
	}
	if Print([]Kind{L}, "", false).ReadsMemory() {
		t.Error("print reads memory")
	}
}

// A run-time error names the argument stap points at, and a failed call
// appends nothing.
func TestRunErrors(t *testing.T) {
	f, _ := Compile("x%d%.*M")
	out, err := f.Exec([]byte("keep"), []Arg{Long(1), Long(4097), Long(0x1000)}, testMemory{}, 0)
	if re, ok := err.(*RunError); !ok || re.Arg != 1 || re.Msg != "4097 is too many bytes for a memory dump" || string(out) != "keep" {
		t.Errorf("got %q, %#v", out, err)
	}
	if got := string(f.Append(nil, []Arg{Long(1), Long(2), Long(0x1000)})); got != "" {
		t.Errorf("Append without memory wrote %q", got)
	}
	// no memory at all: the dump faults at its first byte
	_, err = f.Exec(nil, []Arg{Long(1), Long(2), Long(0x1000)}, nil, 0)
	if re, ok := err.(*RunError); !ok || re.Arg != -1 || re.Msg != "read fault [man error::fault] at 0x1000" {
		t.Errorf("Exec without memory: %#v", err)
	}
}
