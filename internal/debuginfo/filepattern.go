package debuginfo

import (
	"debug/dwarf"
	"regexp"
	"slices"
	"strings"
)

// FilePattern is the FILE of stap's FUNC@FILE: a shell wildcard (*, ?,
// [...], [!...]) matched against the names a unit's line table gives its
// source files, its '*' crossing '/' (fnmatch without FNM_PATHNAME), as
// a whole name or as the tail after any '/' (stap puts "*/" before it):
// "fs/proc*.c" matches /build/linux/fs/proc/base.c and fs/proc_namespace.c.
type FilePattern struct {
	re *regexp.Regexp
}

// NewFilePattern compiles pattern.
func NewFilePattern(pattern string) FilePattern {
	var b strings.Builder
	b.WriteString(`^(?:.*/)?`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil { // a class Go's syntax refuses: match it literally
		re = regexp.MustCompile(`^(?:.*/)?` + regexp.QuoteMeta(pattern) + `$`)
	}
	return FilePattern{re: re}
}

// Matches tells whether a source file's name matches.
func (p FilePattern) Matches(name string) bool { return p.re.MatchString(name) }

// matchesAny tells whether any of a line table's files matches.
func (p FilePattern) matchesAny(files []*dwarf.LineFile) bool {
	return slices.ContainsFunc(files, func(e *dwarf.LineFile) bool { return e != nil && p.Matches(e.Name) })
}
