package bpfgen_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/regexdfa"
	"github.com/bpftap/bpftap/internal/regexdfa/regexcases"

	"github.com/bpftap/bpftap/internal/kernelside"
	"golang.org/x/sys/unix"
)

// TestRegexKernel runs the patterns of package regexdfa's cases in BPF, a
// few to a program, on every subject, and compares each answer with Go's
// regexp, which the interpreter runs.
func TestRegexKernel(t *testing.T) {
	requireBPF(t)
	patterns, subjects := regexCases(t)
	const perProgram = 6
	for i := 0; i < len(patterns); i += perProgram {
		chunk := patterns[i:min(i+perProgram, len(patterns))]
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var exprs []string
			for _, p := range chunk {
				exprs = append(exprs, "s =~ "+stapQuote(p), "s !~ "+stapQuote(p))
			}
			compareAnswers(t, subjects, exprs, func(s string) (answers []bool) {
				for _, p := range chunk {
					m := regexp.MustCompile("(?s)" + p).MatchString(s)
					answers = append(answers, m, !m)
				}
				return answers
			})
		})
	}
}

// TestIsinstrKernel runs isinstr(s, "literal") in kernel probes
// (strfuncs.go) on the regular expressions' subjects, with literals full
// of the characters patterns treat specially, and compares each answer
// with strings.Contains, which the interpreter runs.
func TestIsinstrKernel(t *testing.T) {
	requireBPF(t)
	_, subjects := regexCases(t)
	literals := []string{"", "a", "ab", "a.b", ".*", "(", "[a-z]", "\\", "^a", "b$", "a|b", "\u00e9", "\n", "aaa"}
	var exprs []string
	for _, l := range literals {
		exprs = append(exprs, fmt.Sprintf("isinstr(s, %s)", stapQuote(l)))
	}
	compareAnswers(t, subjects, exprs, func(s string) (answers []bool) {
		for _, l := range literals {
			answers = append(answers, strings.Contains(s, l))
		}
		return answers
	})
}

// compareAnswers runs the expressions exprs of a string s in one program,
// once for each subject (one subject per getppid call of the child, which
// makes them one after the other), and compares their values with the
// answers want gives.
func compareAnswers(t *testing.T, subjects, exprs []string, want func(string) []bool) {
	t.Helper()
	var script, expected strings.Builder
	fmt.Fprintf(&script, "global n\nprobe kernel.trace(\"raw_syscalls:sys_enter\") {\n  if ($id != %d || n >= %d) next\n  s = ",
		unix.SYS_GETPPID, len(subjects))
	for k, s := range subjects {
		if k < len(subjects)-1 {
			fmt.Fprintf(&script, "n == %d ? %s : ", k, stapQuote(s))
		} else {
			script.WriteString(stapQuote(s) + "\n")
		}
	}
	fmt.Fprintf(&script, "  printf(\"%%d%s\\n\", n, %s)\n  n++\n}\n", strings.Repeat(" %d", len(exprs)), strings.Join(exprs, ", "))
	for k, s := range subjects {
		fmt.Fprint(&expected, k)
		for _, a := range want(s) {
			fmt.Fprintf(&expected, " %d", b2i(a))
		}
		expected.WriteByte('\n')
	}
	prog := elaborate(t, script.String())
	c := getppidChild(t, len(subjects))
	s := compile(t, prog, kernelside.Config{Target: true}, c)
	defer s.Close()
	var out recorder
	start(t, s, c, &out)
	got := string(out.out)
	if got == expected.String() {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(expected.String(), "\n")
	for k := range min(len(gotLines), len(wantLines)) {
		if gotLines[k] != wantLines[k] {
			t.Errorf("subject %q, %s:\nkernel %s\nwant   %s", subjects[k], exprs, gotLines[k], wantLines[k])
		}
	}
	if len(gotLines) != len(wantLines) {
		t.Errorf("%d lines, want %d:\n%s", len(gotLines), len(wantLines), got)
	}
}

// TestRegexTooLarge checks the error for a pattern whose automaton is too
// large for a kernel probe.
func TestRegexTooLarge(t *testing.T) {
	err := compileError(t, `probe begin { println(execname() =~ "(a|b)*a(a|b){12}") }`)
	want := `<input>:1:37: regular expression needs more than 500 DFA states in a kernel probe`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// regexCases reads the patterns of package regexdfa's cases but those
// SystemTap's grammar refuses ((?i), \x{FFFD}), which pass 2 rejects.
func regexCases(t *testing.T) (patterns, subjects []string) {
	all, subjects, err := regexcases.Load("../regexdfa/testdata/cases.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if quoted := stapQuote(p); regexdfa.CheckStapSyntax(quoted[1:len(quoted)-1]) == nil {
			patterns = append(patterns, p)
		}
	}
	return patterns, subjects
}

// stapQuote writes s as a script string literal, bytes outside printable
// ASCII as octal escapes.
func stapQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= ' ' && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestRegexMany checks that a probe with many matches of a long string
// passes the verifier, which checks each match's loop once.
func TestRegexMany(t *testing.T) {
	requireBPF(t)
	var script strings.Builder
	script.WriteString("global n\nprobe begin {\n  if (n++) next\n  s = execname()\n")
	for i := range 60 {
		fmt.Fprintf(&script, "  if (s =~ \"^x%d|é[a-z]+x$\") println(%d)\n", i, i)
	}
	script.WriteString("  println(s =~ \"^bpfgen.test$\", s !~ \"^bpfgen.test$\")\n}\n")
	if got := runScript(t, script.String(), getppidChild(t, 1)); got != "10\n" {
		t.Errorf("output %q, want %q", got, "10\n")
	}
}
