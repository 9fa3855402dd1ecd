package syntax

import (
	"io"
	"strconv"
	"strings"
)

// This file prints trees in the format of stap's pass-1 dump (`stap -p1`):
// every operand parenthesised, statements one per line ending in ";",
// declarations grouped as embedded code, globals, aliases, probes, functions.

// Fprint writes the parse tree dump of f exactly as `stap -p1` prints it for a
// single script: the "# parse tree dump" header, then the file.
func Fprint(w io.Writer, f *File) error {
	_, err := io.WriteString(w, "# parse tree dump\n"+FileString(f))
	return err
}

// FileString renders one file of the dump: "# file NAME" and its declarations,
// followed by the blank line stap ends each file with.
func FileString(f *File) string {
	var pr printer
	name := ""
	if f.Src != nil {
		name = f.Src.Name
	}
	pr.s("# file " + name + "\n")
	groups := [5][]Decl{}
	for _, d := range f.Decls {
		switch d.(type) {
		case *EmbeddedCode:
			groups[0] = append(groups[0], d)
		case *GlobalDecl:
			groups[1] = append(groups[1], d)
		case *AliasDecl:
			groups[2] = append(groups[2], d)
		case *ProbeDecl:
			groups[3] = append(groups[3], d)
		case *FuncDecl:
			groups[4] = append(groups[4], d)
		}
	}
	for _, g := range groups {
		for _, d := range g {
			pr.decl(d)
		}
	}
	pr.s("\n")
	return pr.String()
}

// ExprString renders an expression as stap's dumps do.
func ExprString(e Expr) string {
	var pr printer
	pr.expr(e)
	return pr.String()
}

// StmtString renders a statement as stap's dumps do (without the ";" a block adds).
func StmtString(s Stmt) string {
	var pr printer
	pr.stmt(s)
	return pr.String()
}

// ProbePointString renders a probe point with its `?`/`!` and condition.
func ProbePointString(pp *ProbePoint) string {
	var pr printer
	pr.point(pp)
	return pr.String()
}

// StringLitString renders a string literal as stap's dumps do: its raw
// spelling in double quotes, with only `"` escaped.
func StringLitString(s *StringLit) string {
	return `"` + strings.ReplaceAll(rawSpelling(s), `"`, `\"`) + `"`
}

// rawSpelling returns the literal as written, or an equivalent spelling for
// a literal made by the program rather than read.
func rawSpelling(s *StringLit) string {
	if s.Raw == "" {
		return encodeEscapes(s.Value)
	}
	return s.Raw
}

type printer struct {
	strings.Builder
}

func (pr *printer) s(parts ...string) {
	for _, p := range parts {
		pr.WriteString(p)
	}
}

func (pr *printer) decl(d Decl) {
	switch d := d.(type) {
	case *EmbeddedCode:
		pr.s("%{", d.Code, "%}")
	case *GlobalDecl:
		pr.s("global ", d.Name)
		if d.Wrap {
			pr.s("%")
		}
		if d.Size > 0 {
			pr.s("[", strconv.FormatInt(d.Size, 10), "]")
		}
		if d.Init != nil {
			pr.s(" = ")
			pr.expr(d.Init)
		}
		pr.s("\n")
	case *AliasDecl:
		pr.s("probe ")
		for i, n := range d.Names {
			if i > 0 {
				pr.s(" = ")
			}
			pr.point(n)
		}
		if d.Epilogue {
			pr.s(" += ")
		} else {
			pr.s(" = ")
		}
		pr.points(d.Points, ", ")
		pr.stmt(d.Body)
		pr.s("\n")
	case *ProbeDecl:
		pr.s("probe ")
		pr.points(d.Points, ",")
		pr.stmt(d.Body)
		pr.s("\n")
	case *FuncDecl:
		pr.s("function ", d.Name, " (")
		for i, p := range d.Params {
			if i > 0 {
				pr.s(", ")
			}
			pr.s(p.Name)
		}
		pr.s(")\n")
		if d.Embedded != nil {
			pr.decl(d.Embedded)
		} else {
			pr.stmt(d.Body)
		}
		pr.s("\n")
	}
}

func (pr *printer) points(pps []*ProbePoint, sep string) {
	for i, pp := range pps {
		if i > 0 {
			pr.s(sep)
		}
		pr.point(pp)
	}
}

func (pr *printer) point(pp *ProbePoint) {
	for i, c := range pp.Components {
		if i > 0 {
			pr.s(".")
		}
		pr.s(c.Name)
		if c.Arg != nil {
			pr.paren(c.Arg)
		}
	}
	if pp.Sufficient {
		pr.s("!")
	} else if pp.Optional {
		pr.s("?")
	}
	if pp.Cond != nil {
		pr.s(" if (")
		pr.expr(pp.Cond)
		pr.s(")")
	}
}

func (pr *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *Block:
		pr.s("{\n")
		for _, st := range s.Stmts {
			pr.stmt(st)
			pr.s(";\n")
		}
		pr.s("}")
	case *ExprStmt:
		pr.expr(s.X)
	case *NullStmt:
		pr.s(";")
	case *IfStmt:
		pr.s("if (")
		pr.expr(s.Cond)
		pr.s(") ")
		pr.stmt(s.Then)
		pr.s("\n")
		if s.Else != nil {
			pr.s("else ")
			pr.stmt(s.Else)
			pr.s("\n")
		}
	case *WhileStmt:
		pr.loop(nil, s.Cond, nil, s.Body)
	case *ForStmt:
		pr.loop(s.Init, s.Cond, s.Post, s.Body)
	case *ForeachStmt:
		pr.foreach(s)
	case *BreakStmt:
		pr.s("break")
	case *ContinueStmt:
		pr.s("continue")
	case *NextStmt:
		pr.s("next")
	case *ReturnStmt:
		pr.s("return")
		if s.Value != nil {
			pr.s(" ")
			pr.expr(s.Value)
		}
	case *DeleteStmt:
		pr.s("delete ")
		pr.expr(s.Target)
	case *TryStmt:
		pr.s("try {\n")
		pr.stmt(s.Body)
		pr.s("\n} catch ")
		if s.CatchVar != nil {
			pr.s("(", s.CatchVar.Name, ") ")
		}
		pr.s("{\n")
		pr.stmt(s.Catch)
		pr.s("\n}\n")
	case *EmbeddedCode:
		pr.decl(s)
	}
}

func (pr *printer) loop(init, cond, post Expr, body Stmt) {
	pr.s("for (")
	if init != nil {
		pr.expr(init)
	}
	pr.s("; ")
	if cond != nil {
		pr.expr(cond)
	} else {
		pr.s("1")
	}
	pr.s("; ")
	if post != nil {
		pr.expr(post)
	}
	pr.s(") ")
	pr.stmt(body)
}

func sortMark(dir int) string {
	if dir > 0 {
		return "+"
	}
	return "-"
}

func (pr *printer) foreach(s *ForeachStmt) {
	pr.s("foreach (")
	if s.Value != nil {
		pr.s(s.Value.Name, " = ")
	}
	pr.s("[")
	for i, k := range s.Keys {
		if i > 0 {
			pr.s(", ")
		}
		pr.s(k.Name)
		if s.SortDir != 0 && s.SortCol == i+1 {
			pr.s(sortMark(s.SortDir))
		}
	}
	pr.s("] in ")
	pr.expr(s.Array)
	if len(s.Slice) > 0 {
		pr.enclosed("[", s.Slice, "]")
	}
	if s.SortDir != 0 && s.SortCol == 0 {
		if s.SortAgg != "" && s.SortAgg != "variance" {
			pr.s(" @", s.SortAgg)
		}
		pr.s(sortMark(s.SortDir))
	}
	if s.Limit != nil {
		pr.s(" limit ")
		pr.expr(s.Limit)
	}
	pr.s(") ")
	pr.stmt(s.Body)
}

// enclosed prints open, the expressions separated by ", ", then close.
func (pr *printer) enclosed(open string, es []Expr, close string) {
	pr.s(open)
	for i, e := range es {
		if i > 0 {
			pr.s(", ")
		}
		pr.expr(e)
	}
	pr.s(close)
}

// paren prints "(" e ")".
func (pr *printer) paren(e Expr) {
	pr.s("(")
	pr.expr(e)
	pr.s(")")
}

func (pr *printer) expr(e Expr) {
	switch e := e.(type) {
	case *NumberLit:
		pr.s(strconv.FormatInt(e.Value, 10))
	case *StringLit:
		pr.s(StringLitString(e))
	case *Ident:
		pr.s(e.Name)
	case *Star:
		pr.s("*")
	case *Index:
		pr.expr(e.Array)
		pr.enclosed("[", e.Keys, "]")
	case *Unary:
		pr.s(e.Op)
		pr.paren(e.X)
	case *IncDec:
		if e.Prefix {
			pr.s(e.Op)
			pr.paren(e.X)
		} else {
			pr.paren(e.X)
			pr.s(e.Op)
		}
	case *Binary:
		pr.paren(e.X)
		pr.s(" ", e.Op, " ")
		if e.Op == "=~" || e.Op == "!~" {
			pr.expr(e.Y)
		} else {
			pr.paren(e.Y)
		}
	case *Assign:
		pr.paren(e.LHS)
		pr.s(" ", e.Op, " ")
		pr.paren(e.RHS)
	case *Ternary:
		pr.paren(e.Cond)
		pr.s("?")
		pr.paren(e.Then)
		pr.s(":")
		pr.paren(e.Else)
	case *In:
		pr.enclosed("[", e.Keys, "] in ")
		pr.expr(e.Array)
	case *Call:
		pr.enclosed(e.Name+"(", e.Args, ")")
	case *PrintCall:
		pr.printCall(e)
	case *StatOp:
		pr.s("@", e.Op, "(")
		pr.expr(e.X)
		if e.Op == "variance" && len(e.Args) == 1 {
			pr.s(", ")
			pr.expr(e.Args[0])
		}
		pr.s(")")
	case *Hist:
		if e.Linear {
			pr.enclosed("@hist_linear(", []Expr{e.X, e.Start, e.Stop, e.Interval}, ")")
		} else {
			pr.enclosed("@hist_log(", []Expr{e.X}, ")")
		}
	case *TargetVar:
		pr.addr(e.AddrOf)
		pr.s(e.Name)
		pr.chain(e.Components, e.Pretty)
	case *Cast:
		pr.addr(e.AddrOf)
		pr.s("@cast(")
		pr.expr(e.Operand)
		pr.s(", ", quoteString(e.TypeName))
		pr.moduleArg(e.Module)
		pr.chain(e.Components, e.Pretty)
	case *AtVar:
		pr.addr(e.AddrOf)
		pr.s(`@var("`, e.Name, `"`)
		pr.moduleArg(e.Module)
		pr.chain(e.Components, e.Pretty)
	case *Autocast:
		pr.addr(e.AddrOf)
		pr.paren(e.Operand)
		pr.chain(e.Components, e.Pretty)
	case *Entry:
		pr.s("@entry")
		pr.paren(e.X)
	case *Defined:
		pr.s("@defined")
		pr.paren(e.X)
	case *AtOp:
		pr.atOp(e)
	case *EmbeddedExpr:
		pr.s("%{ ", e.Code, " %}")
	}
}

// moduleArg prints the optional module of @cast and @var and the closing ")".
func (pr *printer) moduleArg(module string) {
	if module != "" {
		pr.s(", ", quoteString(module))
	}
	pr.s(")")
}

func (pr *printer) addr(on bool) {
	if on {
		pr.s("&")
	}
}

func (pr *printer) chain(comps []*TargetComponent, pretty int) {
	for _, c := range comps {
		if c.Kind == ComponentMember {
			pr.s("->", c.Name)
		} else {
			pr.s("[")
			pr.expr(c.Index)
			pr.s("]")
		}
	}
	if pretty > 0 {
		pr.s("->", strings.Repeat("$", pretty))
	}
}

func (pr *printer) printCall(e *PrintCall) {
	pr.s(e.Name, "(")
	lead := false
	for _, lit := range []*StringLit{e.Format, e.Delim} {
		if lit != nil {
			pr.s(quoteString(rawSpelling(lit)))
			lead = true
		}
	}
	for _, a := range e.Args {
		if lead {
			pr.s(", ")
		}
		pr.expr(a)
		lead = true
	}
	pr.s(")")
}

func (pr *printer) atOp(e *AtOp) {
	if e.Name == "const" && len(e.Args) == 1 {
		if s, ok := e.Args[0].(*StringLit); ok {
			pr.s("%{ /* pure */ /* unprivileged */ /* stable */ ", s.Raw, " %}")
			return
		}
	}
	pr.enclosed("@"+e.Name+"(", e.Args, ")")
}
