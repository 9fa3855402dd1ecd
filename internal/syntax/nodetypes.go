package syntax

// NodeTypes are the types a Node (an Expr, Stmt or Decl) may hold, each
// as a nil pointer of it: what a copy of a tree by reflection needs to
// know (internal/snapshot). TestNodeTypesAreEveryNode holds the list to
// the package's types.
func NodeTypes() []any {
	return []any{
		(*File)(nil), (*ProbeDecl)(nil), (*AliasDecl)(nil), (*FuncDecl)(nil), (*Param)(nil),
		(*GlobalDecl)(nil), (*EmbeddedCode)(nil), (*ProbePoint)(nil), (*Component)(nil),
		(*Block)(nil), (*ExprStmt)(nil), (*NullStmt)(nil), (*IfStmt)(nil), (*WhileStmt)(nil),
		(*ForStmt)(nil), (*ForeachStmt)(nil), (*BreakStmt)(nil), (*ContinueStmt)(nil),
		(*NextStmt)(nil), (*ReturnStmt)(nil), (*DeleteStmt)(nil), (*TryStmt)(nil),
		(*NumberLit)(nil), (*StringLit)(nil), (*Ident)(nil), (*Star)(nil), (*Index)(nil),
		(*Unary)(nil), (*IncDec)(nil), (*Binary)(nil), (*Assign)(nil), (*Ternary)(nil),
		(*In)(nil), (*Call)(nil), (*PrintCall)(nil), (*StatOp)(nil), (*Hist)(nil),
		(*TargetVar)(nil), (*Cast)(nil), (*AtVar)(nil), (*Entry)(nil), (*Defined)(nil),
		(*AtOp)(nil), (*Autocast)(nil), (*EmbeddedExpr)(nil), (*TargetComponent)(nil),
	}
}
