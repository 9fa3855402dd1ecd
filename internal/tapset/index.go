package tapset

import (
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/syntax"
)

// The library index: which embedded file declares which function, global,
// probe alias and macro, so that pass 1 parses only the files a script can
// reach instead of the whole library.
//
// The names come from a scan of each file's tokens (syntax.ScanNames)
// made when bpftap is built, not at every start: index_gen.go holds each
// file's names, each list without repeats, and the index newIndex makes
// of them (the declared names sorted, the aliases split), written by
// `go generate ./internal/tapset`; TestIndexGenerated scans the embedded
// files again and fails when index_gen.go no longer says what they hold,
// so it cannot go stale as files change. At start-up nothing is built:
// the table is static data, a name is found by binary search, and Reach
// reads just the files it reaches out of the embedded library.
//
// Reach computes a closure: starting from the names the user's scripts
// mention, a file is reached when it declares a function or global of a
// mentioned identifier, an alias a mentioned probe point may name
// (aliasMeets), or a macro a reached source uses; a reached file's own
// mentions join the search.
// The closure over-approximates what the elaborator pulls in (every
// identifier may be a call or a global; both branches of a conditional
// count), which costs a few files too many and never one too few.

//go:generate go test -run ^TestIndexGenerated$ -update .

// indexedFile is one embedded library file ("tapset/NAME") and the names
// the scan of its tokens found.
type indexedFile struct {
	name  string
	names *syntax.Names
}

// Index maps names to the embedded library files that declare them.
type Index struct {
	files   []indexedFile // the .stp files then the .stpm files, each in name order
	stp     int           // files[:stp] are the .stp files
	decls   []decl        // function and global names, macro names as "@NAME", sorted
	aliases []alias
	// byFirst groups aliases by their first component, made at the
	// first Reach (aliasGroups)
	byFirst   sync.Once
	named     map[string][]alias // the aliases whose first component is a name
	patterned []alias            // those whose first component is a pattern
}

// decl is a name the library declares and the files that declare it.
type decl struct {
	name  string
	files []int
}

// Implied names the library functions that the points meeting Point need
// beyond their script's own: Point is a pattern of components, which points
// of more components meet when Suffixes (as an alias's name). With Local,
// only once some file of the closure mentions that identifier: the calls
// compute a local of the points' prologues the elaborator leaves out of
// a probe whose body does not name it (probes.Point.OptionalLocals).
type Implied struct {
	Point    string
	Suffixes bool
	Calls    []string
	Local    string
}

// alias is one alias name, split into its components (patterns), and its
// file.
type alias struct {
	components []string
	suffixes   bool // points may add components (syntax.AliasName)
	file       int
}

// LibraryIndex returns the index of the embedded library: index_gen.go's
// table, which newIndex made of the files' names when bpftap was built.
func LibraryIndex() *Index { return &libraryIndex }

// newIndex indexes files, of which the first stp are .stp files.
func newIndex(files []indexedFile, stp int) *Index {
	ix := &Index{files: files, stp: stp}
	byName := map[string][]int{}
	for i, f := range files {
		n := f.names
		for _, lists := range [][]string{n.Funcs, n.Globals} {
			for _, name := range lists {
				byName[name] = append(byName[name], i)
			}
		}
		for _, m := range n.Macros {
			byName["@"+m] = append(byName["@"+m], i)
		}
		for _, a := range n.Aliases {
			ix.aliases = append(ix.aliases, alias{strings.Split(a.Name, "."), a.Suffixes, i})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ix.decls = append(ix.decls, decl{name, byName[name]})
	}
	return ix
}

// declaring returns the files that declare key.
func (ix *Index) declaring(key string) []int {
	i, found := slices.BinarySearchFunc(ix.decls, key, func(d decl, key string) int { return strings.Compare(d.name, key) })
	if !found {
		return nil
	}
	return ix.decls[i].files
}

// Reach returns the library's script files and macro files that the
// sources scanned into roots can reach, each in name order. implied names
// the library functions points need beyond the script's own (those a
// probe family's prologues call).
func (ix *Index) Reach(roots []*syntax.Names, implied []Implied) (stp, stpm []*syntax.Source) {
	r := &reach{ix: ix, seen: make(map[string]bool, 512), files: make([]bool, len(ix.files))}
	for _, im := range implied {
		r.implied = append(r.implied, impliedCalls{alias{components: strings.Split(im.Point, "."), suffixes: im.Suffixes}, im.Calls, im.Local})
	}
	for _, n := range roots {
		r.mentions(n)
	}
	for len(r.queue) > 0 {
		i := r.queue[0]
		r.queue = r.queue[1:]
		r.mentions(ix.files[i].names)
	}
	for i, f := range ix.files {
		switch {
		case !r.files[i]:
		case i < ix.stp:
			stp = append(stp, embeddedSource(f.name))
		default:
			stpm = append(stpm, embeddedSource(f.name))
		}
	}
	return stp, stpm
}

// reach is the state of one closure: the names already looked up, the files
// reached, those whose mentions are still to be followed, and the implied
// calls of points met whose local no file has mentioned yet.
type reach struct {
	ix      *Index
	implied []impliedCalls
	seen    map[string]bool
	files   []bool
	queue   []int
	waiting []impliedCalls
}

// impliedCalls is an Implied with its point split as an alias's name.
type impliedCalls struct {
	point alias
	calls []string
	local string
}

func (r *reach) mentions(n *syntax.Names) {
	for _, id := range n.Idents {
		r.declared(id)
	}
	for _, m := range n.MacroUses {
		r.declared("@" + m)
	}
	for _, p := range n.Points {
		if r.seen["."+p] {
			continue
		}
		r.seen["."+p] = true
		components := strings.Split(p, ".")
		for _, im := range r.implied {
			if aliasMeets(components, im.point) {
				r.waiting = append(r.waiting, im)
			}
		}
		for _, group := range r.ix.aliasGroups(components[0]) {
			for _, a := range group {
				if aliasMeets(components, a) {
					r.add(a.file)
				}
			}
		}
	}
	r.waiting = slices.DeleteFunc(r.waiting, func(im impliedCalls) bool {
		if im.local != "" && !r.seen[im.local] { // declared marks every identifier mentioned
			return false
		}
		for _, name := range im.calls {
			r.declared(name)
		}
		return true
	})
}

// aliasGroups returns the aliases a point whose first component is first
// may meet: when first is a name, those whose first component is that
// name or a pattern (a name meets no other name: patternsMeet); every
// alias when first is a pattern. (Trying each of the 813 aliases for
// each point syscalls.stp mentions was most of pass 1's search of the
// library for syscall.*: 0.47 ms.)
func (ix *Index) aliasGroups(first string) [2][]alias {
	if hasMeta(first) {
		return [2][]alias{ix.aliases}
	}
	ix.byFirst.Do(func() {
		ix.named = map[string][]alias{}
		for _, a := range ix.aliases {
			if hasMeta(a.components[0]) {
				ix.patterned = append(ix.patterned, a)
			} else {
				ix.named[a.components[0]] = append(ix.named[a.components[0]], a)
			}
		}
	})
	return [2][]alias{ix.named[first], ix.patterned}
}

// aliasMeets reports whether the point of components may name alias a or
// an alias suffix of it: each component meets the alias's (patternsMeet),
// and components past the alias's name are a suffix it takes. A point
// with a `**` (which spans components) only needs its first component to
// meet the alias's, and a shorter point (a "*" the scan wrote for a macro)
// meets it.
func aliasMeets(components []string, a alias) bool {
	if slices.ContainsFunc(components, func(c string) bool { return strings.Contains(c, "**") }) {
		return patternsMeet(components[0], a.components[0])
	}
	for i := range min(len(components), len(a.components)) {
		if !patternsMeet(components[i], a.components[i]) {
			return false
		}
	}
	return len(components) <= len(a.components) || a.suffixes
}

func (r *reach) declared(key string) {
	if r.seen[key] {
		return
	}
	r.seen[key] = true
	for _, i := range r.ix.declaring(key) {
		r.add(i)
	}
}

func (r *reach) add(i int) {
	if !r.files[i] {
		r.files[i] = true
		r.queue = append(r.queue, i)
	}
}

// hasMeta tells whether a component has a character of path.Match's
// patterns. (strings.ContainsAny, which makes a set of them at each call,
// was a tenth of pass 1 for syscall.*.return: every point meets every
// alias.)
func hasMeta(s string) bool {
	for i := range len(s) {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

// patternsMeet reports whether some component can match both patterns:
// one matches the other, or both have wildcards and the text before their
// first wildcard agrees.
func patternsMeet(p, q string) bool {
	switch {
	case p == q:
		return true
	case !hasMeta(p) && !hasMeta(q):
		return false // two names: the common case, without path.Match
	}
	if ok, _ := path.Match(p, q); ok {
		return true
	}
	if ok, _ := path.Match(q, p); ok {
		return true
	}
	i, j := strings.IndexByte(p, '*'), strings.IndexByte(q, '*')
	if i < 0 || j < 0 {
		return false
	}
	n := min(i, j)
	return p[:n] == q[:n]
}
