package output

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

const (
	tLong   = syntax.TypeLong
	tString = syntax.TypeString
	tStats  = syntax.TypeStats
)

func stat(vals ...int64) *format.Stat {
	s := format.NewStat(nil, 0)
	for _, v := range vals {
		s.Add(v)
	}
	return s
}

func long(v int64) format.Arg          { return format.Long(v) }
func str(s string) format.Arg          { return format.String(s) }
func key(k ...format.Arg) []format.Arg { return k }

// The display of globals, as stap's synthesized end probes print them.
var globalCases = []struct {
	name string
	g    Global
	want string
}{
	{"long", Global{Name: "g", Type: tLong, Elements: []Element{{Value: long(1)}}}, "g=1\n"},
	{"negative", Global{Name: "g", Type: tLong, Elements: []Element{{Value: long(math.MinInt64)}}},
		"g=-9223372036854775808\n"},
	{"string", Global{Name: "s", Type: tString, Elements: []Element{{Value: str(`a "b"`)}}}, "s=\"a \"b\"\"\n"},
	{"string_nul", Global{Name: "s", Type: tString, Elements: []Element{{Value: str("ab\x00cd")}}}, "s=\"ab\"\n"},
	{"empty_string", Global{Name: "s", Type: tString, Elements: []Element{{}}}, "s=\"\"\n"},
	{"empty_stat", Global{Name: "t", Type: tStats, Elements: []Element{{Stat: stat()}}}, "t @count=0x0\n"},
	{"nil_stat", Global{Name: "t", Type: tStats, Elements: []Element{{}}}, "t @count=0x0\n"},
	{"stat", Global{Name: "t", Type: tStats, Elements: []Element{{Stat: stat(1, 2, 6)}}},
		"t @count=3 @min=1 @max=6 @sum=9 @avg=3\n"},
	{"array", Global{Name: "a", Type: tLong, Keys: []syntax.Type{tString}, Elements: []Element{
		{Key: key(str("x")), Value: long(2)}, {Key: key(str("y")), Value: long(1)}}},
		"a[\"x\"]=2\na[\"y\"]=1\n"},
	{"empty_array", Global{Name: "a", Type: tLong, Keys: []syntax.Type{tLong}}, ""},
	{"mixed_keys", Global{Name: "a", Type: tString, Keys: []syntax.Type{tLong, tString, tLong}, Elements: []Element{
		{Key: key(long(-1), str("k"), long(7)), Value: str("v")}}},
		"a[-1,\"k\",7]=\"v\"\n"},
	{"stats_array", Global{Name: "h", Type: tStats, Keys: []syntax.Type{tLong}, Elements: []Element{
		{Key: key(long(1)), Stat: stat(4, -2)}, {Key: key(long(0)), Stat: stat()}}},
		"h[1] @count=2 @min=-2 @max=4 @sum=2 @avg=1\nh[0] @count=0 @min=0 @max=0 @sum=0 @avg=0\n"},
	{"cut", Global{Name: "a", Type: tString, Keys: []syntax.Type{tString}, Elements: []Element{
		{Key: key(str(strings.Repeat("k", 5000))), Value: str(strings.Repeat("v", 5000))}}},
		"a[\"" + strings.Repeat("k", 5000) + "\"]=\"" + strings.Repeat("v", format.BufferSize-5007)},
}

func TestTextGlobal(t *testing.T) {
	for _, c := range globalCases {
		var out bytes.Buffer
		w := NewText(&out, io.Discard)
		w.Global(&c.g)
		if out.Len() != 0 {
			t.Errorf("%s: written before Flush: %q", c.name, out.String())
		}
		if err := w.Flush(); err != nil || out.String() != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, out.String(), err, c.want)
		}
	}
}

// TestTextGlobalIsPrintf renders every case again as the end probes stap
// synthesizes do, one printf per element, and compares.
func TestTextGlobalIsPrintf(t *testing.T) {
	for _, c := range globalCases {
		var want []byte
		for _, e := range c.g.Elements {
			f, args := displayPrintf(&c.g, e)
			out, err := mustCompile(t, f).Exec(want, args, nil, format.BufferSize)
			if err != nil {
				t.Fatalf("%s: %q: %v", c.name, f, err)
			}
			want = out
		}
		var out bytes.Buffer
		w := NewText(&out, io.Discard)
		w.Global(&c.g)
		w.Flush()
		if out.String() != string(want) {
			t.Errorf("%s: got %q, printf prints %q", c.name, out.String(), want)
		}
	}
}

// displayPrintf is the printf of stap's display code for element e of g.
func displayPrintf(g *Global, e Element) (string, []format.Arg) {
	f, args := g.Name, append([]format.Arg(nil), e.Key...)
	if g.Keys != nil {
		var keys []string
		for _, k := range g.Keys {
			keys = append(keys, map[syntax.Type]string{tLong: "%#d", tString: `"%#s"`}[k])
		}
		f += "[" + strings.Join(keys, ",") + "]"
	}
	switch {
	case g.Type == tLong:
		return f + "=%d\n", append(args, e.Value)
	case g.Type == tString:
		return f + `="%#s"` + "\n", append(args, e.Value)
	case g.Keys == nil && (e.Stat == nil || e.Stat.Count == 0):
		return f + " @count=0x0\n", args
	}
	for _, op := range statOps {
		v, _ := e.Stat.Get(op)
		f += " @" + op + "=%#d"
		args = append(args, long(v))
	}
	return f + "\n", args
}

func TestTextPrint(t *testing.T) {
	var out bytes.Buffer
	w := NewText(&out, io.Discard)
	f := mustCompile(t, "%s=%5d|%c\n")
	if err := w.Print(f, []format.Arg{str("x"), long(42), long('A')}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Print(format.Print([]format.Kind{format.KindLong, format.KindString}, ",", true), []format.Arg{long(-1), str("b")}, nil); err != nil {
		t.Fatal(err)
	}
	// a failed call writes nothing and names the argument at fault
	err := w.Print(mustCompile(t, "a%d%.*M"), []format.Arg{long(1), long(4097), long(0)}, nil)
	var re *format.RunError
	if !errors.As(err, &re) || re.Arg != 1 {
		t.Errorf("too large a dump: %v", err)
	}
	// there is no memory to dump
	err = w.Print(mustCompile(t, "b%m"), []format.Arg{long(0x1000)}, nil)
	if err == nil || err.Error() != "read fault [man error::fault] at 0x1000" {
		t.Errorf("%%m: %v", err)
	}
	// printf's room: one call writes at most BufferSize bytes
	w.Print(mustCompile(t, "%9000d\n"), []format.Arg{long(7)}, nil)
	w.Flush()
	want := "x=   42|A\n-1,b\n" + strings.Repeat(" ", format.BufferSize-1) + "7"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestTextHist(t *testing.T) {
	s := format.NewStat(format.LogHist, 0)
	for _, v := range []int64{0, 1, 1, 5, 100} {
		s.Add(v)
	}
	want, _ := s.AppendHist(nil)
	var out bytes.Buffer
	w := NewText(&out, io.Discard)
	if err := w.Hist(s); err != nil {
		t.Fatal(err)
	}
	if err := w.Hist(format.NewStat(format.LogHist, 0)); !errors.Is(err, format.ErrEmpty) {
		t.Errorf("empty histogram: %v", err)
	}
	if err := w.Hist(stat(1)); err == nil {
		t.Error("a statistic without histogram rendered")
	}
	w.Flush()
	if out.String() != string(want) {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestTextLog(t *testing.T) {
	var out bytes.Buffer
	w := NewText(&out, io.Discard)
	w.Log("one")
	w.Log("")
	w.Flush()
	if out.String() != "one\n\n" {
		t.Errorf("got %q", out.String())
	}
}

// countingWriter records the size of every write and fails when told to.
type countingWriter struct {
	writes []int
	fail   error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return len(p), c.fail
}

// Text writes by itself once FlushSize bytes are buffered.
func TestTextFlushesWhenFull(t *testing.T) {
	cw := &countingWriter{}
	w := NewText(cw, io.Discard)
	line := strings.Repeat("x", 1023)
	for range FlushSize/1024 - 1 {
		w.Log(line)
	}
	if len(cw.writes) != 0 {
		t.Fatalf("wrote %v before %d bytes were buffered", cw.writes, FlushSize)
	}
	w.Log(line)
	w.Log("after")
	if len(cw.writes) != 1 || cw.writes[0] != FlushSize {
		t.Fatalf("writes %v, want one of %d bytes", cw.writes, FlushSize)
	}
	w.Flush()
	w.Flush() // nothing left: no empty write
	if len(cw.writes) != 2 || cw.writes[1] != len("after\n") {
		t.Errorf("writes %v", cw.writes)
	}
}

// The error of an automatic flush comes out of the next Flush, once.
func TestTextFlushError(t *testing.T) {
	broken := errors.New("broken pipe")
	cw := &countingWriter{fail: broken}
	w := NewText(cw, io.Discard)
	w.Log(strings.Repeat("x", FlushSize))
	cw.fail = nil
	w.Log("more")
	if err := w.Flush(); !errors.Is(err, broken) {
		t.Errorf("Flush: %v, want %v", err, broken)
	}
	w.Log("again")
	if err := w.Flush(); err != nil {
		t.Errorf("second Flush: %v", err)
	}
}

func mustCompile(t *testing.T, s string) *format.Format {
	t.Helper()
	f, err := format.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
