package tapset

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unsafe"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The script-language part of the library: *.stp files of functions and probe
// aliases written in SystemTap's language, and *.stpm macro files.
//
// SystemTap implements many of these functions in C, where a call costs one
// statement of the MAXACTION budget. To cost about as little, name tables are
// written as one return statement of chained conditional expressions, and
// loops are avoided where a builtin (strpos, substr) does the work. Functions
// meant to be replaced by a script's own definition (__indent_timestamp,
// qs_time) live in files of their own, so that a script defining them does
// not pull in a second definition.
//
//go:embed *.stp *.stpm
var library embed.FS

// Library returns the embedded tapset scripts and macro files as sources named
// "tapset/FILE", in name order. The elaborator pulls in only the files whose
// functions, aliases or globals a script uses.
func Library() (stp, stpm []*syntax.Source) {
	entries, _ := fs.ReadDir(library, ".")
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		src := embeddedSource("tapset/" + e.Name())
		switch path.Ext(e.Name()) {
		case ".stp":
			stp = append(stp, src)
		case ".stpm":
			stpm = append(stpm, src)
		}
	}
	return stp, stpm
}

// embeddedSource returns the embedded library's file name ("tapset/FILE")
// as a source, marked Library when made (the parser then leaves the flag
// as it is).
func embeddedSource(name string) *syntax.Source {
	text, _ := library.ReadFile(strings.TrimPrefix(name, "tapset/"))
	// the copy ReadFile made is the string's: nothing else holds it
	src := syntax.NewSource(name, unsafe.String(unsafe.SliceData(text), len(text)))
	src.Library = true
	return src
}

// Macros returns the macros of the library's .stpm files, with which the
// library's scripts are parsed (they may use them, as a user's script may).
func Macros() (syntax.MacroLibrary, syntax.ErrorList) {
	_, stpm := Library()
	return syntax.LoadMacros(stpm...)
}
