package sema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Probe derivation. A user's probe point is matched in the namespace; a match
// on a probe alias expands to each point the alias names, with the user's
// leftover components appended (alias suffixes), and those points are resolved
// in turn. Each expansion wraps the body: a prologue alias (`=`) runs its body
// before the user's, an epilogue alias (`+=`) after. Optional (`?`) points that
// do not resolve are dropped silently; a sufficient point (`!`) that resolves
// ends the probe's list of points.

// aliasSet is the payload of an alias's namespace family: every definition of
// that name, in declaration order.
type aliasSet struct {
	decls []*syntax.AliasDecl
}

// maxAliasDepth bounds alias expansion; deeper chains are loops.
const maxAliasDepth = 100

func (e *elab) addAlias(a *syntax.AliasDecl) {
	for _, name := range a.Names {
		if msg := badAliasName(name); msg != "" {
			// stap gives up on the alias at its first bad name
			e.rep.errorAt("aliasname", a, "while registering probe alias", &Diagnostic{Msg: msg, origin: "aliasname"})
			return
		}
		key := probes.ComponentsString(name.Components)
		fam := e.aliases[key]
		if fam == nil {
			var pattern []string
			for _, c := range name.Components {
				pattern = append(pattern, c.Name)
			}
			fam = &probes.Family{Name: key, Paths: []string{strings.Join(pattern, ".")}, Suffix: true, Payload: &aliasSet{}}
			e.aliases[key] = fam
			e.reg.Add(fam)
		}
		set := fam.Payload.(*aliasSet)
		set.decls = append(set.decls, a)
	}
}

// badAliasName says what is wrong with the name an alias defines: a
// component with an argument, or a component that is just a wildcard
// (foo.a* is a name, foo.* is not); "" if nothing.
func badAliasName(name *syntax.ProbePoint) string {
	for _, c := range name.Components {
		switch {
		case c.Arg != nil:
			return fmt.Sprintf("alias component %s contains illegal parameter", c.Name)
		case c.Name == "*":
			return "invalid use of wildcard probe point component"
		}
	}
	return ""
}

// expansion is the state carried down an alias expansion.
type expansion struct {
	decl     *syntax.ProbeDecl
	user     *syntax.ProbePoint // the point as the user wrote it
	body     *syntax.Block
	cond     syntax.Expr
	optional bool
	// quiet: the point's failures are ignored, as stap ignores those of
	// what a wildcard matched (globbed); unlike optional, its probes
	// must attach
	quiet  bool
	via    []*syntax.AliasDecl // alias definitions crossed, innermost first, for -p2
	active map[*syntax.AliasDecl]bool
	files  []*syntax.File // library files of the aliases used
	// fromTapset: the innermost alias crossed is the tapset's.
	fromTapset bool
	// blame is the component errors point at when the point being resolved
	// came from an alias reached with a suffix (stap blames the point that
	// carried the suffix), nil to blame the point itself.
	blame *syntax.Component
	// prev is the point whose alias expansion produced the one being
	// resolved; stap names it when the expansion loops.
	prev *syntax.ProbePoint
	// script is the outermost alias crossed whose suffix has no
	// wildcard, with that suffix: the derived probes' Probe.Script; ""
	// until there is one.
	script string
	// cause, shared by the expansions of one point, is the setup's part
	// (probes.Cause) in the first failure of an optional point, which the
	// point's "no match" ends with.
	cause *string
}

func (x *expansion) blameFor(comps []*syntax.Component) *syntax.Component {
	if x.blame != nil {
		return x.blame
	}
	return comps[0]
}

func (e *elab) deriveAll(user []*syntax.File) {
	defer e.expandAhead(user)()
	for _, f := range user {
		for _, d := range f.Decls {
			if pd, ok := d.(*syntax.ProbeDecl); ok {
				e.deriveProbe(pd)
			}
		}
	}
}

func (e *elab) deriveProbe(d *syntax.ProbeDecl) {
	for _, pp := range d.Points {
		x := &expansion{decl: d, user: pp, body: d.Body, cond: pp.Cond,
			optional: pp.Optional || pp.Sufficient, active: map[*syntax.AliasDecl]bool{}, cause: new(string)}
		n := e.expand(x, pp, pp.Components, 0)
		if n > 0 && pp.Sufficient {
			return
		}
	}
}

// expand resolves one point and returns how many probes it derived.
func (e *elab) expand(x *expansion, pp *syntax.ProbePoint, comps []*syntax.Component, depth int) int {
	pts, err := e.reg.Match(comps)
	if err != nil {
		e.pointFailed(x, comps, err)
		return 0
	}
	n, errs, quiet := 0, e.rep.nerrors-e.loops, false
	for _, pt := range pts {
		set, alias := pt.Family.Payload.(*aliasSet)
		y := x.globbed(comps, pt, alias)
		quiet = quiet || alias || y != x
		if alias {
			n += e.expandAlias(y, pp, pt, set, depth)
		} else {
			n += e.derive(y, pp, pt)
		}
	}
	// A point that reaches aliases derives nothing when each alias's own
	// points are optional and absent: stap's "no match", for the point as
	// a whole (syscall.* skips the calls this kernel lacks); so does one
	// whose wildcard matches only what fails.
	if quiet && n == 0 && !x.optional && depth == 0 && e.rep.nerrors-e.loops == errs {
		msg := "no match"
		if *x.cause != "" {
			msg += "; " + *x.cause
		}
		e.rep.add(&Diagnostic{Msg: "while resolving probe point", Tok: describe(pp.Components[0]),
			Pos: pp.Components[0].Pos, origin: "resolve", Chain: []*Diagnostic{{Msg: msg, origin: "nomatch"}}})
	}
	return n
}

// globbed is the expansion of a point pt that a wildcard of comps
// matched, where stap ignores the point's failure (the point as a whole
// fails only when nothing matched): a family's point (the .exported of
// kernel.function("f").*), or an alias reached with a suffix (socket.*.*
// reaching socket.send with .*). The failures of an alias's own points
// are reported, as stap's.
func (x *expansion) globbed(comps []*syntax.Component, pt *probes.Point, alias bool) *expansion {
	matched := comps[:min(len(pt.Components), len(comps))] // a ** spans components
	if x.optional || x.quiet || !wildcard(matched) || alias && len(pt.Suffix) == 0 {
		return x
	}
	y := *x
	y.quiet = true
	return &y
}

// wildcard tells whether a component has a wildcard.
func wildcard(comps []*syntax.Component) bool {
	for _, c := range comps {
		if strings.Contains(c.Name, "*") {
			return true
		}
	}
	return false
}

// pointFailed reports why the point comps could not be resolved, or for
// an optional point, which is skipped silently, keeps the setup's part in
// it for the whole point's "no match".
func (e *elab) pointFailed(x *expansion, comps []*syntax.Component, err error) {
	switch {
	case !x.optional && !x.quiet:
		e.resolveError(x.blameFor(comps), err)
	case *x.cause == "":
		*x.cause = probes.Cause(err)
	}
}

func (e *elab) resolveError(first *syntax.Component, err error) {
	pe, _ := err.(*probes.Error)
	var chain *Diagnostic
	switch {
	case pe != nil && pe.At != nil:
		chain = note(pe.At, pe.Msg)
		chain.origin = "mismatch"
	default:
		chain = &Diagnostic{Msg: err.Error(), origin: "check"}
	}
	e.rep.errorAt("resolve", first, "while resolving probe point", chain)
}

func (e *elab) expandAlias(x *expansion, pp *syntax.ProbePoint, pt *probes.Point, set *aliasSet, depth int) int {
	n := 0
	for _, a := range set.decls {
		if x.active[a] || depth >= maxAliasDepth {
			looped := pp
			if x.prev != nil {
				looped = x.prev
			}
			e.rep.errorAt("resolve", looped.Components[0], "while resolving probe point", &Diagnostic{
				Msg: fmt.Sprintf("recursive loop in alias expansion of %s at %s",
					probes.ComponentsString(looped.Components), looped.Pos), origin: "check"})
			e.loops++
			continue
		}
		inner := *x
		inner.active = map[*syntax.AliasDecl]bool{a: true}
		for k := range x.active {
			inner.active[k] = true
		}
		inner.body = wrapBody(a, x.body)
		inner.via = append([]*syntax.AliasDecl{a}, x.via...)
		if x.script == "" && !wildcard(pt.Suffix) {
			inner.script = probes.ComponentsString(append(append([]*syntax.Component(nil), pt.Components...), pt.Suffix...))
		}
		f := e.fileOf[a]
		if inner.fromTapset = f != nil && f.Tapset; inner.fromTapset {
			inner.files = append(append([]*syntax.File(nil), x.files...), f)
		}
		for _, target := range a.Points {
			t := inner
			t.optional = x.optional || target.Optional || target.Sufficient
			t.cond = andCond(x.cond, target.Cond)
			t.blame, t.prev = nil, pp
			if len(pt.Suffix) > 0 {
				t.blame = x.blameFor(pp.Components)
			}
			comps := e.withSuffix(target.Components, pt.Suffix)
			k := e.expand(&t, target, comps, depth+1)
			n += k
			if k > 0 && target.Sufficient {
				break
			}
		}
	}
	return n
}

// withSuffix appends an alias's suffix to one of its points. A last
// .return.maxactive(N) whose .maxactive the point does not take is left
// without it: it bounds the kretprobe instances of a kernel function's
// return probe, and a return that is a tracepoint (bpftap's
// syscall.NAME.return) has none to bound. (On an entry, .maxactive is
// stap's error, and bpftap's.)
func (e *elab) withSuffix(target, suffix []*syntax.Component) []*syntax.Component {
	comps := append(append([]*syntax.Component(nil), target...), suffix...)
	n := len(comps)
	if len(suffix) == 0 || comps[n-1].Name != "maxactive" || n < 2 || comps[n-2].Name != "return" {
		return comps
	}
	last := comps[n-1]
	var pe *probes.Error
	if _, err := e.reg.Match(comps); errors.As(err, &pe) && pe.At == last && pe.Msg == probes.InvalidSuffix {
		return comps[:len(comps)-1]
	}
	return comps
}

// wrapBody merges an alias body with the body it wraps, in stap's order.
// Their @probewrite are decided on the way (atops.go).
func wrapBody(a *syntax.AliasDecl, body *syntax.Block) *syntax.Block {
	alias := decideProbeWrites(a.Body, body)
	if alias == nil || len(alias.Stmts) == 0 {
		return body
	}
	stmts := []syntax.Stmt{alias, body}
	if a.Epilogue {
		stmts = []syntax.Stmt{body, alias}
	}
	return &syntax.Block{Pos: body.Pos, Stmts: stmts}
}

func andCond(a, b syntax.Expr) syntax.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &syntax.Binary{Typed: syntax.Typed{Pos: b.Position()}, Op: "&&", X: a, Y: b}
}

// aliasString renders an alias definition as -p2 shows it: "NAME = POINT, POINT".
func aliasString(a *syntax.AliasDecl) string {
	var names, points []string
	for _, n := range a.Names {
		names = append(names, pointString(n, false))
	}
	for _, p := range a.Points {
		points = append(points, pointString(p, false))
	}
	op := " = "
	if a.Epilogue {
		op = " += "
	}
	return strings.Join(names, ", ") + op + strings.Join(points, ", ")
}

// pointString renders a point with its `?`/`!` marks and `if` guard, the
// guard as resolved (see conditionString) or as written.
func pointString(p *syntax.ProbePoint, resolved bool) string {
	s := probes.ComponentsString(p.Components)
	switch {
	case p.Sufficient:
		s += "!"
	case p.Optional:
		s += "?"
	}
	switch {
	case p.Cond != nil && resolved:
		s += " if (" + conditionString(p.Cond) + ")"
	case p.Cond != nil:
		s += " if (" + syntax.ExprString(p.Cond) + ")"
	}
	return s
}

// derive makes a probe for a concrete point of a real probe family.
func (e *elab) derive(x *expansion, pp *syntax.ProbePoint, pt *probes.Point) int {
	if (pt.Family.Name == "never" || pt.Family.Name == "__compat_syscall") && x.fromTapset && wildcard(x.user.Components) {
		// a call this kernel cannot make (tapset/socketcall.stp): a
		// wildcard over calls skips it, as stap's optional point on the
		// missing function; a script's own alias to never stays, as in
		// stap. A compat call no native call is (syscall.statfs64) would
		// cost a program of its own: a wildcard leaves it out
		// (probes/syscall_compat.go)
		return 0
	}
	e.kernelPoints = e.kernelPoints || pt.Family.Kernel
	if pt.Family.Check != nil {
		if err := pt.Family.Check(pt); err != nil {
			e.pointFailed(x, pp.Components, err)
			return 0
		}
	}
	if pt.Family.Unsupported || pt.Family.Kernel && !e.opts.KernelProbes {
		if !x.optional && !x.quiet { // an optional point bpftap cannot serve is skipped, as stap skips one it cannot resolve
			e.rep.errorAt("unsupported", pp.Components[0], fmt.Sprintf(
				"probe point %s is not yet supported by bpftap", pt.Name()))
		}
		return 0
	}
	if pt.Family.Expand == nil {
		return e.deriveOne(x, pp, pt)
	}
	pt.SharedEntries = !e.opts.Listing && x.cond == nil && !readsContext(x.body)
	pts, err := e.expandPoint(pt)
	if err != nil && probes.Absent(err) && wildcard(x.user.Components) {
		// what this kernel cannot serve at all (netfilter's bridge family):
		// a wildcard skips it, and says why should it match nothing else
		cause := cmp.Or(probes.Cause(err), err.Error())
		e.prog.Plans = append(e.prog.Plans, fmt.Sprintf("%s: skipped under %s: %s", pt.Name(), pointString(x.user, false), cause))
		*x.cause = cmp.Or(*x.cause, cause)
		return 0
	}
	if err != nil {
		e.pointFailed(x, pp.Components, err)
		return 0
	}
	for _, q := range pts {
		e.deriveOne(x, pp, q)
		if q.Plan != "" {
			e.prog.Plans = append(e.prog.Plans, q.Plan)
		}
	}
	return len(pts)
}

// deriveOne makes the probe of one concrete point.
func (e *elab) deriveOne(x *expansion, pp *syntax.ProbePoint, pt *probes.Point) int {
	for _, f := range x.files {
		e.useFile(f)
	}
	concrete := &syntax.ProbePoint{Pos: pp.Pos, Components: pt.Components, Optional: x.optional && !x.user.Sufficient,
		Sufficient: x.user.Sufficient, Cond: syntax.Clone(x.cond)}
	body, pruned := e.pruneTapsetLocals(withPrologue(e.optionalLocalsNamed(pt, x.body), x.body), x.cond)
	p := &Probe{
		Point:    concrete,
		User:     x.user,
		Name:     pt.Name(),
		Script:   cmp.Or(x.script, pt.Script, pt.Name()),
		Family:   pt.Family.Name,
		Args:     map[string]syntax.Expr{},
		Cond:     concrete.Cond,
		Body:     syntax.Clone(body),
		Decl:     x.decl,
		Kernel:   pt.Family.Kernel,
		context:  pt.Context,
		origin:   x.via,
		userText: userPoints(x.decl, len(x.via) == 0),
		entries:  pt.Entries,

		prunedLocals: pruned,
	}
	if pt.Context != nil {
		p.Attach = pt.Context.Attach
	}
	for _, c := range pt.Components {
		if c.Arg != nil {
			p.Args[c.Name] = c.Arg
		}
	}
	switch pt.Family.Name {
	case "begin", "end", "error":
		p.Sequence = probes.Sequence(pt)
	}
	e.prog.Probes = append(e.prog.Probes, p)
	return 1
}

// optionalLocalsNamed is pt's prologue without the assignments of the
// family's optional locals that body does not name (a listing keeps them
// all: -L lists them). Pass 1 parsed their functions' files only where a
// script mentions them (probes.Family.OptionalLocals).
func (e *elab) optionalLocalsNamed(pt *probes.Point, body *syntax.Block) *syntax.Block {
	optional := pt.Family.OptionalLocals
	if pt.Prologue == nil || len(optional) == 0 || e.opts.Listing {
		return pt.Prologue
	}
	named := func(local string) bool {
		return syntax.Any(body, func(n syntax.Node) bool { id, ok := n.(*syntax.Ident); return ok && id.Name == local })
	}
	kept := &syntax.Block{Pos: pt.Prologue.Pos}
	for _, s := range pt.Prologue.Stmts {
		if id, _, ok := localAssignment(s); !ok || !slices.Contains(optional, id.Name) || named(id.Name) {
			kept.Stmts = append(kept.Stmts, s)
		}
	}
	return kept
}

// localAssignment returns the identifier and the value of s when s is a
// plain assignment to one (`x = value`).
func localAssignment(s syntax.Stmt) (*syntax.Ident, syntax.Expr, bool) {
	x, ok := s.(*syntax.ExprStmt)
	if !ok {
		return nil, nil, false
	}
	a, ok := x.X.(*syntax.Assign)
	if !ok || a.Op != "=" {
		return nil, nil, false
	}
	id, ok := a.LHS.(*syntax.Ident)
	return id, a.RHS, ok
}

// withPrologue puts a family's prologue (probes.Point.Prologue) before body.
func withPrologue(prologue, body *syntax.Block) *syntax.Block {
	if prologue == nil {
		return body
	}
	return &syntax.Block{Pos: body.Pos, Stmts: []syntax.Stmt{prologue, body}}
}

// userPoints renders the points of a probe as the user wrote them; stap
// shows their guards resolved when the probe was derived without an alias.
func userPoints(d *syntax.ProbeDecl, resolved bool) string {
	var s []string
	for _, p := range d.Points {
		s = append(s, pointString(p, resolved))
	}
	return strings.Join(s, ",")
}

func (e *elab) useFile(f *syntax.File) {
	if f == nil || !f.Tapset || e.usedFiles[f] {
		return
	}
	e.usedFiles[f] = true
	e.prog.Files = append(e.prog.Files, f)
}
