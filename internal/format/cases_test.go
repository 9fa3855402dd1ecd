package format

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A printfCase is one line of testdata/printf.txt.
type printfCase struct {
	line   int
	format string
	args   []Arg
	kinds  []Kind
	want   string
	err    string // expected error message, if any
	tag    string
}

// testMemory holds "ABCDEFGH...", repeating, at 0x1000..0x1fff, for both the
// kernel and the process.
type testMemory struct{}

func (testMemory) ReadMemory(addr uint64, p []byte, user bool) (int, error) {
	for i := range p {
		a := addr + uint64(i)
		if a < 0x1000 || a >= 0x2000 {
			return i, nil
		}
		p[i] = 'A' + byte((a-0x1000)%26)
	}
	return len(p), nil
}

func readPrintfCases(t testing.TB) []printfCase {
	f, err := os.Open("testdata/printf.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []printfCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		c, err := parseCase(line)
		if err != nil {
			t.Fatalf("printf.txt:%d: %v", n, err)
		}
		c.line = n
		cases = append(cases, c)
	}
	return cases
}

// parseCase reads `FORMAT ARGS... => EXPECTED [TAG]`.
func parseCase(line string) (printfCase, error) {
	var c printfCase
	toks, err := tokens(line)
	if err != nil {
		return c, err
	}
	arrow := -1
	for i, tk := range toks {
		if tk == "=>" {
			arrow = i
		}
	}
	if arrow < 1 || arrow+1 >= len(toks) {
		return c, fmt.Errorf("want FORMAT ARGS... => EXPECTED")
	}
	if c.format, err = strconv.Unquote(toks[0]); err != nil {
		return c, err
	}
	for _, tk := range toks[1:arrow] {
		a, err := parseArg(tk)
		if err != nil {
			return c, err
		}
		kind := KindLong
		if tk[0] == '"' {
			kind = KindString
		}
		c.args = append(c.args, a)
		c.kinds = append(c.kinds, kind)
	}
	rest := toks[arrow+1:]
	if rest[0] == "error" {
		if len(rest) < 2 {
			return c, fmt.Errorf("error needs a message")
		}
		c.err, err = strconv.Unquote(rest[1])
		rest = rest[2:]
	} else {
		c.want, err = strconv.Unquote(rest[0])
		rest = rest[1:]
	}
	if len(rest) > 0 {
		c.tag = rest[0]
	}
	return c, err
}

func parseArg(tk string) (Arg, error) {
	if tk[0] == '"' {
		s, err := strconv.Unquote(tk)
		return String(s), err
	}
	v, err := strconv.ParseInt(tk, 0, 64)
	return Long(v), err
}

// tokens splits a line into Go-quoted strings and space-separated words.
func tokens(line string) ([]string, error) {
	var toks []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] != '"' {
			end := strings.IndexByte(line, ' ')
			if end < 0 {
				end = len(line)
			}
			toks = append(toks, line[:end])
			line = line[end:]
			continue
		}
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, err
		}
		toks = append(toks, q)
		line = line[len(q):]
	}
	return toks, nil
}

func TestPrintfCases(t *testing.T) {
	cases := readPrintfCases(t)
	if len(cases) < 120 {
		t.Errorf("only %d printf cases", len(cases))
	}
	for _, c := range cases {
		got, err := runCase(c)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("printf.txt:%d: %q: got %q, %v; want error %q", c.line, c.format, got, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("printf.txt:%d: %q: %v", c.line, c.format, err)
		case c.err == "" && got != c.want:
			t.Errorf("printf.txt:%d: %q: got %q, want %q", c.line, c.format, got, c.want)
		}
	}
}

func runCase(c printfCase) (string, error) {
	f, err := Compile(c.format)
	if err != nil {
		return "", err
	}
	if err := f.CheckArgs(len(c.args)); err != nil {
		return "", err
	}
	for i, k := range f.Args() {
		if k != c.kinds[i] {
			return "", fmt.Errorf("argument %d is a %v, want a %v", i+1, c.kinds[i], k)
		}
	}
	out, err := f.Exec([]byte("prefix:"), c.args, testMemory{}, BufferSize)
	if err != nil {
		if string(out) != "prefix:" {
			return "", fmt.Errorf("failed call wrote %q", out)
		}
		return "", err
	}
	if !strings.HasPrefix(string(out), "prefix:") {
		return "", fmt.Errorf("output lost dst: %q", out)
	}
	return string(out[len("prefix:"):]), nil
}
