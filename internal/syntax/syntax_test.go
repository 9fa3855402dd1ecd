package syntax

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oracleConfig describes the machine the golden files were made on with
// `stap -r /var/tmp/stap-oracle/kernel-tree` (stap 4.8, kernel tree 6.1.192).
func oracleConfig() *Config {
	return &Config{
		KernelRelease: "6.1.192",
		Arch:          "x86_64",
		Runtime:       "kernel",
		Version:       "4.8",
		Privilege:     "stapdev",
		KConfig: map[string]string{
			"CONFIG_64BIT":              "y",
			"CONFIG_HAVE_HW_BREAKPOINT": "y",
			"CONFIG_USER_NS":            "y",
		},
	}
}

// scriptConfig applies a script's `#! guru` and `#! args: ...` header lines.
func scriptConfig(text string) *Config {
	cfg := oracleConfig()
	for _, line := range strings.Split(text, "\n") {
		if line == "#! guru" {
			cfg.Guru = true
		}
		if args, ok := strings.CutPrefix(line, "#! args: "); ok {
			cfg.Args = strings.Fields(args)
		}
	}
	return cfg
}

func TestP1Golden(t *testing.T) {
	files, _ := filepath.Glob("testdata/p1/*.stp")
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".stp"), func(t *testing.T) {
			text := readFile(t, file)
			want := readFile(t, strings.TrimSuffix(file, ".stp")+".p1")
			f, err := Parse(NewSource(name, text), scriptConfig(text))
			if err != nil {
				t.Fatalf("parse failed:\n%s", err.(ErrorList).Report())
			}
			var got strings.Builder
			Fprint(&got, f)
			if got.String() != want {
				t.Errorf("dump differs\n--- got\n%s--- want\n%s", got.String(), want)
			}
		})
	}
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	examplesDir = "/usr/share/systemtap/examples"
	tapsetDir   = "/usr/share/systemtap/tapset"
)

// stapLibraryMacros loads the .stpm macro files of the installed SystemTap.
func stapLibraryMacros(t *testing.T) MacroLibrary {
	var srcs []*Source
	for _, pat := range []string{tapsetDir + "/*.stpm", tapsetDir + "/linux/*.stpm"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			srcs = append(srcs, NewSource(f, readFile(t, f)))
		}
	}
	lib, errs := LoadMacros(srcs...)
	if len(errs) > 0 {
		t.Fatalf("library macros:\n%s", errs.Report())
	}
	return lib
}

// TestDebianExamples parses every example script stap accepts and compares the
// dump with the checksum of stap's own.
func TestDebianExamples(t *testing.T) {
	if _, err := os.Stat(examplesDir); err != nil {
		t.Skipf("skipping: %s is missing (Debian package systemtap-doc)", examplesDir)
	}
	cfg := oracleConfig()
	cfg.Macros = stapLibraryMacros(t)
	for _, line := range strings.Split(readFile(t, "testdata/debian-examples.txt"), "\n") {
		rel, sum, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			path := filepath.Join(examplesDir, rel)
			f, err := Parse(NewSource(path, readFile(t, path)), cfg)
			if err != nil {
				t.Fatalf("parse failed:\n%s", err)
			}
			var dump strings.Builder
			Fprint(&dump, f)
			if got := fmt.Sprintf("%x", sha256.Sum256([]byte(dump.String()))); got != sum {
				t.Errorf("dump differs from stap's:\n%s", dump.String())
			}
		})
	}
}

// chunk is one script of an error-test file with the lines stap printed for it.
type chunk struct {
	name, script string
	want         []string
}

// readChunks splits a file into chunks introduced by `-- NAME --` lines; lines
// starting with "### " hold the expected output.
func readChunks(t testing.TB, file string) []chunk {
	var chunks []chunk
	for _, line := range strings.Split(readFile(t, file), "\n") {
		if name, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(name, " --") {
			chunks = append(chunks, chunk{name: strings.TrimSuffix(name, " --")})
			continue
		}
		if len(chunks) == 0 {
			continue
		}
		c := &chunks[len(chunks)-1]
		if want, ok := strings.CutPrefix(line, "### "); ok {
			c.want = append(c.want, want)
		} else if c.want == nil {
			c.script += line + "\n"
		}
	}
	for i := range chunks {
		chunks[i].script = strings.TrimRight(chunks[i].script, "\n")
	}
	return chunks
}

// diagnostics renders what stap would print for a failed parse, without the
// lines that are not part of the parser's output.
func diagnostics(err error) []string {
	var out string
	switch err := err.(type) {
	case nil:
		return nil
	case ErrorList:
		out = err.Report()
		if n := err.Suppressed(); n > 0 {
			out += fmt.Sprintf("Number of similar error messages suppressed: %d.\n", n)
		}
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestErrors(t *testing.T) {
	files, _ := filepath.Glob("testdata/errors/*.stp")
	n := 0
	for _, file := range files {
		for _, c := range readChunks(t, file) {
			n++
			t.Run(strings.TrimSuffix(filepath.Base(file), ".stp")+"/"+c.name, func(t *testing.T) {
				_, err := Parse(NewSource("<input>", c.script), scriptConfig(c.script))
				got := diagnostics(err)
				if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
					t.Errorf("script:\n%s\n--- got\n%s\n--- want\n%s", c.script,
						strings.Join(got, "\n"), strings.Join(c.want, "\n"))
				}
			})
		}
	}
	if n < 60 {
		t.Errorf("only %d error chunks", n)
	}
}

// FuzzParse checks that no input makes the parser or printer panic or hang.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/p1/*.stp")
	for _, file := range seeds {
		f.Add(readFile(f, file))
	}
	errFiles, _ := filepath.Glob("testdata/errors/*.stp")
	for _, file := range errFiles {
		for _, c := range readChunks(f, file) {
			f.Add(c.script)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg := oracleConfig()
		cfg.Args = []string{"1", "x"}
		ScanNames(NewSource("<input>", text), cfg.Args) // the library index's scan, which must not fail either
		file, err := Parse(NewSource("<input>", text), cfg)
		if err != nil {
			_ = err.(ErrorList).Report()
			return
		}
		FileString(file)
		Walk(file, func(Node) bool { return true })
		FileString(Clone(file))
	})
}

func TestCloneNil(t *testing.T) {
	var x Expr
	if Clone(x) != nil {
		t.Error("Clone(nil Expr) != nil")
	}
	var b *Block
	if Clone(b) != nil {
		t.Error("Clone(nil *Block) != nil")
	}
}

// TestNestingTooDeep: a pathological nesting is refused at the token that
// goes one level too deep, with its file, line and column.
func TestNestingTooDeep(t *testing.T) {
	text := "probe begin { x = " + strings.Repeat("(", maxNesting+10) + "1" + strings.Repeat(")", maxNesting+10) + " }"
	_, err := Parse(NewSource("deep.stp", text), DefaultConfig())
	var errs ErrorList
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("got %v, want one parse error", err)
	}
	if want := "deep.stp:1:"; !strings.Contains(errs.Report(), "at: operator '(' at "+want) {
		t.Errorf("report lacks the position of the '(':\n%.300s", errs.Report())
	}
}
