package driver

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFuzzTargetsInMakefile: `make fuzz` runs every fuzz target of the
// packages under internal/ (its FUZZ_TARGETS list, PACKAGE:FuzzNAME).
func TestFuzzTargetsInMakefile(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUZZ_TARGETS = (.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("no FUZZ_TARGETS line in the Makefile")
	}
	listed := map[string]bool{}
	for _, target := range strings.Fields(string(m[1])) {
		listed[target] = true
	}
	tests, _ := filepath.Glob("../../internal/*/*_test.go")
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := 0
	for _, path := range tests {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fuzz.FindAllSubmatch(src, -1) {
			found++
			target := filepath.Base(filepath.Dir(path)) + ":" + string(f[1])
			if !listed[target] {
				t.Errorf("%s (%s) is not in the Makefile's FUZZ_TARGETS", target, path)
			}
		}
	}
	if found == 0 {
		t.Error("no fuzz targets found under internal/")
	}
}
