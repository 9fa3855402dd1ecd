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
		case '\\': // the next character as itself
			if i+1 < len(pattern) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(string(pattern[i])))
		case '[':
			class, end, ok := shellClass(pattern, i)
			if !ok {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i = end
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

// shellClass translates the bracket expression at pattern[at] ([abc],
// [!a-z], []x], [[:alpha:]]) to a regular expression's class, and gives
// the index of its closing ']'; ok is false where none closes it.
func shellClass(pattern string, at int) (class string, end int, ok bool) {
	var b strings.Builder
	b.WriteByte('[')
	i := at + 1
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		b.WriteByte('^')
		i++
	}
	for first := true; i < len(pattern); i, first = i+1, false {
		c := pattern[i]
		switch {
		case c == ']' && !first:
			return b.String() + "]", i, true
		case c == '[' && strings.HasPrefix(pattern[i:], "[:"):
			n := strings.Index(pattern[i+2:], ":]")
			if n < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(pattern[i : i+n+4]) // [:alpha:], as Go's syntax has it
			i += n + 3
		case c == ']' || c == '[' || c == '\\':
			b.WriteString(`\` + string(c))
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// Matches tells whether a source file's name matches.
func (p FilePattern) Matches(name string) bool { return p.re.MatchString(name) }

// matchesAny tells whether any of a line table's files matches.
func (p FilePattern) matchesAny(files []*dwarf.LineFile) bool {
	return slices.ContainsFunc(files, func(e *dwarf.LineFile) bool { return e != nil && p.Matches(e.Name) })
}
