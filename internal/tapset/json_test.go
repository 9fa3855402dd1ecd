package tapset_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"golang.org/x/tools/txtar"
)

// TestJSONTapset runs the JSON tapset's functions and macros in a begin
// probe and compares the text of metadata.json and data.json with
// testdata/json.txt. The macros write $value, a procfs probe's: here it is
// renamed to a local, json_text, which the script prints. (cli's
// json_tapset reads the files that procfs serves.)
func TestJSONTapset(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/json.txt")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range ar.Files {
		files[f.Name] = string(f.Data)
	}
	for _, c := range []struct{ script, want string }{
		{"metadata.stp", "metadata.json"}, {"data.stp", "data.json"}, {"errors.stp", "errors.out"},
	} {
		if got := runWithJSONText(t, files["setup.stp"]+files[c.script]); got != files[c.want] {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", c.script, got, files[c.want])
		}
	}
}

// runWithJSONText runs script with the library's macros, $value renamed
// to json_text, and 8 KiB strings (procfs's maxsize(8192)).
func runWithJSONText(t *testing.T, script string) string {
	t.Helper()
	stp, stpm := tapset.Library()
	for i, src := range stpm {
		stpm[i] = syntax.NewSource(src.Name, strings.ReplaceAll(src.Text, "$value", "json_text"))
	}
	macros, errs := syntax.LoadMacros(stpm...)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	prog, err := elaborateWith(t, script, stp, macros)
	if err != nil {
		t.Fatalf("elaborate:\n%v", err)
	}
	var out bytes.Buffer
	limits := tapset.DefaultLimits()
	limits.MaxStringLen = 8192
	in, err := interp.New(prog, interp.Config{Stdout: &out, Stderr: &out, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	in.Begin()
	in.End()
	return out.String()
}
