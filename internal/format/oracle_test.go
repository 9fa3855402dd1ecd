package format

import (
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPrintfOracle replays testdata/printf.txt against SystemTap itself when
// BPFTAP_STAP_ORACLE names the stap-oracle tool: cases tagged "oracle" must
// print the same bytes under SystemTap's BPF runtime, and format errors (tag
// "p1") must be the ones `stap -p1` reports. Cases tagged "module" are run too
// and only logged where the BPF runtime differs from the module runtime.
func TestPrintfOracle(t *testing.T) {
	oracle := os.Getenv("BPFTAP_STAP_ORACLE")
	if oracle == "" {
		t.Skip("set BPFTAP_STAP_ORACLE to the stap-oracle tool to compare with SystemTap")
	}
	for _, c := range readPrintfCases(t) {
		call := "printf(" + stapCallArgs(c) + ")"
		switch c.tag {
		case "oracle", "module":
			out, err := exec.Command(oracle, "-e", "probe begin { "+call+"; exit() }").Output()
			if err != nil {
				t.Errorf("printf.txt:%d: %s: %v", c.line, call, err)
				continue
			}
			if string(out) != c.want {
				if c.tag == "oracle" {
					t.Errorf("printf.txt:%d: %s: stap printed %q, want %q", c.line, call, out, c.want)
				} else {
					t.Logf("printf.txt:%d: %s: BPF runtime prints %q, module runtime %q", c.line, call, out, c.want)
				}
			}
		case "p1":
			out, _ := exec.Command("stap", "-r", "/var/tmp/stap-oracle/kernel-tree", "-p1", "-e", "probe begin { "+call+" }").CombinedOutput()
			got := ""
			if i := strings.Index(string(out), "parse error: "); i >= 0 {
				got = strings.SplitN(string(out[i+len("parse error: "):]), "\n", 2)[0]
			}
			if got != c.err {
				t.Errorf("printf.txt:%d: %s: stap -p1 says %q, want %q", c.line, call, got, c.err)
			}
		}
	}
}

// stapCallArgs writes a case's format and arguments as SystemTap source.
func stapCallArgs(c printfCase) string {
	parts := []string{stapString(c.format)}
	for i, a := range c.args {
		switch {
		case c.kinds[i] == KindString:
			parts = append(parts, stapString(a.Str))
		case a.Int == math.MinInt64:
			parts = append(parts, "(-9223372036854775807-1)")
		default:
			parts = append(parts, strconv.FormatInt(a.Int, 10))
		}
	}
	return strings.Join(parts, ", ")
}

// stapString quotes s as a SystemTap string literal, with octal escapes for
// everything but printable ASCII.
func stapString(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case isPrint(c):
			b = append(b, c)
		default:
			b = appendOctal(append(b, '\\'), c)
		}
	}
	return string(append(b, '"'))
}
