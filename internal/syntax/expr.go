package syntax

import (
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
)

// Expression parsing, from loosest to tightest binding (as stap's parser):
//   assignment (right assoc.)  = <<< += -= *= /= %= <<= >>= &= ^= |= .=
//   ternary                    ?: (right assoc.)
//   logical                    ||, then &&
//   bitwise                    |, then ^, then &
//   array membership           [k, ...] in a, k in a
//   comparison                 < <= > >= == != (left assoc.), or one =~ / !~ "literal"
//   shift                      << >> >>>
//   concatenation              .
//   additive, multiplicative   + -, * / %
//   unary                      + - ! ~ (prefix)
//   crement                    ++x --x x++ x--
//   context values             &, $var, @cast, @var and their ->member [index] $ chains

// maxNesting bounds the nesting of expressions and statements so that a
// pathological input cannot exhaust the stack.
const maxNesting = 5000

// nest counts one level of recursion; the caller must defer p.unnest().
func (p *parser) nest() {
	p.depth++
	if p.depth > maxNesting {
		p.failAt(fmt.Sprintf("nesting too deep (more than %d levels)", maxNesting), p.peek())
	}
}

func (p *parser) unnest() { p.depth-- }

func (p *parser) parseExpr() Expr {
	p.nest()
	defer p.unnest()
	lhs := p.parseTernary()
	t := p.peek()
	if t != nil && t.kind == tokOperator && assignOps[t.text] {
		p.next()
		return &Assign{Typed: Typed{Pos: t.pos}, Op: t.text, LHS: lhs, RHS: p.parseExpr()}
	}
	return lhs
}

var assignOps = map[string]bool{
	"=": true, "<<<": true, "+=": true, "-=": true, "*=": true, "/=": true,
	"%=": true, "<<=": true, ">>=": true, "&=": true, "^=": true, "|=": true, ".=": true,
}

func (p *parser) parseTernary() Expr {
	cond := p.parseBinary(0)
	t := p.peek()
	if !t.isOp("?") {
		return cond
	}
	p.next()
	e := &Ternary{Typed: Typed{Pos: t.pos}, Cond: cond, Then: p.parseExpr()}
	p.expectInline(":")
	e.Else = p.parseTernary()
	return e
}

// binaryLevels lists the left-associative operator levels from loosest; the
// level named "in" is array membership.
var binaryLevels = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, nil, // nil: array-in
}

func (p *parser) parseBinary(level int) Expr {
	if level == len(binaryLevels)-1 {
		return p.parseArrayIn()
	}
	x := p.parseBinary(level + 1)
	for {
		t := p.peek()
		if !isOpIn(t, binaryLevels[level]) {
			return x
		}
		p.next()
		x = &Binary{Typed: Typed{Pos: t.pos}, Op: t.text, X: x, Y: p.parseBinary(level + 1)}
	}
}

func isOpIn(t *token, ops []string) bool {
	if t == nil || t.kind != tokOperator {
		return false
	}
	for _, op := range ops {
		if t.text == op {
			return true
		}
	}
	return false
}

func (p *parser) parseArrayIn() Expr {
	if !p.peekOp("[") { // most expressions: no list of keys made for them
		key := p.parseComparison()
		if t := p.peek(); t.is(tokKeyword, "in") {
			p.next()
			return &In{Typed: Typed{Pos: t.pos}, Keys: []Expr{key}, Array: p.parseIndexable()}
		}
		return key
	}
	p.swallow()
	var keys []Expr
	for {
		if t := p.peek(); t.isOp("*") {
			p.swallow()
			keys = append(keys, &Star{Typed{Pos: t.pos}})
		} else {
			keys = append(keys, p.parseComparison())
		}
		t := p.peek()
		if t.isOp(",") {
			p.swallow()
			continue
		}
		if t.isOp("]") {
			p.swallow()
			break
		}
		p.fail("expected ',' or ']'")
	}
	if t := p.peek(); t.is(tokKeyword, "in") {
		p.next()
		return &In{Typed: Typed{Pos: t.pos}, Keys: keys, Array: p.parseIndexable()}
	}
	if len(keys) != 1 {
		p.fail("unexpected comma-separated expression list")
	}
	return keys[0]
}

var comparisonOps = []string{">", "<", "==", "!=", "<=", ">="}

func (p *parser) parseComparison() Expr {
	x := p.parseShift()
	t := p.peek()
	if isOpIn(t, []string{"=~", "!~"}) {
		p.next()
		return &Binary{Typed: Typed{Pos: t.pos}, Op: t.text, X: x, Y: p.parseLiteralString()}
	}
	for isOpIn(t, comparisonOps) {
		p.next()
		x = &Binary{Typed: Typed{Pos: t.pos}, Op: t.text, X: x, Y: p.parseShift()}
		t = p.peek()
	}
	return x
}

// leftAssoc parses operand (op operand)* for the given operators.
func (p *parser) leftAssoc(operand func() Expr, ops ...string) Expr {
	x := operand()
	for {
		t := p.peek()
		if !isOpIn(t, ops) {
			return x
		}
		p.next()
		x = &Binary{Typed: Typed{Pos: t.pos}, Op: t.text, X: x, Y: operand()}
	}
}

func (p *parser) parseShift() Expr {
	return p.leftAssoc(p.parseConcat, "<<", ">>", ">>>")
}

func (p *parser) parseConcat() Expr {
	return p.leftAssoc(p.parseAdditive, ".")
}

func (p *parser) parseAdditive() Expr {
	return p.leftAssoc(p.parseMultiplicative, "+", "-")
}

func (p *parser) parseMultiplicative() Expr {
	return p.leftAssoc(p.parseUnary, "*", "/", "%")
}

func (p *parser) parseUnary() Expr {
	t := p.peek()
	if isOpIn(t, []string{"+", "-", "!", "~"}) {
		p.next()
		p.nest()
		defer p.unnest()
		return &Unary{Typed: Typed{Pos: t.pos}, Op: t.text, X: p.parseUnary()}
	}
	return p.parseCrement()
}

func (p *parser) parseCrement() Expr {
	t := p.peek()
	if isOpIn(t, []string{"++", "--"}) {
		p.next()
		return &IncDec{Typed: Typed{Pos: t.pos}, Op: t.text, Prefix: true, X: p.parseDwarfValue()}
	}
	x := p.parseDwarfValue()
	t = p.peek()
	if isOpIn(t, []string{"++", "--"}) {
		p.next()
		return &IncDec{Typed: Typed{Pos: t.pos}, Op: t.text, X: x}
	}
	return x
}

// parseDwarfValue parses a value with an optional `&` and context-variable
// component chain.
func (p *parser) parseDwarfValue() Expr {
	var addrTok *token
	if p.peekOp("&") {
		addrTok = p.next()
	}
	var x Expr
	isTarget := false
	t := p.peek()
	switch {
	case t != nil && t.kind == tokIdent && t.text[0] == '$':
		p.next()
		x, isTarget = &TargetVar{Typed: Typed{Pos: t.pos}, Name: t.text}, true
	case t.isOp("@cast"):
		x, isTarget = p.parseCast(), true
	case t.isOp("@var"):
		x, isTarget = p.parseAtVar(), true
	default:
		x = p.parseValue()
		if addrTok != nil {
			if _, addr, _, ok := chainOf(x); ok {
				isTarget = true
				if *addr {
					p.failAt("cannot take address more than once", addrTok)
				}
			}
		}
	}
	if !isTarget && (addrTok != nil || p.peekChain()) {
		at := addrTok
		if at == nil {
			at = p.peek()
		}
		x, isTarget = &Autocast{Typed: Typed{Pos: at.pos}, Operand: x}, true
	}
	if isTarget {
		_, addr, _, _ := chainOf(x)
		*addr = addrTok != nil
		p.parseChain(x)
	}
	return x
}

// chainOf returns the component chain fields of a context-variable expression.
func chainOf(x Expr) (comps *[]*TargetComponent, addr *bool, pretty *int, ok bool) {
	switch x := x.(type) {
	case *TargetVar:
		return &x.Components, &x.AddrOf, &x.Pretty, true
	case *Cast:
		return &x.Components, &x.AddrOf, &x.Pretty, true
	case *AtVar:
		return &x.Components, &x.AddrOf, &x.Pretty, true
	case *Autocast:
		return &x.Components, &x.AddrOf, &x.Pretty, true
	}
	return nil, nil, nil, false
}

func allDollars(s string) bool { return strings.Trim(s, "$") == "" }

func (p *parser) peekChain() bool {
	t := p.peek()
	return t.isOp("->") || t.isOp("[") || t != nil && t.kind == tokIdent && allDollars(t.text)
}

// parseChain parses `->member`, `[index]` and pretty-printing `$` suffixes.
func (p *parser) parseChain(x Expr) {
	comps, _, pretty, _ := chainOf(x)
	if tv, ok := x.(*TargetVar); ok {
		base := strings.TrimRight(tv.Name, "$")
		if base != "" && len(base) < len(tv.Name) && len(base) > 0 && !allDollars(tv.Name) {
			*pretty = len(tv.Name) - len(base)
			tv.Name = base
		}
	}
	for *pretty == 0 {
		if t := p.peek(); t.isOp("->") {
			p.next()
			m := p.next()
			if m.kind != tokIdent && m.kind != tokKeyword {
				p.fail("expected identifier or keyword")
			}
			p.swallow()
			member := strings.TrimRight(m.text, "$")
			*pretty = len(m.text) - len(member)
			if member != "" {
				*comps = append(*comps, &TargetComponent{Pos: t.pos, Kind: ComponentMember, Name: member})
			}
		} else if t.isOp("[") {
			p.next()
			*comps = append(*comps, &TargetComponent{Pos: t.pos, Kind: ComponentIndex, Index: p.parseExpr()})
			p.expectOp("]")
		} else {
			break
		}
	}
	if *pretty == 0 {
		if t := p.peek(); t != nil && t.kind == tokIdent && allDollars(t.text) {
			p.next()
			*pretty = len(t.text)
		}
	}
	if *pretty > 0 && (p.peekOp("->") || p.peekOp("[")) {
		p.fail("-> and [ are not accepted for a pretty-printing variable")
	}
}

func (p *parser) parseValue() Expr {
	t := p.peek()
	if t == nil {
		p.fail("expected value")
	}
	switch {
	case t.kind == tokEmbedded:
		if !p.privileged {
			p.failNoSkip("embedded expression code in unprivileged script; need stap -g")
		}
		p.next()
		return &EmbeddedExpr{Typed: Typed{Pos: t.pos}, Code: t.text}
	case t.isOp("("):
		p.swallow()
		e := p.parseExpr()
		p.expectInline(")")
		return e
	case t.kind == tokIdent || t.kind == tokOperator && t.text[0] == '@':
		return p.parseSymbol()
	}
	return p.parseLiteral()
}

func (p *parser) parseLiteral() Expr {
	t := p.next()
	if t.kind == tokString {
		return stringLit(p.concatStrings(t))
	}
	n := p.signedNumber(t)
	if n == nil {
		p.fail("expected literal string or number")
	}
	return n
}

func (p *parser) parseLiteralString() *StringLit {
	t := p.next()
	if t.kind != tokString {
		p.fail("expected literal string")
	}
	return stringLit(p.concatStrings(t))
}

// parseHistOrName reads an identifier or @word; for @hist_log/@hist_linear it
// parses the whole histogram operator.
func (p *parser) parseHistOrName() (*token, *Hist) {
	t := p.next()
	if t.kind != tokIdent && !(t.kind == tokOperator && t.text[0] == '@') {
		p.fail("expected identifier or statistical operation")
	}
	if t.text != "@hist_linear" && t.text != "@hist_log" {
		return t, nil
	}
	h := &Hist{Typed: Typed{Pos: t.pos}, Linear: t.text == "@hist_linear"}
	p.expectOp("(")
	h.X = p.parseExpr()
	if h.Linear {
		for _, param := range []*Expr{&h.Start, &h.Stop, &h.Interval} {
			p.expectOp(",")
			*param = p.expectNumber()
		}
	}
	p.expectOp(")")
	return t, h
}

// parseIndexable parses what `in` and foreach iterate over: an array name or a histogram.
func (p *parser) parseIndexable() Expr {
	t, h := p.parseHistOrName()
	if h != nil {
		return h
	}
	return ident(t)
}

var statOps = map[string]bool{"@avg": true, "@count": true, "@sum": true, "@min": true, "@max": true, "@variance": true}

// parseSymbol parses a variable, array element, function call, print-family
// call or @operator.
func (p *parser) parseSymbol() Expr {
	t, h := p.parseHistOrName()
	var base Expr = h
	if h == nil {
		switch name := t.text; {
		case name == "@defined" || name == "@entry":
			p.expectOp("(")
			x := p.parseExpr()
			p.expectOp(")")
			if name == "@entry" {
				return &Entry{Typed: Typed{Pos: t.pos}, X: x}
			}
			return &Defined{Typed: Typed{Pos: t.pos}, X: x}
		case name == "@probewrite":
			p.expectOp("(")
			v := p.expectKind(tokIdent)
			p.expectOp(")")
			return &AtOp{Typed: Typed{Pos: t.pos}, Name: "probewrite", Args: []Expr{ident(v)}}
		case name == "@const":
			return p.parseConst(t)
		case name == "@perf" || name == "@enum":
			p.expectOp("(")
			s := p.parseLiteralString()
			if s.Raw == "" {
				p.fail("expected non-empty string")
			}
			p.expectOp(")")
			return &AtOp{Typed: Typed{Pos: t.pos}, Name: name[1:], Args: []Expr{s}}
		case name == "@enumname":
			return p.parseEnumName(t)
		case name == "@kregister" || name == "@uregister" || name == "@kderef" || name == "@uderef":
			return p.parseRegisterOp(t)
		case statOps[name]:
			return p.parseStatOp(t)
		case name[0] == '@':
			p.fail(fmt.Sprintf("unknown operator %s", name))
		case isPrintName(name):
			return p.parsePrint(t)
		case p.peekOp("("):
			return p.parseCall(t)
		}
		base = ident(t)
	}
	if p.peekOp("[") {
		p.swallow()
		var keys []Expr
		for {
			if s := p.peek(); s.isOp("*") {
				p.swallow()
				keys = append(keys, &Star{Typed{Pos: s.pos}})
			} else {
				keys = append(keys, p.parseExpr())
			}
			if p.expectOpAny("]", ",") == "]" {
				break
			}
		}
		return &Index{Typed: Typed{Pos: t.pos}, Array: base, Keys: keys}
	}
	if h != nil {
		p.failAt("base histogram operator where expression expected", t)
	}
	return base
}

func (p *parser) parseConst(t *token) Expr {
	if !p.privileged {
		p.failNoSkip("using @const operator not permitted; need stap -g")
	}
	p.expectOp("(")
	s := p.expectKind(tokString)
	if s.text == "" {
		p.fail("expected non-empty string")
	}
	p.expectOp(")")
	return &AtOp{Typed: Typed{Pos: t.pos}, Name: "const", Args: []Expr{stringLit(s)}}
}

// parseEnumName parses @enumname(expr [, "type" [, "module"]]); Args are
// the expression, then the strings given.
func (p *parser) parseEnumName(t *token) Expr {
	p.expectOp("(")
	op := &AtOp{Typed: Typed{Pos: t.pos}, Name: "enumname", Args: []Expr{p.parseExpr()}}
	for range 2 {
		if !p.peekOp(",") {
			break
		}
		p.swallow()
		s := p.expectKind(tokString)
		if s.text == "" && len(op.Args) == 1 {
			p.fail("expected non-empty string")
		}
		op.Args = append(op.Args, stringLit(s))
	}
	p.expectOp(")")
	return op
}

func (p *parser) parseRegisterOp(t *token) Expr {
	name := t.text[1:]
	if name[0] == 'k' && !p.privileged {
		p.failNoSkip(fmt.Sprintf("using %s operator not permitted; need stap -g", t.text))
	}
	p.expectOp("(")
	op := &AtOp{Typed: Typed{Pos: t.pos}, Name: name, Args: []Expr{p.expectNumber()}}
	if strings.HasSuffix(name, "deref") {
		p.expectOp(",")
		op.Args = append(op.Args, p.parseExpr())
	}
	p.expectOp(")")
	return op
}

func (p *parser) parseStatOp(t *token) Expr {
	maxParams := 0
	if t.text == "@variance" {
		maxParams = 1
	}
	p.expectOp("(")
	op := &StatOp{Typed: Typed{Pos: t.pos}, Op: t.text[1:], X: p.parseExpr()}
	for {
		u := p.next()
		if u.isOp(")") {
			p.swallow()
			return op
		}
		if u.isOp(",") {
			if len(op.Args) >= maxParams {
				s := "s"
				if maxParams+1 == 1 {
					s = ""
				}
				p.failAt(fmt.Sprintf("not more than %d parameter%s allowed", maxParams+1, s), u)
			}
			p.swallow()
			op.Args = append(op.Args, p.expectNumber())
		}
	}
}

func (p *parser) parseCall(t *token) Expr {
	p.swallow()
	c := &Call{Typed: Typed{Pos: t.pos}, Name: t.text}
	if p.peekOp(")") {
		p.swallow()
		return c
	}
	for {
		c.Args = append(c.Args, p.parseExpr())
		if p.expectOpAny(")", ",") == ")" {
			return c
		}
	}
}

// isPrintName tells whether name is one of the print family that stap parses
// specially: [s]print[d][ln], [s]printf and print_char.
func isPrintName(name string) bool {
	if name == "print_char" {
		return true
	}
	n := strings.TrimPrefix(name, "s")
	rest, ok := strings.CutPrefix(n, "print")
	if !ok {
		return false
	}
	switch rest {
	case "", "f", "d", "ln", "dln":
		return true
	}
	return false
}

func (p *parser) parsePrint(t *token) Expr {
	name := t.text
	pc := &PrintCall{Typed: Typed{Pos: t.pos}, Name: name}
	base := strings.TrimPrefix(name, "s")
	p.expectOp("(")
	if (base == "print" || base == "println") && (p.peekOp("@hist_linear") || p.peekOp("@hist_log")) {
		ht, h := p.parseHistOrName()
		if !p.peekOp("[") {
			pc.Args = []Expr{h}
		} else {
			p.expectOp("[")
			pc.Args = []Expr{&Index{Typed: Typed{Pos: ht.pos}, Array: h, Keys: []Expr{p.parseExpr()}}}
			p.expectOp("]")
			for !p.peekOp(")") {
				p.expectOpAny(",", ")")
				pc.Args = append(pc.Args, p.parseExpr())
			}
		}
		p.expectOp(")")
		return pc
	}
	minArgs, consumed := 0, false
	switch {
	case base == "printf":
		pc.Format = p.parseLiteralString()
		// stap's parser checks the conversions of the format as written
		asWritten, err := format.Compile(pc.Format.Raw)
		if err != nil {
			p.fail(err.Error())
		}
		pc.compiled = compileFormat(pc.Format, asWritten)
		consumed = true
	case base == "printd" || base == "printdln":
		pc.Delim = p.parseLiteralString()
		consumed, minArgs = true, 2
	case base != "println":
		minArgs = 1
	}
	for minArgs > 0 || !p.peekOp(")") {
		if consumed {
			p.expectOpAny(",", ")")
		}
		pc.Args = append(pc.Args, p.parseExpr())
		consumed = true
		if minArgs > 0 {
			minArgs--
		}
	}
	p.expectOp(")")
	return pc
}

func (p *parser) parseCast() Expr {
	t := p.next()
	c := &Cast{Typed: Typed{Pos: t.pos}}
	p.expectOp("(")
	c.Operand = p.parseExpr()
	p.expectOp(",")
	c.TypeName = p.expectKind(tokString).text
	if c.TypeName == "" {
		p.fail("expected non-empty string")
	}
	c.Module = p.moduleArg()
	return c
}

// moduleArg reads the optional `, "module"` argument of @cast and @var and the
// closing parenthesis.
func (p *parser) moduleArg() string {
	module := ""
	if p.peekOp(",") {
		p.swallow()
		module = p.expectKind(tokString).text
	}
	p.expectOp(")")
	return module
}

func (p *parser) parseAtVar() Expr {
	t := p.next()
	v := &AtVar{Typed: Typed{Pos: t.pos}}
	p.expectOp("(")
	v.Name = p.expectKind(tokString).text
	v.Module = p.moduleArg()
	return v
}

// compiledFormat is a printf format's compilation, or why it failed.
type compiledFormat struct {
	f   *format.Format
	err error
}

// compileFormat compiles the value of lit, a format whose text as
// written compiles to asWritten: the same when it has no escape.
func compileFormat(lit *StringLit, asWritten *format.Format) *compiledFormat {
	if lit.Raw == lit.Value {
		return &compiledFormat{f: asWritten}
	}
	f, err := format.Compile(lit.Value)
	return &compiledFormat{f, err}
}

// CompiledFormat returns the compilation of printf's format (Format's
// value, not nil). A parsed call's is made by the parser, once: the typing
// checks the arguments against it, the code generator, the deferred
// locals' functions and the interpreter print with it, each for every
// printf it meets (syscall.*'s formats were compiled three times at every
// run, from several goroutines once the code generator compiles programs
// at once). A clone shares it, its format being the same; a call made by
// the elaborator compiles its format at each call.
func (c *PrintCall) CompiledFormat() (*format.Format, error) {
	if c.compiled == nil {
		return format.Compile(c.Format.Value)
	}
	return c.compiled.f, c.compiled.err
}
