package sema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Symbol resolution. Each probe and function body is walked once with a scope:
// a name is a parameter, else a local already seen, else a global visible from
// the file (user globals first, then the library's, private ones only within
// their file), else a new local. Arrays must be globals. Calls resolve to a
// script function, then a library function, then a builtin.
//
// Library code is immune to the user's names: a name in tapset code (a
// Source marked Library) never resolves to a global the user declared, so
// `global s` cannot capture the local s of a tapset function, nor `global
// flags` the local a syscall alias computes. In the user's body of a probe
// derived from an alias, the alias's locals come first for scalars (`name`,
// `filename`, as in stap), but an array or a whole-array delete is the
// user's global even where the alias has a local of that name (`count[p]++`
// in syscall.read, whose alias computes a local count).

type scope struct {
	e      *elab
	file   *syntax.File
	locals map[string]*syntax.Var
	list   []*syntax.Var
	// cond is set while resolving a probe condition, where only globals
	// may appear; condErr is set once one was refused (stap stops there).
	cond, condErr bool
	// ctx resolves the context expressions of a kernel probe (context.go).
	ctx   *probes.Context
	probe *Probe
	// contextVars are the context variables the probe's alias defines, by
	// name (contextvars.go).
	contextVars map[string]*syntax.Call
	// entryCtx is, while a return probe's @defined are decided before its
	// @entry are paired, the context of the entries it pairs with.
	entryCtx *probes.Context
}

// A tapset file the program uses (one of its functions or globals) brings
// its probes along, as in stap (target_set.stp's fork and exit probes, for
// instance); those may use further files, so resolution runs to a fixpoint.
func (e *elab) resolveAll() {
	// probes resolved; files whose probes are derived (the user's already)
	resolved, derived := 0, e.userFiles
	for resolved < len(e.prog.Probes) || len(e.pending) > 0 || derived < len(e.prog.Files) {
		for ; resolved < len(e.prog.Probes); resolved++ {
			e.resolveProbe(e.prog.Probes[resolved])
		}
		for len(e.pending) > 0 {
			f := e.pending[0]
			e.pending = e.pending[1:]
			s := e.newScope(e.fileOf[f.Decl], f.Params)
			if e.castKernel() != nil { // its @cast resolve (context.go)
				s.pruneDefined(f.Decl.Body)
				s.expandPretty(f.Decl.Body)
			}
			s.lowerAtOps(f.Decl.Body)
			s.walk(f.Decl.Body)
			f.Locals = s.list
		}
		for ; derived < len(e.prog.Files); derived++ {
			e.deriveAll(e.prog.Files[derived : derived+1])
		}
	}
}

func (e *elab) resolveProbe(p *Probe) {
	s := e.newScope(e.fileOf[p.Decl], nil)
	s.ctx, s.probe = p.context, p
	if p.context != nil && e.kernel == nil {
		e.kernel = p.context.Kernel()
	}
	if s.ctx != nil {
		s.contextVars = contextVarDefs(p.Body)
		s.pruneDefined(p.Body)
		s.substituteContextVars(p.Body)
		s.expandPretty(p.Body)
	} else if e.castKernel() != nil { // a user-side probe's @cast resolve
		s.pruneDefined(p.Body)
		s.expandPretty(p.Body)
	}
	if isProcfs(p) {
		s.declareValue(p, p.Body)
	}
	s.lowerAtOps(p.Body)
	s.walk(p.Body)
	e.warnHiddenWrites(p)
	if s.ctx != nil {
		e.checkContextWrites(s.ctx, p.Body)
	}
	p.Locals = s.list
	if p.Cond != nil {
		p.Cond = s.lowerAtOpsIn(p.Cond)
		e.resolveCondition(p.Cond, s.file)
	}
}

// resolveCondition resolves a probe condition: globals only, no calls.
func (e *elab) resolveCondition(c syntax.Expr, file *syntax.File) {
	s := e.newScope(file, nil)
	s.cond = true
	s.walk(c)
}

// refuseInCondition reports a name a probe condition may not use, once per condition.
func (s *scope) refuseInCondition(n syntax.Node, msg string) {
	if !s.condErr {
		s.e.rep.errorAt("condition", n, msg)
	}
	s.condErr = true
}

func (e *elab) newScope(file *syntax.File, params []*syntax.Var) *scope {
	s := &scope{e: e, file: file, locals: map[string]*syntax.Var{}}
	for _, p := range params {
		s.locals[p.Name] = p
		s.list = append(s.list, p)
	}
	return s
}

func (e *elab) globalFor(g *syntax.GlobalDecl) *syntax.Var {
	if v := e.globalVar[g]; v != nil {
		return v
	}
	v := &syntax.Var{Name: g.Name, Kind: syntax.VarGlobal, Pos: g.Pos, Decl: g, Init: g.Init,
		IsArray: g.IsArray, MaxEntries: g.Size, Wrap: g.Wrap}
	if g.Init != nil {
		v.Type = g.Init.Type()
		if v.Type == syntax.TypeUnknown {
			v.Type = literalType(g.Init)
		}
		g.Init.SetType(v.Type)
		v.TypePos = g.Init.Position()
	}
	g.Var = v
	e.globalVar[g] = v
	e.prog.Globals = append(e.prog.Globals, v)
	e.useFile(e.fileOf[g])
	return v
}

func literalType(x syntax.Expr) syntax.Type {
	if _, ok := x.(*syntax.StringLit); ok {
		return syntax.TypeString
	}
	return syntax.TypeLong
}

// lookupGlobal finds the global name visible from code in src, or nil.
// Library code sees only the library's globals (and those sema declares).
func (e *elab) lookupGlobal(name string, src *syntax.Source) *syntax.Var {
	if g := e.findGlobal(name, src); g != nil {
		return e.globalFor(g)
	}
	return nil
}

// findGlobal finds the declaration of the global name visible from code
// in src, as lookupGlobal does, without resolving it; nil when none is.
func (e *elab) findGlobal(name string, src *syntax.Source) *syntax.GlobalDecl {
	library := src != nil && src.Library
	for _, g := range e.globals[name] {
		f := e.fileOf[g]
		if library && f != nil && !f.Tapset {
			continue
		}
		if visible(g.Private, f, src) {
			return g
		}
	}
	return nil
}

// arrayLocal is the local an array operand (or a whole-array delete) names:
// nil when there is none, or when it is an alias's local named in the user's
// code, which then means the user's global.
func (s *scope) arrayLocal(id *syntax.Ident) *syntax.Var {
	v := s.locals[id.Name]
	if v == nil || !aliasLocalInUserCode(v, id) {
		return v
	}
	return nil
}

// aliasLocalInUserCode tells whether v is a local the library's code made
// (an alias's prologue: syscall.read's count) and id is the user's code
// naming it.
func aliasLocalInUserCode(v *syntax.Var, id *syntax.Ident) bool {
	return v.Pos.Src != nil && v.Pos.Src.Library && id.Pos.Src != nil && !id.Pos.Src.Library
}

// warnHiddenWrites warns where the user's code of p
// assigns an alias's local while the user's script has a global of that
// name, which the alias's code does not see: `global count; probe
// syscall.* { count++ }` counts in syscall.read's local, and the global
// stays 0 (in stap the alias's code assigns the global too). Reading the
// alias's local is what stap's code reads, and says nothing. (Repeats
// are suppressed without -v, as stap's.)
func (e *elab) warnHiddenWrites(p *Probe) {
	syntax.Walk(p.Body, func(n syntax.Node) bool {
		id, ok := assignTarget(n).(*syntax.Ident)
		if !ok || id.Var == nil || !aliasLocalInUserCode(id.Var, id) || e.findGlobal(id.Name, id.Pos.Src) == nil {
			return true
		}
		e.rep.warnAt(id, fmt.Sprintf("'%s' here is the local the alias sets at %s, not the global '%s', which the library's code does not see (rename the global)", id.Name, id.Var.Pos, id.Name))
		return true
	})
}

func (s *scope) walk(n syntax.Node) {
	syntax.Walk(n, s.visit)
}

func (s *scope) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Ident:
		s.variable(n)
	case *syntax.Index:
		s.array(n.Array, len(n.Keys))
	case *syntax.In:
		s.array(n.Array, len(n.Keys))
	case *syntax.ForeachStmt:
		return s.foreach(n)
	case *syntax.Call:
		s.call(n)
	case *syntax.Defined:
		return s.defined(n)
	case *syntax.TargetVar:
		return s.context(n)
	case *syntax.Cast:
		return s.context(n)
	case *syntax.AtVar:
		return s.context(n)
	case *syntax.DeleteStmt:
		return s.deleteTarget(n.Target)
	case *syntax.AtOp: // what lowerAtOps leaves
		s.e.rep.errorAt("atop", n, "unexpected @probewrite")
		return false
	case *syntax.EmbeddedExpr:
		s.e.rep.errorAt("embedded", n, embeddedMsg)
		return false
	case *syntax.EmbeddedCode:
		s.e.rep.errorAt("embedded", n, embeddedMsg)
		return false
	}
	return true
}

// defined resolves @defined(X): ordinary operands are walked; a context
// expression is left unresolved, so that constant folding makes it 0 (a
// kernel probe's, and a @cast, were decided before, defined.go). An
// autocast's operand is resolved, so that the autocast resolves when its
// operand's type is known (autocast.go) and folding makes it 1.
func (s *scope) defined(n *syntax.Defined) bool {
	n.SetType(syntax.TypeLong)
	if a, ok := n.X.(*syntax.Autocast); ok {
		s.walk(a.Operand)
	}
	return !isContextExpr(n.X)
}

// deleteTarget resolves the operand of delete: a whole array, an element or
// a scalar.
func (s *scope) deleteTarget(x syntax.Expr) bool {
	id, ok := x.(*syntax.Ident)
	if !ok {
		return true
	}
	if v := s.arrayLocal(id); v != nil {
		id.Var = v
	} else if v := s.e.lookupGlobal(id.Name, id.Pos.Src); v != nil {
		id.Var = v
	} else {
		s.variable(id)
	}
	return false
}

func (s *scope) variable(id *syntax.Ident) {
	if id.Var != nil {
		return
	}
	if v := s.locals[id.Name]; v != nil {
		id.Var = v
		return
	}
	if v := s.e.lookupGlobal(id.Name, id.Pos.Src); v != nil {
		id.Var = v
		s.e.setArity(v, 0, id)
		return
	}
	if s.cond {
		s.refuseInCondition(id, "probe condition must not reference undeclared global")
		return
	}
	v := &syntax.Var{Name: id.Name, Kind: syntax.VarLocal, Pos: id.Pos, Index: len(s.list)}
	s.locals[id.Name] = v
	s.list = append(s.list, v)
	id.Var = v
}

// foreach resolves the array and the keys of a foreach, and checks that a
// slice has a key for every key variable. stap resolves nothing more of a
// foreach whose slice does not: its value, limit and body are skipped.
func (s *scope) foreach(n *syntax.ForeachStmt) bool {
	resolved := s.array(n.Array, len(n.Keys))
	for _, k := range n.Keys { // keys are declared before the value
		s.variable(k)
	}
	if !resolved || len(n.Slice) == 0 || len(n.Slice) == len(n.Keys) {
		return true
	}
	for _, x := range n.Slice {
		s.walk(x)
	}
	id := n.Array.(*syntax.Ident)
	s.e.rep.errorAt("slicearity", id, unresolvedArray(len(n.Slice), mangledName(id.Var)))
	return false
}

func unresolvedArray(arity int, name string) string {
	return fmt.Sprintf("unresolved arity-%d global array %s, missing global declaration?", arity, name)
}

// array resolves the array operand of an index, `in` or foreach, and tells
// whether it is a global array used with a consistent arity.
func (s *scope) array(x syntax.Expr, arity int) bool {
	id, ok := x.(*syntax.Ident)
	if !ok || id.Var != nil {
		return ok && id.Var.Kind == syntax.VarGlobal
	}
	if v := s.arrayLocal(id); v != nil && v.Kind != syntax.VarGlobal {
		s.e.rep.errorAt("localarray", id, unresolvedArray(arity, id.Name))
		id.Var = v
		return false
	}
	v := s.e.lookupGlobal(id.Name, id.Pos.Src)
	if v == nil {
		s.e.rep.errorAt("localarray", id, unresolvedArray(arity, id.Name))
		v = &syntax.Var{Name: id.Name, Kind: syntax.VarLocal, Pos: id.Pos}
	}
	id.Var = v
	return s.e.setArity(v, arity, id)
}

// setArity records how many keys global v is used with (0 for a scalar), or
// reports the use that disagrees with the first; it tells whether v is a
// global used consistently.
func (e *elab) setArity(v *syntax.Var, n int, at syntax.Node) bool {
	if v.Kind != syntax.VarGlobal {
		return false
	}
	if n == 0 && v.Decl != nil && v.Decl.Size > 0 {
		e.rep.errorAt("arity0", v.Decl, "inconsistent arity")
		return false
	}
	first := e.arityAt[v]
	if first == nil {
		e.arityAt[v] = at
		v.IsArray = n > 0
		v.Keys = make([]syntax.Type, n)
		return true
	}
	if len(v.Keys) != n {
		c := note(first, fmt.Sprintf("arity %d first inferred here", len(v.Keys)))
		c.origin = "arityfirst"
		e.rep.errorAt("arity", at, fmt.Sprintf("inconsistent arity (%d vs %d)", len(v.Keys), n), c)
		return false
	}
	return true
}

func (s *scope) call(c *syntax.Call) {
	if c.Func != nil {
		return
	}
	if s.cond {
		s.refuseInCondition(c, "probe condition must not reference function")
		return
	}
	f, decl := s.e.lookupFunc(c.Name, len(c.Args), c.Pos.Src)
	if f == nil {
		s.e.rep.errorAt("nofunc", c, s.e.unresolvedFunc(c.Name))
		return
	}
	c.Func = f
	if b := tapset.Builtins[f.Builtin]; b != nil && b.Guru && !s.e.opts.Guru {
		s.e.rep.errorAt("guru", c, tapset.GuruOnlyMsg)
	}
	if len(f.Params) != len(c.Args) {
		msg := fmt.Sprintf("arity mismatch found (function '%s' takes %d args)", c.Name, len(f.Params))
		var chain []*Diagnostic
		if decl != nil {
			chain = append(chain, &Diagnostic{Tok: describe(decl), Pos: decl.NamePos})
		}
		s.e.rep.errorAt("arity", c, msg, chain...)
	}
}

func (e *elab) unresolvedFunc(name string) string {
	msg := "unresolved function " + name
	if s := probes.Similar(name, e.functionNames()); s != "" {
		msg += " (similar: " + s + ")"
	}
	return msg
}

// functionNames lists every function's name, sorted (elab.funcNames).
func (e *elab) functionNames() []string {
	if e.funcNames != nil {
		return e.funcNames
	}
	names := map[string]bool{}
	for n := range e.userFuncs {
		names[n] = true
	}
	for n := range e.libFuncs {
		names[n] = true
	}
	for n := range tapset.Builtins {
		names[n] = !strings.HasPrefix(n, "@") // an operator's (atops.go), no function to suggest
	}
	e.funcNames = make([]string, 0, len(names))
	for n, ok := range names {
		if ok {
			e.funcNames = append(e.funcNames, n)
		}
	}
	sort.Strings(e.funcNames)
	return e.funcNames
}

// lookupFunc finds the function a call names: the script's, then the library's
// (visible from code in src), then a builtin. Among overloads it prefers the one whose
// arity matches, a builtin included (the library's user_string(addr, err_msg)
// overloads the builtin user_string(addr)).
func (e *elab) lookupFunc(name string, nargs int, src *syntax.Source) (*syntax.Func, *syntax.FuncDecl) {
	d, b := e.findFunc(name, nargs, src)
	switch {
	case b != nil:
		return e.builtin(name), nil
	case d != nil:
		return e.funcFor(d), d
	}
	return nil, nil
}

// findFunc finds what a call of name with nargs arguments from code of
// src calls, as resolution does (lookupFunc), without resolving it: a
// script or library function's declaration, or a builtin.
func (e *elab) findFunc(name string, nargs int, src *syntax.Source) (*syntax.FuncDecl, *tapset.Builtin) {
	var first *syntax.FuncDecl
	for _, table := range []map[string][]*syntax.FuncDecl{e.userFuncs, e.libFuncs} {
		for _, d := range table[name] {
			if !visible(d.Private, e.fileOf[d], src) {
				continue
			}
			if len(d.Params) == nargs {
				return d, nil
			}
			if first == nil {
				first = d
			}
		}
	}
	if b := tapset.Builtins[name]; b != nil && (first == nil || len(b.Params) == nargs) {
		return nil, b
	}
	return first, nil
}

// funcFor returns the Func of a declaration, creating it (and queueing its body
// for resolution) on first use.
func (e *elab) funcFor(d *syntax.FuncDecl) *syntax.Func {
	if f := e.funcs[d]; f != nil {
		return f
	}
	f := &syntax.Func{Name: d.Name, Decl: d, Result: d.Result}
	for i, p := range d.Params {
		v := &syntax.Var{Name: p.Name, Kind: syntax.VarParam, Pos: p.Pos, Type: p.Type, Index: i}
		if p.Type != syntax.TypeUnknown {
			v.TypePos = p.Pos
		}
		p.Var = v
		f.Params = append(f.Params, v)
	}
	e.funcs[d] = f
	e.useFile(e.fileOf[d])
	e.prog.Funcs = append(e.prog.Funcs, f)
	switch {
	case d.Embedded != nil && tapset.Builtins[d.Name] != nil:
		f.Builtin = d.Name
	case d.Embedded != nil:
		e.rep.errorAt("embedded", d.Embedded, embeddedMsg)
	default:
		e.pending = append(e.pending, f)
	}
	return f
}
