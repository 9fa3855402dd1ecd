package syntax

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/parallel"
)

// The parser is a recursive-descent parser that follows stap's own grammar
// function by function, so that it accepts the same language and reports the
// same error at the same token. It reads from the preprocessor through a
// one-token lookahead (peek/next/swallow); an error blames the token it names
// or, failing that, the last token looked at. Errors unwind to the top-level
// declaration loop (as stap's exceptions do), which records them and skips to
// the next `probe`, `global`, `private`, `function` or `%{`.

// bailout carries a parse error up to the declaration loop.
type bailout struct {
	err *Error
}

type parser struct {
	src  *Source
	cfg  *Config
	pp   *preprocessor
	errs ErrorList

	nextTok, lastTok *token
	inFunction       bool
	privileged       bool
	// pointTok remembers the first token of each probe point, for errors.
	pointTok map[*ProbePoint]*token
	// empty stays true while no declaration has started.
	empty bool
	depth int
	// globals holds the names of the file's globals: stap refuses a second declaration.
	globals map[string]bool
}

// ParseFiles parses several files with one configuration; the error is the
// ErrorList of the first file, in srcs' order, that fails. The files are
// parsed in parallel: a parse reads the configuration and writes only its
// own file's state, and pass 1's time is mostly the tapset files a script
// reaches (syscall.* reaches twelve, one of them 55 KB), largest first:
// in the files' order syscalls.stp started after the other ten had run.
func ParseFiles(srcs []*Source, cfg *Config) ([]*File, error) {
	return parallel.MapLargestFirst(len(srcs), func(i int) int { return len(srcs[i].Text) },
		func(i int) (*File, error) { return Parse(srcs[i], cfg) })
}

// Parse parses one script or tapset file. The error, if any, is an ErrorList.
func Parse(src *Source, cfg *Config) (*File, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	p := &parser{src: src, cfg: cfg, privileged: cfg.Guru || cfg.Tapset, pointTok: map[*ProbePoint]*token{}, empty: true, globals: map[string]bool{}}
	p.pp = &preprocessor{p: p, sc: newScanner(src, cfg.Args), cfg: cfg, macros: map[string]*macroDecl{}}
	f := &File{Src: src, Tapset: cfg.Tapset}
	if src.Library != cfg.Tapset { // the library's sources are shared by the exporter's scripts, already marked
		src.Library = cfg.Tapset
	}
	p.parseFile(f)
	if p.empty && !cfg.Tapset {
		msg := fmt.Sprintf("Input file '%s' is empty.", src.Name)
		if p.pp.sc.sawTokens {
			msg = fmt.Sprintf("Input file '%s' is empty after preprocessing.", src.Name)
		}
		p.errs = append(p.errs, &Error{Msg: msg, text: msg + "\n", summary: true})
	}
	if len(p.errs) > 0 {
		return f, p.errs
	}
	return f, nil
}

// LoadMacros reads .stpm library macro files. A file with errors contributes no
// macros; its errors are returned (stap reports them as warnings).
func LoadMacros(srcs ...*Source) (MacroLibrary, ErrorList) {
	lib := MacroLibrary{}
	var errs ErrorList
	for _, src := range srcs {
		cfg := &Config{Tapset: true}
		if !src.Library { // as in Parse
			src.Library = true
		}
		p := &parser{src: src, cfg: cfg, privileged: true}
		p.pp = &preprocessor{p: p, sc: newScanner(src, nil), cfg: cfg, macros: map[string]*macroDecl{}}
		err := p.catch(func() {
			if t := p.pp.scan(); t != nil {
				p.failAt(fmt.Sprintf("unexpected token in library macro file '%s'", src.Name), t)
			}
			for name, d := range p.pp.macros {
				if prev := lib[name]; prev != nil {
					e := p.newError(fmt.Sprintf("duplicate definition of library macro '@%s'", name), d.tok, true)
					e.Chain = p.newError(fmt.Sprintf("macro '@%s' first defined here", name), prev.tok, true)
					panic(bailout{e})
				}
			}
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, d := range p.pp.macros {
			d.library = true
			lib[name] = d
		}
	}
	return lib, errs
}

// ---------------------------------------------------------------------------
// errors

func (p *parser) newError(msg string, tok *token, explicit bool) *Error {
	return p.newErrorSite(msg, tok, explicit, callerSite(2))
}

func (p *parser) newErrorSite(msg string, tok *token, explicit bool, site string) *Error {
	e := &Error{Msg: shownMessage(msg, tok, len(p.cfg.Args)), tok: tok, explicit: explicit, file: p.src.Name, site: site}
	if tok != nil {
		e.Pos = tok.pos
	}
	return e
}

// fail reports an error blaming the last token looked at ("saw:").
func (p *parser) fail(msg string) {
	panic(bailout{p.newErrorSite(msg, p.lastTok, false, callerSite(1))})
}

// failAt reports an error at tok ("at:").
func (p *parser) failAt(msg string, tok *token) {
	panic(bailout{p.newErrorSite(msg, tok, tok != nil, callerSite(1))})
}

// failNoSkip reports an error after which parsing resumes at the next token
// rather than at the next declaration.
func (p *parser) failNoSkip(msg string) {
	e := p.newErrorSite(msg, p.lastTok, false, callerSite(1))
	e.noSkip = true
	panic(bailout{e})
}

// catch runs fn and returns the parse error it raised, if any.
func (p *parser) catch(fn func()) (err *Error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	fn()
	return nil
}

// ---------------------------------------------------------------------------
// token stream

func (p *parser) peek() *token {
	if p.nextTok == nil {
		p.nextTok = p.pp.scan()
	}
	p.lastTok = p.nextTok
	return p.nextTok
}

func (p *parser) next() *token {
	if p.nextTok == nil {
		p.nextTok = p.pp.scan()
	}
	if p.nextTok == nil {
		p.fail("unexpected end-of-file")
	}
	p.lastTok = p.nextTok
	p.nextTok = nil
	return p.lastTok
}

func (p *parser) swallow() {
	p.lastTok = nil
	p.nextTok = nil
}

func (p *parser) peekOp(op string) bool { return p.peek().isOp(op) }

func (p *parser) expectOp(op string) {
	t := p.next()
	if !t.isOp(op) {
		p.fail(fmt.Sprintf("expected '%s'", op))
	}
	p.swallow()
}

// expectInline is expectOp for a token that stap checks in place: its error
// counts as raised at the caller's line, so each such check has its own origin
// for the suppression of repeated errors (expectOp's all share one).
func (p *parser) expectInline(op string) {
	if t := p.next(); !t.isOp(op) {
		panic(bailout{p.newErrorSite(fmt.Sprintf("expected '%s'", op), p.lastTok, false, callerSite(1))})
	}
	p.swallow()
}

func (p *parser) expectKw(kw string) *token {
	t := p.next()
	if !t.is(tokKeyword, kw) {
		p.fail(fmt.Sprintf("expected '%s'", kw))
	}
	return t
}

func (p *parser) expectOpAny(ops ...string) string {
	t := p.next()
	if t.kind == tokOperator {
		for _, op := range ops {
			if t.text == op {
				p.swallow()
				return op
			}
		}
	}
	p.fail(fmt.Sprintf("expected one of '%s'", strings.Join(ops, " ")))
	return ""
}

// expectKind reads a token of the given kind; strings are concatenated with
// any adjacent string literals.
func (p *parser) expectKind(kind tokenKind) *token {
	t := p.next()
	if t.kind != kind {
		p.fail("expected " + kind.String())
	}
	if kind == tokString {
		return p.concatStrings(t)
	}
	p.swallow()
	return t
}

// expectNumber reads an optionally negated number literal.
func (p *parser) expectNumber() *NumberLit {
	n := p.signedNumber(p.next())
	if n == nil {
		p.fail("expected number")
	}
	p.swallow()
	return n
}

// signedNumber converts the number starting at t, already read, after an
// optional `-`; it returns nil when no number is there.
func (p *parser) signedNumber(t *token) *NumberLit {
	neg := t.isOp("-")
	if neg {
		p.swallow()
		t = p.next()
	}
	if t.kind != tokNumber {
		return nil
	}
	return p.number(t, neg)
}

// number converts a number token as stap does (strtoull with base 0, values up to
// 2^64-1 wrapping to int64, a negated literal down to -2^63).
func (p *parser) number(t *token, neg bool) *NumberLit {
	v, err := strconv.ParseUint(t.text, 0, 64)
	if err != nil && len(t.text) > 1 && t.text[0] == '0' && t.text[1] != 'x' && t.text[1] != 'X' {
		v, err = strconv.ParseUint(t.text[1:], 8, 64)
	}
	if err != nil || strings.ContainsRune(t.text, '_') || neg && v > 1<<63 {
		p.fail("number invalid or out of range")
	}
	val := int64(v)
	text := t.text
	if neg {
		val = -val
		text = "-" + text
	}
	return &NumberLit{Typed: Typed{Pos: t.pos}, Value: val, Text: text}
}

// concatStrings returns the string token t joined with the string literals
// that follow it.
func (p *parser) concatStrings(t *token) *token {
	joined := *t
	for n := p.peek(); n != nil && n.kind == tokString; n = p.peek() {
		joined.text += n.text
		p.next()
	}
	return &joined
}

func stringLit(t *token) *StringLit {
	return &StringLit{Typed: Typed{Pos: t.pos}, Value: decodeEscapes(t.text), Raw: t.text}
}

// ---------------------------------------------------------------------------
// declarations

func (p *parser) parseFile(f *File) {
	for {
		done := false
		err := p.catch(func() { done = p.parseDecl(f) })
		if done {
			return
		}
		if err == nil {
			continue
		}
		p.errs = append(p.errs, err)
		if len(p.errs) > 1000 {
			return
		}
		if !err.noSkip {
			p.recover()
		}
	}
}

// parseDecl parses one top-level declaration; it reports true at the end of input.
func (p *parser) parseDecl(f *File) bool {
	t := p.peek()
	if t == nil {
		return true
	}
	p.empty = false
	p.inFunction = false
	p.depth = 0
	switch {
	case t.is(tokKeyword, "probe"):
		f.Decls = append(f.Decls, p.parseProbe())
	case t.is(tokKeyword, "private"):
		f.Decls = append(f.Decls, p.parsePrivate()...)
	case t.is(tokKeyword, "global"):
		p.next()
		p.swallow()
		f.Decls = append(f.Decls, p.parseGlobals(nil, false)...)
	case t.is(tokKeyword, "function"):
		p.next()
		p.swallow()
		p.inFunction = true
		f.Decls = append(f.Decls, p.parseFunction(false))
	case t.kind == tokEmbedded:
		f.Decls = append(f.Decls, p.parseEmbedded())
	default:
		e := p.newErrorSite("expected 'probe', 'global', 'private', 'function', or '%{'", p.lastTok, false, callerSite(0))
		e.Hint = bpftraceHint(t.pos.Src.From(t.pos.Line, t.pos.Col))
		panic(bailout{e})
	}
	return false
}

// recover skips tokens up to the start of the next declaration.
func (p *parser) recover() {
	for {
		stop := false
		err := p.catch(func() {
			t := p.peek()
			if t == nil || t.kind == tokEmbedded || t.kind == tokKeyword &&
				(t.text == "probe" || t.text == "private" || t.text == "global" || t.text == "function") {
				stop = true
				return
			}
			p.swallow()
		})
		if err != nil {
			p.errs = append(p.errs, err)
			if len(p.errs) > 1000 {
				return
			}
		}
		if stop {
			return
		}
	}
}

func (p *parser) parseEmbedded() *EmbeddedCode {
	t := p.next()
	if t.kind != tokEmbedded {
		p.fail("expected '%{'")
	}
	if !p.privileged {
		p.failNoSkip("embedded code in unprivileged script; need stap -g")
	}
	return &EmbeddedCode{Pos: t.pos, Code: t.text}
}

func (p *parser) parsePrivate() []Decl {
	p.next()
	p.swallow()
	t := p.next()
	switch {
	case t.is(tokKeyword, "function"):
		p.swallow()
		p.inFunction = true
		return []Decl{p.parseFunction(true)}
	case t.is(tokKeyword, "global"):
		p.swallow()
		t = p.next()
		if t.kind != tokIdent {
			p.fail("expected identifier")
		}
		return p.parseGlobals(t, true)
	case t.kind == tokIdent:
		return p.parseGlobals(t, true)
	}
	p.fail("expected 'function' or identifier")
	return nil
}

// parseGlobals parses `NAME[%][[N]][= LITERAL], ...`; first is the already
// read first name of a private declaration.
func (p *parser) parseGlobals(first *token, private bool) []Decl {
	var decls []Decl
	for {
		t := first
		first = nil
		if t == nil {
			t = p.next()
		}
		if t.kind != tokIdent {
			p.fail("expected identifier")
		}
		if p.globals[t.text] {
			p.fail("duplicate global name")
		}
		p.globals[t.text] = true
		g := &GlobalDecl{Pos: t.pos, Name: t.text, Private: private}
		decls = append(decls, g)
		t = p.peek()
		if t.isOp("%") {
			g.Wrap = true
			p.swallow()
			t = p.peek()
		}
		if t.isOp("[") {
			p.swallow()
			n := p.expectNumber()
			if n.Value <= 0 || n.Value > 1<<31-1 {
				p.fail("array size out of range")
			}
			g.Size, g.IsArray = n.Value, true
			p.expectOp("]")
			t = p.peek()
		}
		if t.isOp("=") {
			if g.IsArray {
				p.fail("only scalar globals can be initialized")
			}
			p.next()
			g.Init = p.parseLiteral()
			t = p.peek()
		}
		if t.isOp(";") {
			p.swallow()
			return decls
		}
		if !t.isOp(",") {
			return decls
		}
		p.swallow()
	}
}

func (p *parser) parseFunction(private bool) *FuncDecl {
	t := p.next()
	if t.kind != tokIdent && !t.is(tokKeyword, "string") && !t.is(tokKeyword, "long") {
		p.fail("expected identifier")
	}
	fd := &FuncDecl{Pos: t.pos, NamePos: t.pos, Name: t.text, Private: private}
	t = p.next()
	if t.isOp(":") {
		p.swallow()
		fd.Result = p.parseTypeName()
		t = p.next()
	}
	if !t.isOp("(") {
		p.fail("expected '('")
	}
	p.swallow()
	for {
		t = p.next()
		if t.isOp(")") {
			p.swallow()
			break
		}
		if t.kind != tokIdent {
			p.fail("expected identifier")
		}
		for _, prev := range fd.Params {
			if prev.Name == t.text {
				p.fail("duplicate parameter names")
			}
		}
		param := &Param{Pos: t.pos, Name: t.text}
		fd.Params = append(fd.Params, param)
		t = p.next()
		if t.isOp(":") {
			p.swallow()
			param.Type = p.parseTypeName()
			t = p.next()
		}
		if t.isOp(")") {
			p.swallow()
			break
		}
		if !t.isOp(",") {
			p.fail("expected ',' or ')'")
		}
		p.swallow()
	}
	t = p.peek()
	if t == nil {
		p.fail("expected '{'")
	}
	if t.isOp(":") {
		p.swallow()
		n, ok := p.parseLiteral().(*NumberLit)
		if !ok {
			p.fail("expected literal number")
		}
		if n.Value < 1 {
			p.fail("specified priority must be > 0")
		}
		fd.Priority = n.Value
	}
	if t = p.peek(); t != nil && t.kind == tokEmbedded {
		fd.Embedded = p.parseEmbedded()
	} else {
		fd.Body = p.parseBlock()
	}
	return fd
}

func (p *parser) parseTypeName() Type {
	t := p.next()
	switch {
	case t.is(tokKeyword, "string"):
		p.swallow()
		return TypeString
	case t.is(tokKeyword, "long"):
		p.swallow()
		return TypeLong
	}
	p.fail("expected 'string' or 'long'")
	return TypeUnknown
}

// ---------------------------------------------------------------------------
// probes

func (p *parser) parseProbe() Decl {
	t0 := p.next()
	if !t0.is(tokKeyword, "probe") {
		p.fail("expected 'probe'")
	}
	var names, points []*ProbePoint
	epilogue := false
	for {
		pps := p.parseProbePoints()
		t := p.peek()
		if len(pps) == 1 && (t.isOp("=") || t.isOp("+=")) {
			if pps[0].Optional || pps[0].Sufficient {
				p.failAt("probe point alias name cannot be optional nor sufficient", p.pointTok[pps[0]])
			}
			names = append(names, pps[0])
			epilogue = epilogue || t.isOp("+=")
			p.swallow()
			continue
		}
		if t.isOp("{") {
			points = append(points, pps...)
			break
		}
		p.fail("expected probe point specifier")
	}
	if names == nil {
		return &ProbeDecl{Pos: t0.pos, Points: points, Body: p.parseBlock()}
	}
	return &AliasDecl{Pos: t0.pos, Names: names, Points: points, Body: p.parseBlock(), Epilogue: epilogue}
}

func (p *parser) parseProbePoints() []*ProbePoint {
	var pps []*ProbePoint
	for {
		pps = append(pps, p.parseComponents()...)
		t := p.peek()
		if t.isOp(",") {
			p.swallow()
			continue
		}
		if t.isOp("{") || t.isOp("=") || t.isOp("+=") || t.isOp("}") {
			return pps
		}
		p.fail("expected one of ', { } = +='")
	}
}

// parseComponents parses one dotted probe point; `{a,b}` alternatives multiply
// it into several.
func (p *parser) parseComponents() []*ProbePoint {
	var pps []*ProbePoint
	for {
		suffix := p.parseComponent()
		if pps == nil {
			pps = suffix
		} else {
			var product []*ProbePoint
			for _, head := range pps {
				if head.Optional || head.Sufficient || head.Cond != nil {
					p.failAt("'?', '!' or condition must only be specified in suffix", p.pointTok[head])
				}
				for _, tail := range suffix {
					pp := &ProbePoint{Pos: head.Pos, Optional: tail.Optional,
						Sufficient: tail.Sufficient, Cond: tail.Cond}
					p.pointTok[pp] = p.pointTok[head]
					pp.Components = append(append(pp.Components, Clone(head.Components)...), Clone(tail.Components)...)
					product = append(product, pp)
				}
			}
			pps = product
		}
		t := p.peek()
		if t.isOp(".") {
			p.swallow()
			continue
		}
		if t.isOp("?") || t.isOp("!") {
			for _, pp := range pps {
				if pp.Optional || pp.Sufficient {
					p.fail("'?' or '!' respecified")
				}
				pp.Optional = true
				pp.Sufficient = t.text == "!"
			}
			p.swallow()
			t = p.peek()
		}
		if t.is(tokKeyword, "if") {
			p.swallow()
			if !p.peekOp("(") {
				p.fail("expected '('")
			}
			p.swallow()
			cond := p.parseExpr()
			for i, pp := range pps {
				if pp.Cond != nil {
					p.fail("condition respecified")
				}
				if i == 0 {
					pp.Cond = cond
				} else {
					pp.Cond = Clone(cond)
				}
			}
			if !p.peekOp(")") {
				p.fail("expected ')'")
			}
			p.swallow()
		}
		return pps
	}
}

func (p *parser) parseComponent() []*ProbePoint {
	t := p.next()
	if !(t.kind == tokIdent || t.kind == tokKeyword || t.isOp("*") || t.isOp("{")) {
		p.fail("expected identifier or '*' or '{'")
	}
	if t.isOp("{") {
		p.swallow()
		pps := p.parseProbePoints()
		if !p.peekOp("}") {
			p.fail("expected '}'")
		}
		p.swallow()
		return pps
	}
	name := t.text
	for {
		u := p.peek()
		if u == nil || u.afterSpace || !(u.kind == tokIdent || u.kind == tokKeyword || u.isOp("*")) {
			break
		}
		name += u.text
		p.swallow()
	}
	c := &Component{Pos: t.pos, Name: name}
	pp := &ProbePoint{Pos: t.pos, Components: []*Component{c}}
	p.pointTok[pp] = t
	if p.peekOp("(") {
		p.swallow()
		c.Arg = p.parseLiteral()
		p.expectInline(")")
	}
	return []*ProbePoint{pp}
}

// ---------------------------------------------------------------------------
// statements

func (p *parser) parseBlock() *Block {
	t := p.next()
	if !t.isOp("{") {
		p.fail("expected '{'")
	}
	b := &Block{Pos: t.pos}
	for {
		if p.peekOp("}") {
			p.swallow()
			return b
		}
		b.Stmts = append(b.Stmts, p.parseStmt())
	}
}

func (p *parser) parseStmt() Stmt {
	p.nest()
	defer p.unnest()
	t := p.peek()
	if t == nil {
		p.fail("expected statement")
	}
	var s Stmt
	switch {
	case t.isOp(";"):
		p.next()
		return &NullStmt{Pos: t.pos}
	case t.isOp("{"):
		return p.parseBlock()
	case t.is(tokKeyword, "try"):
		return p.parseTry()
	case t.is(tokKeyword, "if"):
		return p.parseIf()
	case t.is(tokKeyword, "for"):
		return p.parseFor()
	case t.is(tokKeyword, "foreach"):
		return p.parseForeach()
	case t.is(tokKeyword, "while"):
		return p.parseWhile()
	case t.is(tokKeyword, "return"):
		s = p.parseReturn()
	case t.is(tokKeyword, "delete"):
		p.next()
		s = &DeleteStmt{Pos: t.pos, Target: p.parseExpr()}
	case t.is(tokKeyword, "break"):
		p.next()
		s = &BreakStmt{Pos: t.pos}
	case t.is(tokKeyword, "continue"):
		p.next()
		s = &ContinueStmt{Pos: t.pos}
	case t.is(tokKeyword, "next"):
		p.next()
		s = &NextStmt{Pos: t.pos}
	case t.kind == tokOperator || t.kind == tokIdent || t.kind == tokNumber ||
		t.kind == tokString || t.kind == tokEmbedded:
		s = &ExprStmt{X: p.parseExpr()}
	default:
		p.fail("expected statement")
	}
	if p.peekOp(";") {
		p.swallow()
	}
	return s
}

func (p *parser) parseTry() Stmt {
	t := p.expectKw("try")
	s := &TryStmt{Pos: t.pos, Body: p.parseBlock()}
	p.expectKw("catch")
	p.swallow()
	if p.peekOp("(") {
		p.swallow()
		v := p.next()
		if v.kind != tokIdent {
			p.fail("expected identifier")
		}
		s.CatchVar = ident(v)
		p.expectOp(")")
	}
	s.Catch = p.parseBlock()
	return s
}

func ident(t *token) *Ident { return &Ident{Typed: Typed{Pos: t.pos}, Name: t.text} }

// parenExpr parses `( EXPR )` after a keyword.
func (p *parser) parenExpr() Expr {
	p.expectInline("(")
	e := p.parseExpr()
	p.expectInline(")")
	return e
}

func (p *parser) parseIf() Stmt {
	t := p.next()
	s := &IfStmt{Pos: t.pos, Cond: p.parenExpr(), Then: p.parseStmt()}
	if p.peek().is(tokKeyword, "else") {
		p.swallow()
		s.Else = p.parseStmt()
	}
	return s
}

func (p *parser) parseWhile() Stmt {
	t := p.next()
	return &WhileStmt{Pos: t.pos, Cond: p.parenExpr(), Body: p.parseStmt()}
}

func (p *parser) parseFor() Stmt {
	t := p.next()
	s := &ForStmt{Pos: t.pos}
	p.expectInline("(")
	s.Init = p.forClause(";")
	if p.peekOp(";") {
		p.next()
	} else {
		s.Cond = p.parseExpr()
		p.expectClauseEnd(";")
	}
	s.Post = p.forClause(")")
	s.Body = p.parseStmt()
	return s
}

// forClause parses an optional expression of a for loop and its terminator.
func (p *parser) forClause(end string) Expr {
	if p.peekOp(end) {
		p.swallow()
		return nil
	}
	if p.peek() == nil {
		p.fail("expression statement expected")
	}
	e := p.parseExpr()
	p.expectClauseEnd(end)
	return e
}

func (p *parser) expectClauseEnd(end string) { p.expectInline(end) }

func (p *parser) parseReturn() Stmt {
	t := p.next()
	if !p.inFunction {
		p.fail("found 'return' not in function context")
	}
	s := &ReturnStmt{Pos: t.pos}
	n := p.peek()
	if n == nil {
		p.fail("expected ';', '}' or an expression statement")
	}
	if !n.isOp(";") && !n.isOp("}") {
		s.Value = p.parseExpr()
	}
	return s
}

func (p *parser) parseForeach() Stmt {
	t := p.next()
	s := &ForeachStmt{Pos: t.pos}
	p.expectInline("(")
	var lookahead *Ident
	lookaheadSort := 0
	if t := p.peek(); t != nil && t.kind == tokIdent {
		p.next()
		lookahead = ident(t)
		lookaheadSort = p.sortSign()
		if p.peekOp("=") {
			p.swallow()
			s.Value = lookahead
			if lookaheadSort != 0 {
				s.SortDir, s.SortCol = lookaheadSort, 0
			}
			lookahead = nil
		}
	}
	bracketed := false
	if lookahead == nil && p.peekOp("[") {
		p.swallow()
		bracketed = true
	}
	if lookahead != nil {
		s.Keys = append(s.Keys, lookahead)
		if lookaheadSort != 0 {
			s.SortDir, s.SortCol = lookaheadSort, 1
		}
	} else {
		p.foreachKeys(s, bracketed)
	}
	if t := p.next(); !t.is(tokKeyword, "in") {
		p.fail("expected 'in'")
	}
	p.swallow()
	s.Array = p.parseIndexable()
	if p.peekOp("[") {
		p.swallow()
		s.Slice = p.exprList("]", true, "expected ',' or ']'")
	}
	if t := p.peek(); t != nil && t.kind == tokOperator && t.text[0] == '@' {
		switch t.text {
		case "@avg", "@min", "@max", "@count", "@sum", "@variance":
			s.SortAgg = t.text[1:]
		default:
			p.fail("expected statistical operation")
		}
		p.swallow()
		if t := p.peek(); !t.isOp("+") && !t.isOp("-") {
			p.fail("expected sort directive")
		}
	}
	if t := p.peek(); t.isOp("+") || t.isOp("-") {
		if s.SortDir != 0 {
			p.fail("multiple sort directives")
		}
		s.SortDir, s.SortCol = p.sortSign(), 0
	}
	if p.peek().is(tokKeyword, "limit") {
		p.swallow()
		s.Limit = p.parseExpr()
	}
	p.expectInline(")")
	s.Body = p.parseStmt()
	return s
}

// sortSign consumes an optional `+` or `-` and returns +1, -1 or 0.
func (p *parser) sortSign() int {
	t := p.peek()
	switch {
	case t.isOp("+"):
		p.swallow()
		return 1
	case t.isOp("-"):
		p.swallow()
		return -1
	}
	return 0
}

func (p *parser) foreachKeys(s *ForeachStmt, bracketed bool) {
	for {
		t := p.next()
		if t.kind != tokIdent {
			p.fail("expected identifier")
		}
		s.Keys = append(s.Keys, ident(t))
		if t := p.peek(); t.isOp("+") || t.isOp("-") {
			if s.SortDir != 0 {
				p.fail("multiple sort directives")
			}
			s.SortDir, s.SortCol = p.sortSign(), len(s.Keys)
		}
		if !bracketed {
			return
		}
		t = p.peek()
		switch {
		case t.isOp(","):
			p.swallow()
		case t.isOp("]"):
			p.swallow()
			return
		default:
			p.fail("expected ',' or ']'")
		}
	}
}

// exprList parses expressions (with `*` wildcards if stars) up to close.
func (p *parser) exprList(close string, stars bool, msg string) []Expr {
	var list []Expr
	for {
		if t := p.peek(); stars && t.isOp("*") {
			p.swallow()
			list = append(list, &Star{Typed{Pos: t.pos}})
		} else {
			list = append(list, p.parseExpr())
		}
		t := p.peek()
		switch {
		case t.isOp(","):
			p.swallow()
		case t.isOp(close):
			p.swallow()
			return list
		default:
			p.fail(msg)
		}
	}
}
