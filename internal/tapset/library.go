package tapset

import (
	"embed"
	"io/fs"
	"path"
	"sort"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The script-language part of the library: *.stp files of functions and probe
// aliases written in SystemTap's language, and *.stpm macro files.
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
		text, err := library.ReadFile(e.Name())
		if err != nil {
			continue
		}
		src := syntax.NewSource("tapset/"+e.Name(), string(text))
		switch path.Ext(e.Name()) {
		case ".stp":
			stp = append(stp, src)
		case ".stpm":
			stpm = append(stpm, src)
		}
	}
	return stp, stpm
}
