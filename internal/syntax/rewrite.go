package syntax

// RewriteChildren replaces the direct expression and statement children of
// n — every field or slice element whose type is Expr or Stmt — by what
// expr and stmt return for them, storing only what differs; a child that
// is a *Block by its type (a try's body and catch, a declaration's body)
// is given to stmt to rewrite in place. Nil children are skipped. It
// knows each node's fields, as forEachChild does: a rewrite by
// reflection (the field's type checked against the interface at each
// store) took a sixth of the elaboration of syscall.*.
func RewriteChildren(n Node, expr func(Expr) Expr, stmt func(Stmt) Stmt) {
	x := func(ps ...*Expr) {
		for _, p := range ps {
			if *p != nil {
				if r := expr(*p); r != *p {
					*p = r
				}
			}
		}
	}
	xs := func(list []Expr) {
		for i := range list {
			x(&list[i])
		}
	}
	s := func(ps ...*Stmt) {
		for _, p := range ps {
			if *p != nil {
				if r := stmt(*p); r != *p {
					*p = r
				}
			}
		}
	}
	b := func(blocks ...*Block) {
		for _, blk := range blocks {
			if blk != nil {
				stmt(blk)
			}
		}
	}
	switch n := n.(type) {
	case *ProbeDecl:
		b(n.Body)
	case *AliasDecl:
		b(n.Body)
	case *FuncDecl:
		b(n.Body)
	case *GlobalDecl:
		x(&n.Init)
	case *ProbePoint:
		x(&n.Cond)
	case *Component:
		x(&n.Arg)
	case *Block:
		for i := range n.Stmts {
			s(&n.Stmts[i])
		}
	case *ExprStmt:
		x(&n.X)
	case *IfStmt:
		x(&n.Cond)
		s(&n.Then, &n.Else)
	case *WhileStmt:
		x(&n.Cond)
		s(&n.Body)
	case *ForStmt:
		x(&n.Init, &n.Cond, &n.Post)
		s(&n.Body)
	case *ForeachStmt:
		x(&n.Array)
		xs(n.Slice)
		x(&n.Limit)
		s(&n.Body)
	case *ReturnStmt:
		x(&n.Value)
	case *DeleteStmt:
		x(&n.Target)
	case *TryStmt:
		b(n.Body, n.Catch)
	case *Index:
		x(&n.Array)
		xs(n.Keys)
	case *Unary:
		x(&n.X)
	case *IncDec:
		x(&n.X)
	case *Binary:
		x(&n.X, &n.Y)
	case *Assign:
		x(&n.LHS, &n.RHS)
	case *Ternary:
		x(&n.Cond, &n.Then, &n.Else)
	case *In:
		xs(n.Keys)
		x(&n.Array)
	case *Call:
		xs(n.Args)
	case *PrintCall:
		xs(n.Args)
	case *StatOp:
		x(&n.X)
		xs(n.Args)
	case *Hist:
		x(&n.X, &n.Start, &n.Stop, &n.Interval)
	case *Cast:
		x(&n.Operand)
	case *Autocast:
		x(&n.Operand)
	case *Entry:
		x(&n.X)
	case *Defined:
		x(&n.X)
	case *AtOp:
		xs(n.Args)
	case *TargetComponent:
		x(&n.Index)
	}
}

// RewriteExprs replaces, in the tree rooted at n, every expression x for
// which fn returns a non-nil replacement (children first; a replacement is
// not visited again).
func RewriteExprs(n Node, fn func(x Expr) Expr) {
	if isNilNode(n) {
		return
	}
	RewriteChildren(n, func(x Expr) Expr {
		RewriteExprs(x, fn)
		if r := fn(x); r != nil {
			return r
		}
		return x
	}, func(s Stmt) Stmt {
		RewriteExprs(s, fn)
		return s
	})
}
