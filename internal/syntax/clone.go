package syntax

import "fmt"

// Clone returns a deep copy of x, a node (nil clones to nil) or a list of
// probe point components: every tree node is copied, while sources and
// resolved symbols (Source, Var, Func) stay shared with the original. It
// knows each node's fields, as forEachChild does; TestCloneCopiesEveryNode
// holds it to a copy by reflection, which took a quarter of the
// elaboration of syscall.*.return (360 aliases' bodies copied).
func Clone[T any](x T) T {
	var c any
	switch v := any(x).(type) {
	case []*Component:
		c = cloneList(v, cloneComponent)
	case Node:
		c = cloneNode(v)
	case nil:
	default:
		panic(fmt.Sprintf("syntax.Clone of a %T", x))
	}
	if c == nil {
		var zero T
		return zero
	}
	return c.(T)
}

// cloneNode copies a node of any kind.
func cloneNode(n Node) Node {
	switch n := n.(type) {
	case Expr:
		return cloneExpr(n)
	case Stmt:
		return cloneStmt(n)
	case Decl:
		return cloneDecl(n)
	case *File:
		return ptr(n, func(c *File) { c.Decls = cloneList(n.Decls, cloneDecl) })
	case *ProbePoint:
		return cloneProbePoint(n)
	case *Component:
		return cloneComponent(n)
	case *Param:
		return ptr(n, nil)
	case *EmbeddedCode:
		return ptr(n, nil)
	case *TargetComponent:
		return cloneTargetComponent(n)
	case nil:
		return nil
	}
	panic(fmt.Sprintf("syntax.Clone of a %T", n))
}

// ptr copies *n into a new node and lets fix replace its children by
// copies; a nil n stays nil.
func ptr[N any](n *N, fix func(*N)) *N {
	if n == nil {
		return nil
	}
	c := *n
	if fix != nil {
		fix(&c)
	}
	return &c
}

// cloneList copies a list element by element; nil stays nil.
func cloneList[E any](list []E, clone func(E) E) []E {
	if list == nil {
		return nil
	}
	c := make([]E, len(list))
	for i, x := range list {
		c[i] = clone(x)
	}
	return c
}

func cloneDecl(d Decl) Decl {
	switch d := d.(type) {
	case *ProbeDecl:
		return ptr(d, func(c *ProbeDecl) {
			c.Points, c.Body = cloneList(d.Points, cloneProbePoint), cloneBlock(d.Body)
		})
	case *AliasDecl:
		return ptr(d, func(c *AliasDecl) {
			c.Names, c.Points, c.Body = cloneList(d.Names, cloneProbePoint), cloneList(d.Points, cloneProbePoint), cloneBlock(d.Body)
		})
	case *FuncDecl:
		return ptr(d, func(c *FuncDecl) {
			c.Params, c.Body, c.Embedded = cloneList(d.Params, func(p *Param) *Param { return ptr(p, nil) }), cloneBlock(d.Body), ptr(d.Embedded, nil)
		})
	case *GlobalDecl:
		return ptr(d, func(c *GlobalDecl) { c.Init = cloneExpr(d.Init) })
	case nil:
		return nil
	}
	panic(fmt.Sprintf("syntax.Clone of a %T", d))
}

func cloneProbePoint(p *ProbePoint) *ProbePoint {
	return ptr(p, func(c *ProbePoint) { c.Components, c.Cond = cloneList(p.Components, cloneComponent), cloneExpr(p.Cond) })
}

func cloneComponent(p *Component) *Component {
	return ptr(p, func(c *Component) { c.Arg = cloneExpr(p.Arg) })
}

func cloneTargetComponent(p *TargetComponent) *TargetComponent {
	return ptr(p, func(c *TargetComponent) { c.Index = cloneExpr(p.Index) })
}

func cloneBlock(b *Block) *Block {
	return ptr(b, func(c *Block) { c.Stmts = cloneList(b.Stmts, cloneStmt) })
}

func cloneIdent(x *Ident) *Ident { return ptr(x, nil) }

func cloneStringLit(x *StringLit) *StringLit { return ptr(x, nil) }

func cloneStmt(s Stmt) Stmt {
	switch s := s.(type) {
	case *Block:
		return cloneBlock(s)
	case *ExprStmt:
		return ptr(s, func(c *ExprStmt) { c.X = cloneExpr(s.X) })
	case *NullStmt:
		return ptr(s, nil)
	case *IfStmt:
		return ptr(s, func(c *IfStmt) { c.Cond, c.Then, c.Else = cloneExpr(s.Cond), cloneStmt(s.Then), cloneStmt(s.Else) })
	case *WhileStmt:
		return ptr(s, func(c *WhileStmt) { c.Cond, c.Body = cloneExpr(s.Cond), cloneStmt(s.Body) })
	case *ForStmt:
		return ptr(s, func(c *ForStmt) {
			c.Init, c.Cond, c.Post, c.Body = cloneExpr(s.Init), cloneExpr(s.Cond), cloneExpr(s.Post), cloneStmt(s.Body)
		})
	case *ForeachStmt:
		return ptr(s, func(c *ForeachStmt) {
			c.Value, c.Keys, c.Array = cloneIdent(s.Value), cloneList(s.Keys, cloneIdent), cloneExpr(s.Array)
			c.Slice, c.Limit, c.Body = cloneList(s.Slice, cloneExpr), cloneExpr(s.Limit), cloneStmt(s.Body)
		})
	case *BreakStmt:
		return ptr(s, nil)
	case *ContinueStmt:
		return ptr(s, nil)
	case *NextStmt:
		return ptr(s, nil)
	case *ReturnStmt:
		return ptr(s, func(c *ReturnStmt) { c.Value = cloneExpr(s.Value) })
	case *DeleteStmt:
		return ptr(s, func(c *DeleteStmt) { c.Target = cloneExpr(s.Target) })
	case *TryStmt:
		return ptr(s, func(c *TryStmt) {
			c.Body, c.CatchVar, c.Catch = cloneBlock(s.Body), cloneIdent(s.CatchVar), cloneBlock(s.Catch)
		})
	case nil:
		return nil
	}
	panic(fmt.Sprintf("syntax.Clone of a %T", s))
}

func cloneExpr(e Expr) Expr {
	switch e := e.(type) {
	case *NumberLit:
		return ptr(e, nil)
	case *StringLit:
		return cloneStringLit(e)
	case *Ident:
		return cloneIdent(e)
	case *Star:
		return ptr(e, nil)
	case *EmbeddedExpr:
		return ptr(e, nil)
	case *Index:
		return ptr(e, func(c *Index) { c.Array, c.Keys = cloneExpr(e.Array), cloneList(e.Keys, cloneExpr) })
	case *Unary:
		return ptr(e, func(c *Unary) { c.X = cloneExpr(e.X) })
	case *IncDec:
		return ptr(e, func(c *IncDec) { c.X = cloneExpr(e.X) })
	case *Binary:
		return ptr(e, func(c *Binary) { c.X, c.Y = cloneExpr(e.X), cloneExpr(e.Y) })
	case *Assign:
		return ptr(e, func(c *Assign) { c.LHS, c.RHS = cloneExpr(e.LHS), cloneExpr(e.RHS) })
	case *Ternary:
		return ptr(e, func(c *Ternary) { c.Cond, c.Then, c.Else = cloneExpr(e.Cond), cloneExpr(e.Then), cloneExpr(e.Else) })
	case *In:
		return ptr(e, func(c *In) { c.Keys, c.Array = cloneList(e.Keys, cloneExpr), cloneExpr(e.Array) })
	case *Call:
		return ptr(e, func(c *Call) { c.Args = cloneList(e.Args, cloneExpr) })
	case *PrintCall:
		return ptr(e, func(c *PrintCall) {
			c.Format, c.Delim, c.Args = cloneStringLit(e.Format), cloneStringLit(e.Delim), cloneList(e.Args, cloneExpr)
		})
	case *StatOp:
		return ptr(e, func(c *StatOp) { c.X, c.Args = cloneExpr(e.X), cloneList(e.Args, cloneExpr) })
	case *Hist:
		return ptr(e, func(c *Hist) {
			c.X, c.Start, c.Stop, c.Interval = cloneExpr(e.X), cloneExpr(e.Start), cloneExpr(e.Stop), cloneExpr(e.Interval)
		})
	case *TargetVar:
		return ptr(e, func(c *TargetVar) { c.Components = cloneList(e.Components, cloneTargetComponent) })
	case *Cast:
		return ptr(e, func(c *Cast) {
			c.Operand, c.Components = cloneExpr(e.Operand), cloneList(e.Components, cloneTargetComponent)
		})
	case *AtVar:
		return ptr(e, func(c *AtVar) { c.Components = cloneList(e.Components, cloneTargetComponent) })
	case *Autocast:
		return ptr(e, func(c *Autocast) {
			c.Operand, c.Components = cloneExpr(e.Operand), cloneList(e.Components, cloneTargetComponent)
		})
	case *Entry:
		return ptr(e, func(c *Entry) { c.X = cloneExpr(e.X) })
	case *Defined:
		return ptr(e, func(c *Defined) { c.X = cloneExpr(e.X) })
	case *AtOp:
		return ptr(e, func(c *AtOp) { c.Args = cloneList(e.Args, cloneExpr) })
	case nil:
		return nil
	}
	panic(fmt.Sprintf("syntax.Clone of a %T", e))
}
