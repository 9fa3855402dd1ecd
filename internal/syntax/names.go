package syntax

import (
	"slices"
	"strings"
)

// Names is what a quick scan of a source's tokens finds it declaring and
// mentioning, without preprocessing or parsing it: enough to tell which
// library files a script can reach (internal/tapset's index). The scan
// errs on the side of mentioning too much: both branches of a `%( %)`
// conditional count, every identifier counts as a possible use of a
// function or a global, and a probe point whose first component is not
// plain text (a macro, a command-line argument) is recorded as "*".
// Probe points and alias names are their components' names joined by
// dots, without arguments (kernel.function("f").return is
// "kernel.function.return"); a component that is not plain text is "*".
type Names struct {
	// Declared at the top level: functions, globals, every name a probe
	// alias defines, macros (@define).
	Funcs, Globals, Macros []string
	Aliases                []AliasName
	// Mentioned: every identifier, every probe point that is not an
	// alias's name (a pattern such as "sys*.open"), and the name of every
	// macro used (without its '@').
	Idents, Points, MacroUses []string
}

// AliasName is a name a probe alias defines, and whether a point may add
// components to it (an alias suffix: syscall.read.return of an alias
// syscall.read). It may not when every point of the alias's definition
// is a kernel.trace, never or __compat_syscall.NAME, which take no
// further components.
type AliasName struct {
	Name     string
	Suffixes bool
}

// ScanNames scans src (with the command-line arguments args pasted where
// it refers to them, as the parser would) and returns its Names.
func ScanNames(src *Source, args []string) *Names {
	n := &namesScan{sc: newScanner(src, args), names: &Names{}}
	for t := n.next(); t != nil; t = n.next() {
		n.token(t)
	}
	return n.names
}

// namesScan is the state of ScanNames: the bracket depth, what the last
// top-level keyword started, and the probe points being read.
type namesScan struct {
	sc      *scanner
	names   *Names
	depth   int
	pending *token // a token read ahead and not yet handled
	// points holds the points of the probe declaration being read
	// (inProbe), until its `=` (an alias: they are its names, moved to
	// aliasNames) or its body.
	inProbe    bool
	atPoint    bool // the next token starts a probe point
	points     []string
	aliasNames []string
}

func (n *namesScan) next() *token {
	if t := n.pending; t != nil {
		n.pending = nil
		return t
	}
	return n.sc.scan()
}

func (n *namesScan) token(t *token) {
	if t.kind == tokOperator && t.text == "@define" {
		if m := n.next(); m != nil && m.kind == tokIdent {
			n.names.Macros = append(n.names.Macros, m.text)
		}
		return
	}
	n.mention(t)
	if n.inProbe {
		n.probeToken(t)
		return
	}
	switch t.text {
	case "{", "(", "[":
		n.depth++
	case "}", ")", "]":
		n.depth--
	}
	if n.depth != 0 || t.kind != tokKeyword {
		return
	}
	switch t.text {
	case "function":
		if f := n.next(); f != nil && f.kind == tokIdent {
			n.names.Funcs = append(n.names.Funcs, f.text)
		}
	case "global":
		n.globals()
	case "private": // private NAME declares globals, as private global NAME
		t := n.next()
		n.pending = t
		if t != nil && t.kind == tokIdent {
			n.globals()
		}
	case "probe":
		n.inProbe, n.atPoint, n.points = true, true, nil
	}
}

// globals reads the names of a global declaration: NAME[%][[SIZE]][= VALUE],
// separated by commas; the token after the last item is handled as usual.
func (n *namesScan) globals() {
	for {
		t := n.next()
		if t == nil || t.kind != tokIdent {
			n.pending = t
			return
		}
		n.names.Globals = append(n.names.Globals, t.text)
		n.names.Idents = append(n.names.Idents, t.text)
		t = n.next()
		if t != nil && t.text == "%" {
			t = n.next()
		}
		if t != nil && t.text == "[" {
			for t != nil && t.text != "]" {
				t = n.next()
			}
			t = n.next()
		}
		if t != nil && t.text == "=" {
			if t = n.next(); t != nil && t.text == "-" {
				n.next()
			}
			t = n.next()
		}
		if t == nil || t.text != "," {
			n.pending = t
			return
		}
	}
}

// probeToken reads one token of a probe declaration's points: the first
// component of each point, up to the alias's `=`/`+=` or the body's `{`.
func (n *namesScan) probeToken(t *token) {
	switch {
	case t.text == "(" || t.text == "[":
		n.depth++
	case t.text == ")" || t.text == "]":
		n.depth--
	case n.depth > 0:
	case t.text == "{":
		n.names.Points = append(n.names.Points, n.points...)
		suffixes := slices.ContainsFunc(n.points, takesSuffix)
		for _, name := range n.aliasNames {
			n.names.Aliases = append(n.names.Aliases, AliasName{name, suffixes})
		}
		n.inProbe, n.depth, n.aliasNames = false, 1, nil
	case t.text == "=" || t.text == "+=":
		n.aliasNames = append(n.aliasNames, n.points...)
		n.points, n.atPoint = nil, true
	case t.text == "," || t.text == "%(" || t.text == "%?" || t.text == "%:" || t.text == "%)":
		n.atPoint = true
	case n.atPoint:
		n.points = append(n.points, n.point(t))
		n.atPoint = false
	}
}

// mention records t when it is an identifier or a macro's use.
func (n *namesScan) mention(t *token) {
	switch {
	case t == nil:
	case t.kind == tokIdent:
		n.names.Idents = append(n.names.Idents, t.text)
	case t.kind == tokOperator && t.text[0] == '@' && len(t.text) > 1:
		n.names.MacroUses = append(n.names.MacroUses, t.text[1:])
	}
}

// takesSuffix tells whether more components may follow point (a point of
// an alias's definition): not kernel.trace, never or
// __compat_syscall.NAME (probes/syscall_compat.go).
func takesSuffix(point string) bool {
	return point != "never" && point != "kernel.trace" && !strings.HasPrefix(point, "__compat_syscall.")
}

// point reads the point that starts with t: its components, each with its
// argument, if any, skipped.
func (n *namesScan) point(t *token) string {
	text := n.component(t)
	for {
		u := n.next()
		switch {
		case u != nil && u.text == "(" && !u.afterSpace:
			n.skipArgument()
		case u != nil && u.text == "." && !u.afterSpace:
			c := n.next()
			n.mention(c)
			text += "." + n.component(c)
		default:
			n.pending = u
			return text
		}
	}
}

// skipArgument reads a component's argument, after its '(', up to the
// matching ')'.
func (n *namesScan) skipArgument() {
	for depth := 1; depth > 0; {
		u := n.next()
		switch {
		case u == nil:
			return
		case u.text == "(":
			depth++
		case u.text == ")":
			depth--
		default:
			n.mention(u)
		}
	}
}

// component reads the rest of a point's component that starts with t:
// identifiers, numbers and '*' written together; "*" when t starts none,
// or for a command-line argument no argument was given for ($1).
func (n *namesScan) component(t *token) string {
	if t == nil || !componentPart(t) {
		n.pending = t
		return "*"
	}
	text := t.text
	for {
		u := n.next()
		if u == nil || u.afterSpace || !componentPart(u) {
			n.pending = u
			if strings.ContainsAny(text, "$@") {
				return "*"
			}
			return text
		}
		n.mention(u)
		text += u.text
	}
}

func componentPart(t *token) bool {
	return t.kind == tokIdent || t.kind == tokKeyword || t.kind == tokNumber || t.text == "*" || t.text == "**"
}
