package syntax

import (
	"crypto/sha256"
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
