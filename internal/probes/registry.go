// Package probes is bpftap's probe-point namespace: the registry of probe families
// (begin, timer.ms(N), kernel.trace("..."), ...) and the matcher that resolves a
// probe point written in a script to the concrete points it denotes.
//
// The namespace is a tree, as in SystemTap: each node is one dotted component, a
// name with an optional literal argument (none, a number or a string). A family
// registers the paths it answers to (e.g. "timer.ms(number).randomize(number)"),
// and the node where a path ends remembers the family. Matching walks the user's
// point component by component: a component selects the children whose name it
// matches (a `*` in the user's name is a wildcard) and whose argument kind agrees
// with the literal the user wrote; several matches fan out. A `**` spans
// components: "a**b" is matched as "a*b" and as "a*" followed by "**b", one
// level further down each time (matchAcross). When the user's point
// ends on a node that carries a family, that family matched; when components are
// left over at such a node the family must accept suffixes (probe aliases do) or
// the point is an "invalid suffix". A component that matches no child is a
// mismatch, reported with the names that are closest to it.
package probes

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// ArgKind is the kind of literal argument a component takes.
type ArgKind int

const (
	NoArg ArgKind = iota
	NumberArg
	StringArg
)

// Family is one kind of probe point. Payload lets the elaborator attach its own
// data (for probe aliases, the alias declaration).
type Family struct {
	Name  string   // e.g. "timer", "kernel.trace", or an alias name
	Paths []string // patterns such as "timer.ms(number).randomize(number)"
	// Kernel families run as BPF programs; the others run in user space.
	Kernel bool
	// Unsupported families resolve (so the user gets a precise message) and are
	// then refused by the elaborator until an implementation is plugged in.
	Unsupported bool
	// Suffix lets a point continue past this family's path (probe aliases).
	Suffix bool
	// Check validates a matched point (argument ranges); its error is printed
	// after "while resolving probe point".
	Check func(p *Point) error
	// Expand turns a matched point into the concrete points it denotes (a
	// tracepoint pattern into one point per tracepoint); nil keeps the point.
	// Its error is reported like Check's.
	Expand func(p *Point) ([]*Point, error)
	// Concurrent says that Expand reads kernel facts alone (which are safe
	// to read from several goroutines at once): the elaborator may run it
	// ahead, beside its own work, for a point a user's probe reaches.
	Concurrent bool
	// Prefetch, when set, reads the kernel facts Expand will read for a
	// point like p, from another goroutine (as a Concurrent Expand, it
	// reads kernel facts alone): the elaborator runs it with the
	// expansions ahead, and Expand then finds them read.
	Prefetch func(p *Point)
	// Names lists the names a `*` component of Paths stands for
	// ("syscall.*.return": the kernel's system calls). It is called when a
	// user's point first reaches that component, never before; a name
	// that another family registers beside the `*` is left to that family
	// (the tapset's own syscall.openat alias shadows the generic one).
	Names func() ([]string, error)
	// OptionalLocals are locals of the family's prologues that a probe
	// computes only when its body names one: their functions are in
	// library files pass 1 parses only where a file mentions them
	// (tapset.Implied's Local, PrologueCalls).
	OptionalLocals []string
	Payload        any
}

// Point is one concrete probe point a user's point resolved to.
type Point struct {
	Family *Family
	// Components is the concrete point: the user's components with wildcards
	// replaced by the names they matched, up to the end of the family's path.
	Components []*syntax.Component
	// Suffix holds the components left after the family's path (aliases only).
	Suffix []*syntax.Component
	// Names are the names a dynamic component of the family's path matched
	// (Family.Names), which the point's components show as the user wrote
	// them ("syscall.*.return"): the family expands them together.
	Names []string
	// Context is set by families whose probes have context variables
	// (kernel.trace): it resolves $vars, $$parms and @cast for the elaborator.
	Context *Context
	// Prologue, set by families that give their probes locals as a probe
	// alias would (syscall.NAME: name, argstr, ...), runs before the body.
	Prologue *syntax.Block
	// Plan says, for -v, how a point that stands for many was served.
	Plan string
	// SharedEntries, set by the elaborator before Expand, says that the
	// probe's body reads no context variable and has no condition, so
	// that syscall.* may serve the entries of many calls with one point
	// (Entries).
	SharedEntries bool
	// Entries are the calls whose entries the point serves together
	// (syscall.*'s generic layer: expandEntries), each its own case of
	// one program; Prologue is then what they share.
	Entries []GenericEntry
	// Script is the name a script knows the point by, when it is not
	// Components (stap's script location: -l lists it): syscall.NAME for
	// the generic syscall layer's kernel.trace("syscalls:sys_enter_NAME"),
	// which stap's tapset makes an alias of that name;
	// process("PATH").plt("NAME") for the stub's process("PATH").statement(ADDR).
	Script string
}

// Arg returns the literal argument of the component named name, or nil.
func (p *Point) Arg(name string) syntax.Expr {
	for _, c := range p.Components {
		if c.Name == name {
			return c.Arg
		}
	}
	return nil
}

// Number returns the numeric argument of the component named name and whether
// there is one.
func (p *Point) Number(name string) (int64, bool) {
	n, ok := p.Arg(name).(*syntax.NumberLit)
	if !ok {
		return 0, false
	}
	return n.Value, true
}

// Name renders the concrete point as pp() shows it, e.g. `timer.ms(100)`.
func (p *Point) Name() string { return ComponentsString(p.Components) }

// ComponentsString renders dotted components with their literal arguments.
func ComponentsString(comps []*syntax.Component) string {
	var b strings.Builder
	for i, c := range comps {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(c.Name)
		if n, ok := c.Arg.(*syntax.NumberLit); ok && (c.Name == "statement" || c.Name == "data") { // an address: stap shows it in hex
			fmt.Fprintf(&b, "(%#x)", uint64(n.Value))
		} else if c.Arg != nil {
			b.WriteString("(" + syntax.ExprString(c.Arg) + ")")
		} else if c.HasParens {
			b.WriteString("()")
		}
	}
	return b.String()
}

// Error is a failure to resolve a point. At is the component it blames, nil when
// the message stands alone (argument validation).
type Error struct {
	Msg string
	At  *syntax.Component
	// detail, when set, computes the rest of the message when it is shown.
	detail func() string
	// Cause, when set, is what in this machine's setup (not the script)
	// made the point fail, ending the message: the elaborator also gives
	// it for an optional point whose absence it reports as a whole.
	Cause string
	// Absence, when set, says what the point names that this kernel does
	// not have (a function, a module's): not shown with the error, whose
	// detail says it, but given for an optional point whose absence the
	// elaborator reports as a whole (an alias none of whose points
	// resolves: nfs.fop.open where module nfs is not loaded).
	Absence string
	// Absent: the kernel cannot serve the point at all (a netfilter hook
	// of a family BPF programs cannot hook), which a wildcard skips, as
	// it skips a call the kernel cannot make (never).
	Absent bool
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.detail != nil {
		msg += e.detail()
	}
	if e.Cause != "" {
		msg += "; " + e.Cause
	}
	return msg
}

// Absent tells whether err says the kernel cannot serve the point at all
// (Error.Absent).
func Absent(err error) bool {
	pe, ok := err.(*Error)
	return ok && pe.Absent
}

// Cause returns the setup's part in err (Error.Cause), else what the
// kernel lacks (Error.Absence), "" if neither.
func Cause(err error) string {
	if pe, ok := err.(*Error); ok {
		return cmp.Or(pe.Cause, pe.Absence)
	}
	return ""
}

type node struct {
	name     string
	arg      ArgKind
	children []*node
	family   *Family
	// names lists what a dynamic node (name "*") stands for (Family.Names).
	names func() ([]string, error)
}

// dynamic tells whether n stands for the names of a list (Family.Names).
func (n *node) dynamic() bool { return n.name == "*" }

// Registry is a probe-point namespace.
type Registry struct {
	root node
	// kernel is the kernel the kernel families describe (BuiltinWith), nil
	// for a registry without them.
	kernel KernelInfo
}

// NewRegistry returns a registry holding the given families.
func NewRegistry(families ...*Family) *Registry {
	r := &Registry{}
	for _, f := range families {
		r.Add(f)
	}
	return r
}

// Add registers every path of f. A path already owned by another family is
// taken over by f (a later alias definition adds to, never removes, the
// namespace; see Registry.Lookup for alias lists).
func (r *Registry) Add(f *Family) {
	for _, p := range f.Paths {
		n := &r.root
		for _, step := range parsePattern(p) {
			n = n.child(step)
			if n.dynamic() {
				n.names = f.Names
			}
		}
		n.family = f
	}
}

// Builtin returns a registry of bpftap's own probe families, the kernel ones
// describing the running kernel without checking what it attaches (see
// RunningKernel); the driver passes BuiltinFor a RunningKernel that checks.
func Builtin() *Registry { return BuiltinFor(RunningKernel{}) }

// BuiltinFor returns a registry of bpftap's own probe families whose kernel
// families describe k.
func BuiltinFor(k KernelInfo) *Registry { return BuiltinWith(k, Config{}) }

// BuiltinWith is BuiltinFor with the options of cfg.
func BuiltinWith(k KernelInfo, cfg Config) *Registry {
	r := NewRegistry(Families(k, cfg)...)
	r.kernel = k
	return r
}

// Kernel is the kernel the registry's kernel families describe, nil when
// it has none: types resolve against it (a constant @cast) even in a
// script without kernel probes.
func (r *Registry) Kernel() KernelInfo { return r.kernel }

// Config holds the options that change what probe points mean.
type Config struct {
	// ClassicTracepoints (--compatible=4.1 and older): every kernel.trace
	// point is a classic tracepoint whose variables are the fields of its
	// trace record ($next_comm), as SystemTap's BPF runtime has them,
	// rather than the arguments of its prototype ($next).
	ClassicTracepoints bool
	// Target: -c or -x gave a target process; the process lifecycle
	// points without a path or pid keep only it and its descendants.
	Target bool
	// TargetExecutable is the executable of a plain -c command (its first
	// word, resolved as ResolveExecutable does), which those points mean,
	// as stap fills the -c command's path in; "" for none.
	TargetExecutable string
	// TargetBinary returns the executable of the -c command or the -x process,
	// which process.function("NAME") probes, "" when there is none, or
	// why it cannot be found (an -x process whose /proc/PID/exe bpftap may
	// not read); it is called only for such a point.
	TargetBinary func() (string, error)
	// Guru is -g: names stap passes to C as they are in guru mode are
	// taken as numbers where they are (netfilter.hook("1").pf("2")).
	Guru bool
	// Listing (-l, -L): every concrete point is a probe of its own, to be
	// listed by its name, never one of many a shared program serves (the
	// returns of syscall.*.return on one raw tracepoint).
	Listing bool
}

// Families lists bpftap's own probe families (see the per-family files).
func Families(k KernelInfo, cfg Config) []*Family {
	var all []*Family
	all = append(all, userFamilies()...)
	all = append(all, timerFamilies()...)
	all = append(all, kernelFamilies(k, cfg)...)
	return all
}

type step struct {
	name string
	arg  ArgKind
}

// parsePattern splits "a.b(number).c(string)" into steps.
func parsePattern(p string) []step {
	var steps []step
	for _, part := range strings.Split(p, ".") {
		s := step{name: part}
		if i := strings.IndexByte(part, '('); i >= 0 {
			s.name = part[:i]
			switch part[i:] {
			case "(number)":
				s.arg = NumberArg
			case "(string)":
				s.arg = StringArg
			default:
				panic("probes: bad pattern " + p)
			}
		}
		steps = append(steps, s)
	}
	return steps
}

func (n *node) child(s step) *node {
	for _, c := range n.children {
		if c.name == s.name && c.arg == s.arg {
			return c
		}
	}
	c := &node{name: s.name, arg: s.arg}
	n.children = append(n.children, c)
	return c
}

func argKind(c *syntax.Component) ArgKind {
	switch c.Arg.(type) {
	case *syntax.NumberLit:
		return NumberArg
	case *syntax.StringLit:
		return StringArg
	}
	return NoArg
}

// InvalidSuffix is the message of the error Match gives for components left
// over after a family that takes no suffix.
const InvalidSuffix = "invalid suffix for probe"

// Match resolves the components of a user's probe point. It returns every
// concrete point, or the first error met when nothing matched.
func (r *Registry) Match(comps []*syntax.Component) ([]*Point, error) {
	m := &matching{}
	err := r.root.match(comps, nil, nil, m)
	if len(m.out) > 0 {
		return m.out, nil
	}
	return nil, err
}

// MatchUnlisted is Match without the points of families' lists of names
// (Family.Names), which it does not read: syscall.*.return gives the
// tapset's aliases the point reaches (syscall.ni_syscall.return), not the
// kernel's calls, whose list waits for tracefs.
func (r *Registry) MatchUnlisted(comps []*syntax.Component) []*Point {
	m := &matching{unlisted: true}
	r.root.match(comps, nil, nil, m)
	return m.out
}

// matching is what a match found, and how it matches.
type matching struct {
	out      []*Point
	unlisted bool // MatchUnlisted's
}

func (n *node) match(rest, done []*syntax.Component, names []string, m *matching) error {
	if len(rest) == 0 {
		if n.family == nil {
			return &Error{Msg: "probe point mismatch", At: done[len(done)-1]}
		}
		m.out = append(m.out, &Point{Family: n.family, Components: done, Names: names})
		return nil
	}
	c := rest[0]
	if strings.Contains(c.Name, "**") {
		return n.matchAcross(c, rest[1:], done, names, m)
	}
	wild := strings.Contains(c.Name, "*")
	var firstErr error
	matched := false
	for _, ch := range n.children {
		if ch.arg != argKind(c) {
			continue
		}
		if ch.dynamic() {
			if m.unlisted {
				continue
			}
			listed, err := n.dynamicNames(ch, c.Name, rest[1:])
			if err != nil {
				firstErr = cmpOr(firstErr, &Error{Msg: err.Error(), At: c})
				continue
			}
			if len(listed) > 0 {
				matched = true
				next := append(append([]*syntax.Component(nil), done...), c)
				firstErr = cmpOr(firstErr, ch.match(rest[1:], next, listed, m))
			}
			continue
		}
		if !nameMatches(c.Name, ch.name) || n.yields(ch, rest[1:]) {
			continue
		}
		matched = true
		concrete := *c
		concrete.Name = ch.name
		next := append(append([]*syntax.Component(nil), done...), &concrete)
		firstErr = cmpOr(firstErr, ch.match(rest[1:], next, names, m))
	}
	if matched {
		return firstErr
	}
	if n.family != nil {
		if n.family.Suffix {
			m.out = append(m.out, &Point{Family: n.family, Components: done, Suffix: rest, Names: names})
			return nil
		}
		return &Error{Msg: InvalidSuffix, At: c}
	}
	if firstErr != nil { // a list of names could not be read
		return firstErr
	}
	msg := "probe point mismatch"
	if wild {
		msg += ": didn't find any wildcard matches"
	}
	if s := Similar(c.Name, n.childNames()); s != "" {
		msg += " (similar: " + s + ")"
	}
	return &Error{Msg: msg, At: c}
}

// matchAcross matches a component holding `**`, which spans one or more
// components: "foo**bar" stands for "foo*bar" and for "foo*" followed by
// "**bar", which recurses one level down; an argument stays with the last
// part. A point matched this way must be one the namespace holds: an alias
// reached with the rest of a `**` pattern as its suffix is no match (stap
// ignores the failures of those expansions). Nothing matched is stap's
// wildcard mismatch, blamed on the user's component.
func (n *node) matchAcross(c *syntax.Component, after, done []*syntax.Component, names []string, m *matching) error {
	glob := strings.Index(c.Name, "**")
	prefix, suffix := c.Name[:glob], strings.TrimLeft(c.Name[glob:], "*")
	within := *c
	within.Name = prefix + "*" + suffix
	head := &syntax.Component{Pos: c.Pos, Name: prefix + "*"}
	tail := *c
	tail.Name = "**" + suffix
	found := &matching{unlisted: m.unlisted}
	n.match(append([]*syntax.Component{&within}, after...), done, names, found)
	n.match(append([]*syntax.Component{head, &tail}, after...), done, names, found)
	matched := false
	for _, p := range found.out {
		if len(p.Suffix) == 0 {
			m.out = append(m.out, p)
			matched = true
		}
	}
	if matched {
		return nil
	}
	msg := "probe point mismatch: didn't find any wildcard matches"
	if s := Similar(c.Name, n.childNames()); s != "" {
		msg += " (similar: " + s + ")"
	}
	return &Error{Msg: msg, At: c}
}

// A dynamic child (name "*", Family.Names) stands for every name of its
// list at once: the point it yields carries the names matched (Point.Names),
// and its family expands them together (one program may serve them all). A
// static sibling with the same name takes that name when it matches the
// rest of the point natively, not through an alias suffix: the tapset's
// syscall.read alias takes syscall.read, the family's syscall.*.return
// takes syscall.read.return.

// native tells whether n matches the components after it without an
// alias suffix: it ends a family's path, or a child takes the next one.
func (n *node) native(after []*syntax.Component) bool {
	if len(after) == 0 {
		return n.family != nil
	}
	for _, ch := range n.children {
		if ch.arg == argKind(after[0]) && (ch.dynamic() || nameMatches(after[0].Name, ch.name)) {
			return true
		}
	}
	return false
}

// yields tells whether static child ch leaves its name to a dynamic
// sibling, which matches the rest natively where ch does not.
func (n *node) yields(ch *node, after []*syntax.Component) bool {
	if ch.native(after) {
		return false
	}
	for _, d := range n.children {
		if d.dynamic() && d.names != nil && d.native(after) {
			listed, err := d.names()
			return err == nil && slices.Contains(listed, ch.name)
		}
	}
	return false
}

// dynamicNames returns the names of dynamic child ch that pattern matches,
// but those a static sibling takes.
func (n *node) dynamicNames(ch *node, pattern string, after []*syntax.Component) ([]string, error) {
	if ch.names == nil {
		return nil, nil
	}
	listed, err := ch.names()
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, s := range n.children {
		if !s.dynamic() && s.native(after) {
			taken[s.name] = true
		}
	}
	var names []string
	for _, name := range listed {
		if !taken[name] && nameMatches(pattern, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

func (n *node) childNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range n.children {
		listed := []string{c.name}
		if c.dynamic() && c.names != nil {
			listed, _ = c.names()
		}
		for _, name := range listed {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names
}

// cmpOr returns the first error that is not nil.
func cmpOr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// nameMatches reports whether the user's component name (possibly with `*`
// wildcards) matches a registered name.
func nameMatches(user, name string) bool {
	if !strings.Contains(user, "*") {
		return user == name
	}
	ok, err := path.Match(user, name)
	return err == nil && ok
}

// Similar returns up to five candidates closest to name by edit distance, as
// stap's "(similar: ...)" lists them: nearest first, then shorter, then by name.
func Similar(name string, candidates []string) string {
	return strings.Join(closest(name, candidates, 5, 5), ", ")
}

// maxSimilarName is the longest name a "similar" list is made for: no
// symbol, tracepoint or probe point is that long (the kernel's symbol names
// stop at 512 bytes), and the nearest names to a longer one say nothing.
const maxSimilarName = 1024

// closest returns up to n candidates nearest to name, within an edit
// distance of limit (no limit when negative). The work is bounded: a name
// longer than maxSimilarName has no similar names, a candidate whose
// length alone puts it behind the n-th best so far is skipped, and a
// distance is computed only until it is known to be larger than that
// best's (so 40,000 symbols cost about what their lengths cost to read).
func closest(name string, candidates []string, n, limit int) []string {
	if len(name) > maxSimilarName {
		return nil
	}
	var best []similar // the n nearest so far, in order
	for _, c := range candidates {
		if c == "" || n == 0 {
			continue
		}
		bound := limit
		if len(best) == n {
			bound = best[n-1].d
			if !(similar{c, abs(len(name) - len(c))}).before(best[n-1]) {
				continue
			}
		}
		d, ok := boundedLevenshtein(name, c, bound)
		if !ok {
			continue
		}
		k := similar{c, d}
		if len(best) == n && !k.before(best[n-1]) {
			continue
		}
		i := sort.Search(len(best), func(i int) bool { return k.before(best[i]) })
		if len(best) < n {
			best = append(best, similar{})
		}
		copy(best[i+1:], best[i:])
		best[i] = k
	}
	names := make([]string, len(best))
	for i, c := range best {
		names[i] = c.s
	}
	return names
}

// similar is a candidate name at edit distance d.
type similar struct {
	s string
	d int
}

// before orders the similar names as stap lists them: nearest first, then
// shorter, then by name.
func (a similar) before(b similar) bool {
	if a.d != b.d {
		return a.d < b.d
	}
	if len(a.s) != len(b.s) {
		return len(a.s) < len(b.s)
	}
	return a.s < b.s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// boundedLevenshtein is the edit distance between a and b when it is at
// most bound (any distance when bound is negative); ok is false, and the
// work stopped early, when it is larger. Cell (i, j) of the table is the
// distance between the first i bytes of a and the first j of b; the
// distance through it is at least the cell plus the difference of the
// lengths left, so once every cell of a row is past bound by that
// measure, the distance is.
func boundedLevenshtein(a, b string, bound int) (d int, ok bool) {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		least := i + abs(len(a)-i-len(b))
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			least = min(least, cur[j]+abs(len(a)-i-(len(b)-j)))
		}
		if bound >= 0 && least > bound {
			return 0, false
		}
		prev, cur = cur, prev
	}
	if bound >= 0 && prev[len(b)] > bound {
		return 0, false
	}
	return prev[len(b)], true
}

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }
