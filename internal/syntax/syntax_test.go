package syntax

import (
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
