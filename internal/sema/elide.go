package sema

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Elision, stap's first optimization pass (skipped with -u, as stap does):
// assignments to locals nobody reads and expression statements without side
// effects are dropped, then probes left empty. Each removal is a warning, so a
// script that computes nothing observable ends with "no probes found".

// markUsage sets Var.Read and Var.Written from every probe and function body.
func (e *elab) markUsage() {
	for _, v := range e.allVars() {
		v.Read, v.Written = false, false
	}
	for _, n := range e.bodies() {
		syntax.Walk(n, markNode)
	}
	for _, p := range e.prog.Probes {
		if p.Value != nil { // the runner writes and reads it (procfs.go)
			p.Value.Read, p.Value.Written = true, true
		}
	}
}

func (e *elab) bodies() []syntax.Node {
	var list []syntax.Node
	for _, p := range e.prog.Probes {
		if p.Cond != nil {
			list = append(list, p.Cond)
		}
		list = append(list, p.Body)
	}
	for _, f := range e.prog.Funcs {
		if f.Decl != nil && f.Decl.Body != nil {
			list = append(list, f.Decl.Body)
		}
	}
	return list
}

func (e *elab) allVars() []*syntax.Var {
	vars := append([]*syntax.Var(nil), e.prog.Globals...)
	for _, p := range e.prog.Probes {
		vars = append(vars, p.Locals...)
	}
	for _, f := range e.prog.Funcs {
		vars = append(vars, f.Locals...)
	}
	return vars
}

// markNode marks the variables a node writes; every other identifier is a read.
func markNode(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Assign:
		markWrite(n.LHS)
		if !pureWrite(n.Op) {
			markRead(n.LHS)
		}
		syntax.Walk(n.RHS, markNode)
		markIndexKeys(n.LHS)
		return false
	case *syntax.IncDec:
		markWrite(n.X)
		markRead(n.X)
		markIndexKeys(n.X)
		return false
	case *syntax.ForeachStmt:
		for _, k := range n.Keys {
			markWrite(k)
		}
		if n.Value != nil {
			markWrite(n.Value)
		}
		syntax.Walk(n.Array, markNode)
		for _, x := range n.Slice {
			syntax.Walk(x, markNode)
		}
		if n.Limit != nil {
			syntax.Walk(n.Limit, markNode)
		}
		syntax.Walk(n.Body, markNode)
		return false
	case *syntax.DeleteStmt:
		markRead(n.Target) // a deleted global is not displayed at exit
		markIndexKeys(n.Target)
		return false
	case *syntax.TryStmt:
		if n.CatchVar != nil {
			markWrite(n.CatchVar)
		}
		syntax.Walk(n.Body, markNode)
		syntax.Walk(n.Catch, markNode)
		return false
	case *syntax.Ident:
		markRead(n)
	}
	return true
}

// pureWrite tells an assignment operator that only writes its target (`=`,
// `<<<`) from one that reads it too (`+=`, `.=`, ...): stap elides only the
// former when the target is a local nobody reads.
func pureWrite(op string) bool { return op == "=" || op == "<<<" }

func markIndexKeys(x syntax.Expr) {
	if ix, ok := x.(*syntax.Index); ok {
		for _, k := range ix.Keys {
			syntax.Walk(k, markNode)
		}
	}
}

func lvalueVar(x syntax.Expr) *syntax.Var {
	switch x := x.(type) {
	case *syntax.Ident:
		return x.Var
	case *syntax.Index:
		if id, ok := x.Array.(*syntax.Ident); ok {
			return id.Var
		}
	}
	return nil
}

func markWrite(x syntax.Expr) {
	if v := lvalueVar(x); v != nil {
		v.Written = true
	}
}

func markRead(x syntax.Expr) {
	if v := lvalueVar(x); v != nil {
		v.Read = true
	}
}

func (e *elab) elide() {
	e.markUsage()
	e.dropUnusedGlobals()
	if !e.opts.Unoptimized { // stap warns in an optimization pass -u skips
		e.warnNeverAssigned()
		if !e.checkAssignTargets() {
			return
		}
	}
	el := &elider{e: e, pure: map[*syntax.Func]bool{}, visiting: map[*syntax.Func]bool{},
		stmtTok: map[*syntax.ExprStmt]syntax.Node{}}
	modes := []elideMode{elideAssignments, elideExpressions, reduceStatements}
	if e.opts.Unoptimized {
		modes = modes[2:]
	}
	// A round that elides nothing after one that folded nothing leaves the
	// tree the last typing saw: typing it again would settle nothing (types
	// only accumulate), so the round that confirms the fixed point is not
	// typed (syscall.*: one typing of three, the elision 0.86x).
	for iter, changed, typed := 0, true, false; changed; iter++ {
		e.rep.quiet = iter > 0
		if iter > 0 { // the marks made above stand for the first round
			e.markUsage()
		}
		n := e.countAllStmts()
		el.round(modes)
		elided := e.countAllStmts() != n
		if elided || !typed {
			if !e.initialTypes() {
				return
			}
		}
		folded := e.foldAll(!elided)
		typed = !folded
		changed = iter == 0 || folded || elided
	}
	e.rep.quiet = false
	e.markUsage()
	e.dropUnusedGlobals()                       // those only elided code used
	if !e.opts.Unoptimized && !e.opts.Listing { // a listing keeps them, as stap's
		e.dropEmptyProbes()
	}
	if len(e.prog.Probes) == 0 && !e.opts.Listing { // none left, or none derived (every point optional and absent)
		e.rep.errorf("noprobes", "no probes found")
	}
	e.prune(!e.opts.Unoptimized)
}

// dropEmptyProbes drops the user's probes whose bodies elision emptied.
func (e *elab) dropEmptyProbes() {
	kept := e.prog.Probes[:0]
	for _, p := range e.prog.Probes {
		if len(p.Body.Stmts) == 0 && p.Decl != nil && p.Family != probes.PerfCounterFamily {
			e.rep.warnAt(p.Decl, fmt.Sprintf("Probe '%s' has been elided", p.Point.Components[0].Name))
			continue
		}
		kept = append(kept, p)
	}
	e.prog.Probes = kept
}

// dropUnusedGlobals forgets the globals no probe or function mentions.
func (e *elab) dropUnusedGlobals() {
	kept := e.prog.Globals[:0]
	for _, g := range e.prog.Globals {
		if g.Read || g.Written {
			kept = append(kept, g)
		}
	}
	e.prog.Globals = kept
}

// round is one of stap's optimization rounds: first the assignments to locals
// nobody reads, in every probe then every function, then the expression
// statements without effect, then the statements whose value is unused
// reduced to their operands (with -u only the last).
func (el *elider) round(modes []elideMode) {
	for _, mode := range modes {
		el.mode = mode
		for _, b := range el.e.bodiesByName() {
			el.block(b)
		}
	}
}

// bodiesByName lists the probe bodies, then the function bodies by function name.
func (e *elab) bodiesByName() []*syntax.Block {
	var list []*syntax.Block
	for _, p := range e.prog.Probes {
		list = append(list, p.Body)
	}
	for _, f := range e.funcsByName() {
		if f.Decl != nil && f.Decl.Body != nil {
			list = append(list, f.Decl.Body)
		}
	}
	return list
}

func (e *elab) funcsByName() []*syntax.Func {
	funcs := append([]*syntax.Func(nil), e.prog.Funcs...)
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].Name < funcs[j].Name })
	return funcs
}

func (e *elab) countAllStmts() int {
	n := 0
	for _, b := range e.bodiesByName() {
		n += countStmts(b)
	}
	return n
}

// countStmts counts the statements of s, s among them. Statements nest
// in statements only (no expression holds one), so it walks no
// expression: the elision's rounds count every body twice.
func countStmts(s syntax.Stmt) int {
	n := 1
	switch s := s.(type) {
	case *syntax.Block:
		if s == nil { // a try without its catch
			return 0
		}
		for _, x := range s.Stmts {
			n += countStmts(x)
		}
	case *syntax.IfStmt:
		n += countStmts(s.Then)
		if s.Else != nil {
			n += countStmts(s.Else)
		}
	case *syntax.WhileStmt:
		n += countStmts(s.Body)
	case *syntax.ForStmt:
		n += countStmts(s.Body)
	case *syntax.ForeachStmt:
		n += countStmts(s.Body)
	case *syntax.TryStmt:
		n += countStmts(s.Body) + countStmts(s.Catch)
	}
	return n
}

// prune drops the functions elided code referred to, keeping those reachable
// from the remaining probes, and (when locals is set) the locals nothing
// mentions any more.
func (e *elab) prune(locals bool) {
	used := map[*syntax.Var]bool{}
	called := map[*syntax.Func]bool{}
	var visit func(n syntax.Node)
	visit = func(n syntax.Node) {
		syntax.Walk(n, func(x syntax.Node) bool {
			switch x := x.(type) {
			case *syntax.Ident:
				used[x.Var] = true
			case *syntax.Call:
				if f := x.Func; f != nil && !called[f] {
					called[f] = true
					if f.Decl != nil && f.Decl.Body != nil {
						visit(f.Decl.Body)
					}
				}
			}
			return true
		})
	}
	for _, p := range e.prog.Probes {
		if p.Cond != nil {
			visit(p.Cond)
		}
		visit(p.Body)
	}
	e.prog.Funcs = keepFuncs(e.prog.Funcs, called)
	e.prog.builtinsUsed = keepFuncs(e.prog.builtinsUsed, called)
	if !locals {
		return
	}
	for _, p := range e.prog.Probes {
		kept := 0
		if p.Value != nil {
			kept = 1 // $value stays first (procfs.go)
		}
		p.Locals = keepVars(p.Locals, used, kept)
	}
	for _, f := range e.prog.Funcs {
		f.Locals = keepVars(f.Locals, used, len(f.Params))
	}
}

// keepVars keeps the used variables (and the first n, the parameters) and
// renumbers them.
func keepVars(vars []*syntax.Var, used map[*syntax.Var]bool, n int) []*syntax.Var {
	var kept []*syntax.Var
	for i, v := range vars {
		if i < n || used[v] {
			v.Index = len(kept)
			kept = append(kept, v)
		}
	}
	return kept
}

func keepFuncs(funcs []*syntax.Func, called map[*syntax.Func]bool) []*syntax.Func {
	var kept []*syntax.Func
	for _, f := range funcs {
		if called[f] {
			kept = append(kept, f)
		}
	}
	return kept
}

// warnNeverAssigned warns about locals that are read but never written.
func (e *elab) warnNeverAssigned() {
	for _, p := range e.prog.Probes {
		e.neverAssigned(p.Locals, p.prunedLocals, p.Body)
	}
	for _, f := range e.funcsByName() {
		if f.Decl != nil && f.Decl.Body != nil {
			e.neverAssigned(f.Locals, nil, f.Decl.Body)
		}
	}
	e.globalsNeverAssigned()
}

// globalsNeverAssigned warns about globals read but never written nor
// initialized (by the script or -G), with the similar names among the
// other public globals (stap means to leave the variable's own name out,
// and lists it: "'counts' (similar: counts)").
func (e *elab) globalsNeverAssigned() {
	var names []string
	for _, g := range e.prog.Globals {
		if g.Decl == nil || !g.Decl.Private {
			names = append(names, g.Name)
		}
	}
	sort.Strings(names)
	for _, g := range e.prog.Globals {
		if g.Written || g.Init != nil || e.overridden(g.Name) {
			continue
		}
		e.rep.warnAt(varToken(g), neverAssigned("global", g.Name, names))
	}
}

// neverAssigned is the warning about a never-assigned variable, with the
// similar names among the sorted names but its own.
func neverAssigned(kind, name string, names []string) string {
	msg := fmt.Sprintf("never-assigned %s variable '%s'", kind, name)
	i := sort.SearchStrings(names, name)
	others := names
	if i < len(names) && names[i] == name {
		others = append(append(make([]string, 0, len(names)-1), names[:i]...), names[i+1:]...)
	}
	if s := probes.Similar(name, others); s != "" {
		msg += " (similar: " + s + ")"
	}
	return msg
}

func (e *elab) overridden(name string) bool {
	for _, o := range e.opts.Overrides {
		if n, _, _ := strings.Cut(o, "="); n == name {
			return true
		}
	}
	return false
}

// neverAssigned warns about the locals body reads and never writes,
// suggesting similar names among its locals and pruned, the names of its
// locals the pruning left out.
func (e *elab) neverAssigned(locals []*syntax.Var, pruned []string, body syntax.Node) {
	var names []string // sorted once: a body may have thousands
	warned := map[*syntax.Var]bool{}
	syntax.Walk(body, func(n syntax.Node) bool {
		id, ok := n.(*syntax.Ident)
		if !ok || id.Var == nil || id.Var.Kind != syntax.VarLocal || id.Var.Written || warned[id.Var] {
			return true
		}
		warned[id.Var] = true
		if names == nil {
			names = localNames(locals, pruned)
		}
		e.rep.warnAt(id, neverAssigned("local", id.Name, names))
		return true
	})
}

// localNames are the sorted names of the locals and pruned, each once.
func localNames(locals []*syntax.Var, pruned []string) []string {
	names := append([]string{}, pruned...)
	for _, v := range locals {
		if v.Kind == syntax.VarLocal {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

type elider struct {
	e        *elab
	mode     elideMode
	pure     map[*syntax.Func]bool
	visiting map[*syntax.Func]bool
	// stmtTok is the first token of the statement an elided assignment left
	// behind (its right-hand side), which stap blames if that goes too.
	stmtTok map[*syntax.ExprStmt]syntax.Node
}

type elideMode int

const (
	elideAssignments elideMode = iota
	elideExpressions
	reduceStatements
)

// block elides the statements of b (and of the blocks nested in it).
func (el *elider) block(b *syntax.Block) {
	kept := b.Stmts[:0]
	for _, s := range b.Stmts {
		if s = el.stmt(s); s != nil {
			kept = append(kept, s)
		}
	}
	b.Stmts = kept
}

// stmt returns the statement to keep, nil to drop it.
func (el *elider) stmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.Block:
		el.block(s)
		if len(s.Stmts) == 0 {
			return nil
		}
	case *syntax.NullStmt:
		return nil
	case *syntax.ExprStmt:
		return el.exprStmt(s)
	case *syntax.IfStmt:
		s.Then = el.keepEmpty(s.Then)
		if s.Else != nil {
			s.Else = el.stmt(s.Else)
		}
		if el.mode == elideExpressions && s.Else == nil && isEmptyBlock(s.Then) {
			return el.emptyIf(s)
		}
	case *syntax.WhileStmt:
		s.Body = el.keepEmpty(s.Body)
		if el.idleLoop(s.Body, s.Cond) {
			return nil
		}
	case *syntax.ForStmt:
		s.Body = el.keepEmpty(s.Body)
		if el.idleLoop(s.Body, s.Init, s.Cond, s.Post) {
			return nil
		}
	case *syntax.ForeachStmt:
		s.Body = el.keepEmpty(s.Body)
		if el.idleLoop(s.Body) { // stap leaves its limit out
			return nil
		}
	case *syntax.TryStmt:
		el.block(s.Body)
		el.block(s.Catch)
	}
	return s
}

// keepEmpty elides inside a statement that must stay (a loop or branch body).
// idleLoop tells whether stap elides a loop, silently: its body does
// nothing and its clauses (nil where absent) have no side effects. An
// endless loop goes too (stap's dead_stmtexpr_remover).
func (el *elider) idleLoop(body syntax.Stmt, clauses ...syntax.Expr) bool {
	if el.mode != elideExpressions || !isEmptyBlock(body) {
		return false
	}
	for _, x := range clauses {
		if x != nil && !el.sideEffectFree(x) {
			return false
		}
	}
	return true
}

// emptyIf is what stap keeps of an if statement with nothing to do in
// either branch: nothing, silently, when its condition has no side
// effects, else its condition as a statement.
func (el *elider) emptyIf(s *syntax.IfStmt) syntax.Stmt {
	if el.sideEffectFree(s.Cond) {
		return nil
	}
	return &syntax.ExprStmt{X: s.Cond}
}

func isEmptyBlock(s syntax.Stmt) bool {
	b, ok := s.(*syntax.Block)
	return ok && len(b.Stmts) == 0
}

func (el *elider) keepEmpty(s syntax.Stmt) syntax.Stmt {
	if k := el.stmt(s); k != nil {
		return k
	}
	return &syntax.Block{Pos: s.Position()}
}

func (el *elider) exprStmt(s *syntax.ExprStmt) syntax.Stmt {
	switch el.mode {
	case elideAssignments:
		if a, ok := s.X.(*syntax.Assign); ok && pureWrite(a.Op) {
			if v := lvalueVar(a.LHS); v != nil && v.Kind == syntax.VarLocal && !v.Read {
				el.e.warnUser(a, fmt.Sprintf("Eliding assignment to '%s'", v.Name))
				rest := &syntax.ExprStmt{X: a.RHS}
				el.stmtTok[rest] = el.tokenOf(s)
				return rest
			}
		}
	case elideExpressions:
		if el.sideEffectFree(s.X) {
			el.e.warnUser(el.tokenOf(s), "Eliding side-effect-free expression ")
			return nil
		}
	case reduceStatements:
		if r := el.reduce(s.X); r != nil {
			return r
		}
	}
	return s
}

// reduce rewrites an expression whose value is unused into statements that
// only evaluate what matters (stap's void_statement_reducer): the operands of
// an operator or of a call of a pure function, in order; `a && b` becomes
// `if (a) b`, `a || b` becomes `if (!a) b`, `c ? x : y` becomes
// `if (c) x else y`. It returns nil when x stays as it is.
func (el *elider) reduce(x syntax.Expr) syntax.Stmt {
	pos := x.Position()
	switch x := x.(type) {
	case *syntax.Binary:
		switch x.Op {
		case "&&":
			return &syntax.IfStmt{Pos: pos, Cond: x.X, Then: &syntax.ExprStmt{X: x.Y}}
		case "||":
			not := &syntax.Unary{Typed: syntax.Typed{Pos: pos}, Op: "!", X: x.X}
			return &syntax.IfStmt{Pos: pos, Cond: not, Then: &syntax.ExprStmt{X: x.Y}}
		}
		return exprBlock(pos, x.X, x.Y)
	case *syntax.Unary:
		return &syntax.ExprStmt{X: x.X}
	case *syntax.Ternary:
		return &syntax.IfStmt{Pos: pos, Cond: x.Cond, Then: &syntax.ExprStmt{X: x.Then}, Else: &syntax.ExprStmt{X: x.Else}}
	case *syntax.Call:
		if len(x.Args) > 0 && el.pureFunc(x.Func) {
			return exprBlock(pos, x.Args...)
		}
	}
	return nil
}

func exprBlock(pos syntax.Pos, xs ...syntax.Expr) *syntax.Block {
	b := &syntax.Block{Pos: pos}
	for _, x := range xs {
		b.Stmts = append(b.Stmts, &syntax.ExprStmt{X: x})
	}
	return b
}

func (el *elider) tokenOf(s *syntax.ExprStmt) syntax.Node {
	if t := el.stmtTok[s]; t != nil {
		return t
	}
	return firstToken(s.X)
}

// firstToken returns the leftmost node of an expression: where stap's
// statement token is.
func firstToken(x syntax.Expr) syntax.Node {
	switch x := x.(type) {
	case *syntax.Binary:
		return firstToken(x.X)
	case *syntax.Assign:
		return firstToken(x.LHS)
	case *syntax.Ternary:
		return firstToken(x.Cond)
	case *syntax.Index:
		return firstToken(x.Array)
	case *syntax.IncDec:
		if !x.Prefix {
			return firstToken(x.X)
		}
	case *syntax.In:
		if len(x.Keys) == 1 {
			return firstToken(x.Keys[0])
		}
	}
	return x
}

// sideEffectFree reports whether evaluating x changes nothing: no assignment,
// no output, no call of a function that has effects.
func (el *elider) sideEffectFree(x syntax.Node) bool {
	free := true
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.IncDec: // ++1 writes nothing
			free = !assignable(n.X)
		case *syntax.Assign, *syntax.DeleteStmt,
			*syntax.EmbeddedExpr, *syntax.EmbeddedCode, *syntax.ReturnStmt, *syntax.NextStmt,
			*syntax.BreakStmt, *syntax.ContinueStmt:
			free = false
		case *syntax.PrintCall:
			free = toString(n)
		case *syntax.Call:
			if !el.pureFunc(n.Func) {
				free = false
			}
		}
		return free
	})
	return free
}

// toString tells whether a print-family call returns its text (sprintf,
// sprint, ...) rather than printing it: stap counts only printing as an
// effect.
func toString(p *syntax.PrintCall) bool { return strings.HasPrefix(p.Name, "s") }

// pureFunc reports whether a function has no effects besides its result:
// a builtin stap's tapset declares pure, or a script function that writes
// no global and calls only pure functions.
func (el *elider) pureFunc(f *syntax.Func) bool {
	if f != nil && f.Builtin != "" {
		b := tapset.Builtins[f.Builtin]
		return b != nil && !b.SideEffects
	}
	if f == nil || f.Decl == nil || f.Decl.Body == nil {
		return false
	}
	if p, ok := el.pure[f]; ok {
		return p
	}
	if el.visiting[f] {
		return false
	}
	el.visiting[f] = true
	p := true
	syntax.Walk(f.Decl.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ReturnStmt:
			if n.Value != nil && !el.sideEffectFree(n.Value) {
				p = false
			}
			return false
		case *syntax.Assign, *syntax.IncDec:
			if v := lvalueVar(assignTarget(n)); v == nil || v.Kind == syntax.VarGlobal {
				p = false
			}
		case *syntax.PrintCall:
			p = toString(n)
		case *syntax.DeleteStmt, *syntax.EmbeddedExpr:
			p = false
		case *syntax.Call:
			if !el.pureFunc(n.Func) {
				p = false
			}
		}
		return p
	})
	el.pure[f] = p
	delete(el.visiting, f)
	return p
}

func assignTarget(n syntax.Node) syntax.Expr {
	switch n := n.(type) {
	case *syntax.Assign:
		return n.LHS
	case *syntax.IncDec:
		return n.X
	}
	return nil
}

// warnUser warns about code of the user's script; stap keeps quiet about
// what it elides in tapset code (alias bodies such as syscall_any's, the
// prologues of the syscall family).
func (e *elab) warnUser(n syntax.Node, msg string) {
	src := n.Position().Src
	for _, f := range e.prog.Files[:e.userFiles] {
		if f.Src == src && !f.Tapset {
			e.rep.warnAt(n, msg)
			return
		}
	}
}
