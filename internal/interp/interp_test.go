package interp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// A test case in testdata/*.txt:
//
//	=== NAME
//	SCRIPT (one or more lines)
//	--- define NAME=VALUE        (optional, repeatable: -D settings)
//	--- global NAME=VALUE        (optional, repeatable: -G settings)
//	--- stdout                   (expected output; "--- stdout -n": no final newline)
//	LINES
//	--- stderr
//	LINES
//	--- status N                 (expected exit status, 0 if absent)
//	--- guru                     (run as -g does)
//	--- storage hash             (globals in a fake of BPF maps: hash order,
//	                              per-CPU longs and statistics)
//
// Scripts run against a clock fixed at 2009-02-13 23:31:30 UTC (1234567890).
type testCase struct {
	name, file     string
	script         string
	defines        []string
	overrides      []string
	stdout, stderr string
	status         int
	hashStorage    bool
	guru           bool
}

var fixedNow = time.Unix(1234567890, 123456789).UTC()

func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	lib := libraryFiles(t)
	for _, file := range files {
		for _, c := range readCases(t, file) {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".txt")+"/"+c.name, func(t *testing.T) {
				// hash storage iterates in a random order: try several
				seeds := []uint64{0}
				if c.hashStorage {
					seeds = []uint64{1, 2, 3, 4, 5}
				}
				for _, seed := range seeds {
					stdout, stderr, status := runScript(t, c, lib, seed)
					if stdout != c.stdout {
						t.Errorf("%s (seed %d): stdout:\n%s\nwant:\n%s", c.file, seed, stdout, c.stdout)
					}
					if stderr != c.stderr {
						t.Errorf("%s (seed %d): stderr:\n%s\nwant:\n%s", c.file, seed, stderr, c.stderr)
					}
					if status != c.status {
						t.Errorf("%s (seed %d): status %d, want %d", c.file, seed, status, c.status)
					}
				}
			})
		}
	}
}

func libraryFiles(t testing.TB) []*syntax.File {
	stp, _ := tapset.Library()
	macros, _ := tapset.Macros()
	files, err := syntax.ParseFiles(stp, &syntax.Config{Tapset: true, Macros: macros})
	if err != nil {
		t.Fatalf("tapset library: %v", err)
	}
	return files
}

// elaborate parses and elaborates script against the tapset library.
func elaborate(t *testing.T, script string) *sema.Program {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{Library: libraryFiles(t), NoWarnings: true})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func runScript(t *testing.T, c testCase, lib []*syntax.File, seed uint64) (string, string, int) {
	f, err := syntax.Parse(syntax.NewSource("<input>", c.script), syntax.DefaultConfig())
	if err != nil {
		t.Fatalf("%s: parse: %v", c.file, err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{Library: lib, NoWarnings: true, Overrides: c.overrides, Guru: c.guru})
	if err != nil {
		t.Fatalf("%s: elaborate: %v", c.file, err)
	}
	limits := tapset.DefaultLimits()
	for _, d := range c.defines {
		name, value, _ := strings.Cut(d, "=")
		if ok, err := limits.Define(name, value); !ok || err != nil {
			t.Fatalf("%s: bad define %s: %v", c.file, d, err)
		}
	}
	var stdout, stderr bytes.Buffer
	cfg := Config{Stdout: &stdout, Stderr: &stderr, Limits: limits,
		Now: func() time.Time { return fixedNow }, Seed: 1}
	if c.hashStorage {
		cfg.Storage = hashStorage(seed)
	}
	in, err := New(prog, cfg)
	if err != nil {
		t.Fatalf("%s: %v", c.file, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in.Begin()
	in.Run(ctx)
	status := in.End()
	return stdout.String(), stderr.String(), status
}

func readCases(t *testing.T, file string) []testCase {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	var c *testCase
	var section *string
	var lines []string
	noNewline := false
	end := func() {
		if section != nil {
			text := strings.Join(lines, "\n")
			if len(lines) > 0 && !noNewline {
				text += "\n"
			}
			*section = text
		}
		section, lines, noNewline = nil, nil, false
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "=== "):
			end()
			cases = append(cases, testCase{name: line[4:], file: file + ":" + strconv.Itoa(n+1)})
			c = &cases[len(cases)-1]
			section = &c.script
		case strings.HasPrefix(line, "--- ") && c != nil:
			end()
			fields := strings.Fields(line[4:])
			switch fields[0] {
			case "stdout":
				section = &c.stdout
			case "stderr":
				section = &c.stderr
			case "status":
				c.status, _ = strconv.Atoi(fields[1])
			case "define":
				c.defines = append(c.defines, fields[1])
			case "global":
				c.overrides = append(c.overrides, fields[1])
			case "guru":
				c.guru = true
			case "storage":
				c.hashStorage = fields[1] == "hash"
			default:
				t.Fatalf("%s:%d: unknown section %q", file, n+1, line)
			}
			noNewline = len(fields) > 1 && fields[1] == "-n"
		case section != nil:
			lines = append(lines, line)
		}
	}
	end()
	return cases
}
