package sema

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// FuzzElaborate parses then elaborates arbitrary scripts: elaboration must
// never panic, and every error it reports about the user's script must carry a
// source line and a caret.
func FuzzElaborate(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	pending, _ := filepath.Glob("testdata/pending/*.txt")
	for _, file := range append(files, pending...) {
		for _, c := range readChunks(f, file) {
			f.Add(c.script)
		}
	}
	lib := libraryFiles(f)
	f.Fuzz(func(t *testing.T, script string) {
		file, err := syntax.Parse(syntax.NewSource("<input>", script), nil)
		if err != nil {
			return
		}
		_, err = Elaborate([]*syntax.File{file}, Options{Library: lib})
		var errs *Errors
		if err == nil || !errors.As(err, &errs) {
			return
		}
		for _, d := range errs.Diags {
			if d.Tok != "" && d.Pos.Src != nil && !strings.Contains(d.Pos.SourceLine(""), "^") {
				t.Errorf("diagnostic without caret: %s: %s", d.Msg, d.Tok)
			}
		}
	})
}
