package driver

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/exporter"
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

// TestManPage: docs/bpftap.1 documents every option the parser takes
// (shortOptions, longOptions) and every option of `bpftap exporter`, and explains every manual page a message
// points at ([man error::pass2] and the like): each is a tag of its
// DIAGNOSTICS section, or a SystemTap page it names.
func TestManPage(t *testing.T) {
	page, err := os.ReadFile("../../docs/bpftap.1")
	if err != nil {
		t.Fatal(err)
	}
	documented := func(option string) bool {
		roff := regexp.QuoteMeta(strings.ReplaceAll(option, "-", `\-`))
		return regexp.MustCompile(`(?m)^\.(B|BI|BR) .*` + roff + `([^a-z\\-]|\\[^-]|$)`).Match(page)
	}
	for c := range shortOptions {
		if !documented("-" + string(c)) {
			t.Errorf("option -%c is not in docs/bpftap.1", c)
		}
	}
	for name := range longOptions {
		if !documented("--" + name) {
			t.Errorf("option --%s is not in docs/bpftap.1", name)
		}
	}
	checkExporterOptions(t, string(page))
	refs := map[string]bool{"error::pass1": true, "error::pass2": true, "error::pass3": true, "error::pass4": true, "error::pass5": true}
	sources, _ := filepath.Glob("../../internal/*/*.go")
	for _, path := range sources {
		src, _ := os.ReadFile(path)
		for _, m := range regexp.MustCompile(`\[man ([a-z0-9:_]+)\]`).FindAllSubmatch(src, -1) {
			refs[string(m[1])] = true
		}
	}
	for ref := range refs {
		tag := regexp.MustCompile(`(?m)^\.B ` + regexp.QuoteMeta(ref) + `$`)
		if !tag.Match(page) && !strings.Contains(string(page), `\fB[man `+ref+`]\fR`) {
			t.Errorf("[man %s], which messages point at, is not explained in docs/bpftap.1", ref)
		}
	}
}

// checkExporterOptions checks that each option `bpftap exporter -h` lists
// is in the exporter's section of the manual page, page.
func checkExporterOptions(t *testing.T, page string) {
	_, section, _ := strings.Cut(page, ".SS \"bpftap exporter's options\"\n")
	section, _, _ = strings.Cut(section, "\n.S")
	var usage strings.Builder
	exporter.Main([]string{"-h"}, nil, io.Discard, &usage)
	options := regexp.MustCompile(`(?m)^  -(\w+)`).FindAllStringSubmatch(usage.String(), -1)
	if len(options) < 5 {
		t.Fatalf("bpftap exporter -h lists %d options:\n%s", len(options), usage.String())
	}
	for _, o := range options {
		dashes := "\\-"
		if len(o[1]) > 1 {
			dashes += dashes
		}
		if !regexp.MustCompile(`(?m)^\.BI? ` + regexp.QuoteMeta(dashes+o[1]) + `\b`).MatchString(section) {
			t.Errorf("bpftap exporter's option -%s is not in docs/bpftap.1's section \"bpftap exporter's options\"", o[1])
		}
	}
}
