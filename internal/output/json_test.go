package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// everyEvent hands w one of each event, with every optional field.
func everyEvent(t *testing.T, w Writer) {
	t.Helper()
	src := syntax.NewSource("x.stp", "probe begin { x = 1 / 0 }\n")
	at := syntax.Pos{Src: src, Line: 1, Col: 20}
	if err := w.Print(mustCompile(t, "%s=%d\n"), []format.Arg{str("a\"\\\x01\xff€"), long(1)}, nil); err != nil {
		t.Fatal(err)
	}
	logHist := format.NewStat(format.LogHist, 0)
	logHist.Add(3)
	logHist.Add(-1)
	lin, _ := format.LinearHist(0, 10, 5)
	linHist := format.NewStat(lin, 0)
	for _, v := range []int64{-3, 4, 99} {
		linHist.Add(v)
	}
	for _, s := range []*format.Stat{logHist, linHist} {
		if err := w.Hist(s); err != nil {
			t.Fatal(err)
		}
	}
	w.Log("message")
	for _, c := range globalCases {
		w.Global(&c.g)
	}
	if err := w.Print(format.Print([]format.Kind{format.KindLong}, "", true), []format.Arg{long(-2)}, nil); err != nil {
		t.Fatal(err)
	}
	w.Diagnostic(&Diagnostic{Severity: Error, Kind: KindRuntime, Msg: "division by 0", Near: "operator '/'", At: at})
	w.Diagnostic(&Diagnostic{Severity: Error, Kind: KindKernel, Msg: "cannot attach", At: at, Source: true})
	w.Diagnostic(&Diagnostic{Severity: Error, Kind: KindParse, Msg: "expected probe", At: at, Hint: "write `probe begin { ... }`"})
	w.Diagnostic(&Diagnostic{Severity: Warning, Kind: KindScript, Msg: "careful"})
	w.Diagnostic(&Diagnostic{Severity: Warning, Kind: KindSemantic, Msg: "elided", Near: "keyword", At: at})
	w.Loss(&Loss{What: "transport", Count: 7, Option: "-s", Limit: "buffer size", Size: 8})
	w.Summary(&Summary{Errors: 1, Skipped: 2, Reentrancy: true})
	w.HitReport([]Hit{{Probe: "begin", At: at, Hits: 1, Min: 2, Avg: 3, Max: 4, Variance: 5, From: "begin", Index: 0}})
	w.Attached(&Attached{Programs: 3, Elapsed: "1usr/2sys/3real ms"})
	w.System([]byte("from a command\n"))
	if err := w.SwitchFile(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// objects parses every line of out as a JSON object.
func objects(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var objs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var o map[string]any
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		objs = append(objs, o)
	}
	return objs
}

// docFields reads docs/json-output.md: for each event type (and "stat",
// the statistics' section) its fields, and which are optional.
func docFields(t *testing.T) map[string]map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../../docs/json-output.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^### `([a-z_]+)`$")
	row := regexp.MustCompile("^\\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\|")
	fields := map[string]map[string]bool{}
	section := ""
	for _, line := range strings.Split(string(doc), "\n") {
		switch m := heading.FindStringSubmatch(line); {
		case m != nil:
			section = m[1]
			fields[section] = map[string]bool{}
		case line == "## Statistics":
			section = "stat"
			fields[section] = map[string]bool{}
		case section != "":
			r := row.FindStringSubmatch(line)
			if r == nil {
				continue
			}
			for _, f := range strings.Split(r[1], ", ") {
				fields[section][strings.Trim(f, "`")] = strings.Contains(line, "*optional*")
			}
		}
	}
	return fields
}

// TestJSONSchema checks the writer against its documentation: every line
// is a JSON object, every documented field is present (an optional one in
// at least one object of its type, as everyEvent gives each), and nothing
// undocumented is written.
func TestJSONSchema(t *testing.T) {
	var out bytes.Buffer
	everyEvent(t, NewJSON(&out))
	doc := docFields(t)
	if len(doc) < 13 {
		t.Fatalf("the documentation lists %d sections", len(doc))
	}
	seen := map[string]map[string]bool{}
	check := func(section string, o map[string]any) {
		want, ok := doc[section]
		if !ok {
			t.Errorf("undocumented event %q", section)
			return
		}
		if seen[section] == nil {
			seen[section] = map[string]bool{}
		}
		for f := range o {
			if _, ok := want[f]; !ok {
				t.Errorf("%s: undocumented field %q in %v", section, f, o)
			}
			seen[section][f] = true
		}
		for f, optional := range want {
			if _, ok := o[f]; !ok && !optional {
				t.Errorf("%s: no field %q in %v", section, f, o)
			}
		}
	}
	for _, o := range objects(t, out.Bytes()) {
		typ, _ := o["type"].(string)
		check(typ, o)
		for _, s := range stats(o) {
			check("stat", s)
		}
	}
	for section, want := range doc {
		for f := range want {
			if !seen[section][f] {
				t.Errorf("%s: documented field %q never written", section, f)
			}
		}
	}
}

// stats returns the statistics an object holds.
func stats(o map[string]any) []map[string]any {
	if o["type"] == "hist" {
		return []map[string]any{o["data"].(map[string]any)}
	}
	var list []map[string]any
	elems, _ := o["elements"].([]any)
	for _, e := range elems {
		if s, ok := e.(map[string]any)["stat"].(map[string]any); ok {
			list = append(list, s)
		}
	}
	return list
}

// The values of the objects are the events' own: what Text would write
// for a print call, positions, statistics and buckets.
func TestJSONValues(t *testing.T) {
	var out, text bytes.Buffer
	everyEvent(t, NewJSON(&out))
	objs := objects(t, out.Bytes())
	tw := NewText(&text, &bytes.Buffer{})
	tw.Print(mustCompile(t, "%s=%d\n"), []format.Arg{str("a\"\\\x01\xff€"), long(1)}, nil)
	tw.Flush()
	if got, want := objs[0]["data"], validUTF8(text.String()); got != want {
		t.Errorf("print data %q, text %q", got, want)
	}
	byType := map[string][]map[string]any{}
	for _, o := range objs {
		byType[o["type"].(string)] = append(byType[o["type"].(string)], o)
	}
	lin := byType["hist"][1]["data"].(map[string]any)
	buckets, _ := json.Marshal(lin["buckets"])
	if string(buckets) != `[{"below":true,"count":1,"value":0},{"count":1,"value":0},{"above":true,"count":1,"value":10}]` {
		t.Errorf("linear buckets %s", buckets)
	}
	e := byType["error"][0]
	if e["kind"] != "runtime" || e["msg"] != "division by 0" || e["near"] != "operator '/'" || e["file"] != "x.stp" || e["line"] != 1.0 || e["column"] != 20.0 {
		t.Errorf("error %v", e)
	}
	stat := byType["global"][7]["elements"].([]any)[0].(map[string]any)["stat"]
	if got, _ := json.Marshal(stat); string(got) != `{"avg":3,"count":3,"max":6,"min":1,"sum":9}` {
		t.Errorf("statistic %s", got)
	}
	var types []string
	for typ := range byType {
		types = append(types, typ)
	}
	sort.Strings(types)
	if !slices.Equal(types, []string{"attached_probes", "error", "global", "hist", "log", "lost", "print", "probe_hits", "summary", "switch_file", "system", "warning"}) {
		t.Errorf("types %v", types)
	}
}

// A print call that fails writes nothing; an empty histogram fails as in
// Text.
func TestJSONErrors(t *testing.T) {
	var out bytes.Buffer
	w := NewJSON(&out)
	if err := w.Print(mustCompile(t, "b%m"), []format.Arg{long(0x1000)}, nil); err == nil {
		t.Error("%m without memory printed")
	}
	if err := w.Hist(format.NewStat(format.LogHist, 0)); !errors.Is(err, format.ErrEmpty) {
		t.Errorf("empty histogram: %v", err)
	}
	w.Flush()
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}

// Every byte string comes out as a JSON string encoding/json reads back:
// the same text where it is UTF-8, byte for byte as quotedRuneByRune
// writes it; quoted by appendQuoted, and as a print record's data and
// argument (whole, past a NUL byte that ends the data).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\t\x00\x7f", "\xff\xfe", "é€𝄞", "\xe2\x82", "x\n\xff\n"} {
		f.Add(s)
	}
	printS, err := format.Compile("%s")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := validUTF8(s)
		var back string
		if b := appendQuoted(nil, s); json.Unmarshal(b, &back) != nil || back != want {
			t.Errorf("%q → %s → %q", s, b, back)
		}
		if b, want := appendQuoted(nil, s), quotedRuneByRune(s); string(b) != want {
			t.Errorf("%q quoted %s, want %s", s, b, want)
		}
		var out bytes.Buffer
		w := NewJSON(&out)
		w.Print(printS, []format.Arg{str("[" + s + "]")}, nil)
		w.Flush()
		var record struct {
			Data string
			Args []string
		}
		printed, _, _ := strings.Cut("["+s+"]", "\x00") // %s stops at a NUL
		if err := json.Unmarshal(out.Bytes(), &record); err != nil || record.Data != validUTF8(printed) {
			t.Errorf("%q → %s → %q, %v", s, out.Bytes(), record.Data, err)
		}
		if len(record.Args) != 1 || record.Args[0] != validUTF8("["+s+"]") {
			t.Errorf("%q → args %q", s, record.Args)
		}
	})
}

// quotedRuneByRune is s as a JSON string, the way appendQuoted writes it,
// made a rune at a time: what needs no escape as it is, the short escapes
// where JSON has them, \u00XX for the other control characters and DEL,
// \ufffd for a byte that is not UTF-8.
func quotedRuneByRune(s string) string {
	short := map[rune]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\t': `\t`, '\r': `\r`}
	b := []byte{'"'}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case short[r] != "":
			b = append(b, short[r]...)
		case r < ' ' || r == 0x7f:
			b = fmt.Appendf(b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(append(b, '"'))
}

// validUTF8 is s with every byte that is not UTF-8 replaced by U+FFFD.
func validUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// A print record carries the call's format string (printf's only) and its
// arguments as JSON values, by the kind the format reads each as: strings
// with quotes, control characters and bytes that are not UTF-8 come back
// as the text has them, numbers exactly (the extremes of a long too).
func TestJSONPrintArgs(t *testing.T) {
	n := func(s string) any { return json.Number(s) }
	for _, c := range []struct {
		name   string
		f      *format.Format
		args   []format.Arg
		format any   // nil: no "format"
		want   []any // the args, as encoding/json reads them (numbers as json.Number)
	}{
		{"strings", mustCompile(t, "%s|%s|%s\n"), []format.Arg{str(`say "hi" \ there`), str("tab\tnl\nnul\x01del\x7f"), str("bad\xff\xfe€")},
			"%s|%s|%s\n", []any{`say "hi" \ there`, "tab\tnl\nnul\x01del\x7f", "bad\ufffd\ufffd€"}},
		{"numbers", mustCompile(t, "%d %x %d %d %c\n"), []format.Arg{long(-1), long(255), long(math.MinInt64), long(math.MaxInt64), long(65)},
			"%d %x %d %d %c\n", []any{n("-1"), n("255"), n("-9223372036854775808"), n("9223372036854775807"), n("65")}},
		{"star width", mustCompile(t, "[%*d|%.*s]"), []format.Arg{long(5), long(42), long(2), str("abc")},
			"[%*d|%.*s]", []any{n("5"), n("42"), n("2"), "abc"}},
		{"%s of a long reads its string", mustCompile(t, "%s"), []format.Arg{long(7)}, "%s", []any{""}},
		{"missing arguments", mustCompile(t, "%d %s"), nil, "%d %s", []any{n("0"), ""}},
		{"print of several", format.Print([]format.Kind{format.KindLong, format.KindString, format.KindLong}, "", false),
			[]format.Arg{long(-3), str("x"), long(1 << 40)}, nil, []any{n("-3"), "x", n("1099511627776")}},
		{"printd", format.Print([]format.Kind{format.KindString, format.KindString}, ", ", true),
			[]format.Arg{str("a"), str("b")}, nil, []any{"a", "b"}},
		{"print_char", format.Char(), []format.Arg{long('z')}, nil, []any{n("122")}},
		{"no arguments", mustCompile(t, "hello\n"), nil, "hello\n", []any{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, text bytes.Buffer
			w := NewJSON(&out)
			if err := w.Print(c.f, c.args, nil); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			tw := NewText(&text, io.Discard)
			tw.Print(c.f, c.args, nil)
			tw.Flush()
			dec := json.NewDecoder(&out)
			dec.UseNumber()
			var rec map[string]any
			if err := dec.Decode(&rec); err != nil {
				t.Fatalf("%s: %v", out.String(), err)
			}
			if rec["format"] != c.format {
				t.Errorf("format %#v, want %#v", rec["format"], c.format)
			}
			if args, _ := rec["args"].([]any); !slices.Equal(args, c.want) {
				t.Errorf("args %#v, want %#v", rec["args"], c.want)
			}
			if rec["data"] != validUTF8(text.String()) {
				t.Errorf("data %q, text %q", rec["data"], text.String())
			}
		})
	}
}

// Records of different formats in a row each get their own format (the
// start of a record is kept for the last format only).
func TestJSONPrintFormats(t *testing.T) {
	var out bytes.Buffer
	w := NewJSON(&out)
	a, b := mustCompile(t, "a%d\n"), mustCompile(t, "b%s\n")
	p := format.Print([]format.Kind{format.KindLong}, "", false)
	for _, f := range []*format.Format{a, b, a, p, a} {
		w.Print(f, []format.Arg{long(1)}, nil)
	}
	w.Flush()
	var got []any
	for _, o := range objects(t, out.Bytes()) {
		got = append(got, o["format"])
	}
	if want := []any{"a%d\n", "b%s\n", "a%d\n", nil, "a%d\n"}; !slices.Equal(got, want) {
		t.Errorf("formats %v, want %v", got, want)
	}
}

// appendInt writes what strconv does, at every length and both extremes.
func TestAppendInt(t *testing.T) {
	values := []int64{0, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		values = append(values, p-1, p, p+1, -p, -p+1, 3*p, -7*p)
	}
	for _, v := range values {
		if got, want := string(appendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Errorf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
}
