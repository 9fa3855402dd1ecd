package syntax

import (
	"fmt"
	"strconv"
	"strings"
)

// The preprocessor works on the token stream in two layers, as stap's does.
//
// The first layer (scanPP1) expands macros: `@define NAME(a, b) %( BODY %)`
// records BODY, and `@NAME(x, y)` replays it with `@a`, `@b` standing for the
// argument token lists, which are themselves expanded where they were written
// (closures). Macros are local to the file; library macros (.stpm files) are
// visible everywhere. An `@word` that names no macro passes through as an operator.
//
// The second layer (scanPP) evaluates conditionals
// `%( LHS OP RHS [&&|| ...] %? THEN %: ELSE %)`, keeping the tokens of the
// chosen branch and skipping the others, with nesting.

// macroDecl is a macro definition, or a parameter of an active invocation.
type macroDecl struct {
	name    string
	tok     *token
	params  []string
	body    []*token
	library bool
	// closure is the activation a parameter's tokens must be expanded in.
	closure *activation
	isParam bool
}

// MacroLibrary holds the macros of .stpm library files, visible to every script.
type MacroLibrary map[string]*macroDecl

type activation struct {
	tok    *token // the invocation
	cursor int
	params map[string]*macroDecl
	macro  *macroDecl
}

type condState int

const (
	keepThen condState = iota + 1
	skipThen
	keepElse
	skipElse
)

type condFrame struct {
	tok   *token
	state condState
}

type preprocessor struct {
	p      *parser
	sc     *scanner
	cfg    *Config
	macros map[string]*macroDecl
	stack  []*activation
	conds  []condFrame
	// expanded counts the tokens macro bodies have given (maxExpanded).
	expanded int
}

// maxExpanded bounds the tokens macros expand to in one file: a macro
// that uses the one before it twice doubles them, and 22 such macros in
// 700 bytes made 4 million tokens (a minute, 800 MB); stap has no bound.
// The library's largest file expands to about 6,000.
const maxExpanded = 1_000_000

// nextPP1 reads a raw token from the innermost macro body or the file.
func (pp *preprocessor) nextPP1() *token {
	if len(pp.stack) == 0 {
		return pp.sc.scan()
	}
	act := pp.stack[len(pp.stack)-1]
	if act.cursor < len(act.macro.body) {
		if pp.expanded++; pp.expanded > maxExpanded {
			outer := pp.stack[0].tok
			pp.stack = nil
			pp.p.failAt(fmt.Sprintf("macro expansion gives more than %d tokens", maxExpanded), outer)
		}
		t := pp.sc.newToken(*act.macro.body[act.cursor])
		t.chain = act.tok
		act.cursor++
		return t
	}
	return nil
}

// scanPP1 returns the next token with macros defined and expanded.
func (pp *preprocessor) scanPP1(ignoreDefines bool) *token {
	for {
		t := pp.nextPP1()
		if t == nil {
			if len(pp.stack) == 0 {
				return nil
			}
			pp.stack = pp.stack[:len(pp.stack)-1]
			continue
		}
		if t.isOp("@define") && !ignoreDefines {
			pp.define(t)
			continue
		}
		if t.kind == tokOperator && t.text[0] == '@' {
			if decl := pp.lookup(t.text[1:]); decl != nil {
				pp.invoke(t, decl)
				continue
			}
		}
		return t
	}
}

func (pp *preprocessor) lookup(name string) *macroDecl {
	var act *activation
	if len(pp.stack) > 0 {
		act = pp.stack[len(pp.stack)-1]
		if d := act.params[name]; d != nil {
			return d
		}
	}
	if act == nil || !act.macro.library {
		if d := pp.macros[name]; d != nil {
			return d
		}
	}
	if pp.cfg != nil {
		return pp.cfg.Macros[name]
	}
	return nil
}

func (pp *preprocessor) define(at *token) {
	p := pp.p
	if len(pp.stack) > 0 {
		p.failAt("'@define' forbidden inside macro body", at)
	}
	t := pp.sc.scan()
	if t == nil || t.kind != tokIdent {
		p.failAt("expected identifier", t)
	}
	name := t.text
	if prev := pp.macros[name]; prev != nil {
		e := p.newError(fmt.Sprintf("attempt to redefine macro '@%s' in the same file", name), t, true)
		e.Chain = p.newError(fmt.Sprintf("macro '@%s' first defined here", name), prev.tok, true)
		panic(bailout{e})
	}
	if name == "define" {
		p.failAt("attempt to redefine '@define'", t)
	}
	decl := &macroDecl{name: name, tok: t}
	pp.macros[name] = decl
	t = pp.sc.scan()
	sawParams := false
	if t.isOp("(") {
		sawParams = true
		for {
			t = pp.sc.scan()
			if t == nil || t.kind != tokIdent {
				p.failAt("expected identifier", t)
			}
			decl.params = append(decl.params, t.text)
			t = pp.sc.scan()
			if t.isOp(",") {
				continue
			}
			if t.isOp(")") {
				t = pp.sc.scan()
				break
			}
			p.failAt("expected ',' or ')'", t)
		}
	}
	if !t.isOp("%(") {
		if sawParams {
			p.failAt("expected '%('", t)
		}
		p.failAt("expected '%(' or '('", t)
	}
	if pp.slurpBody(&decl.body) == nil {
		p.failAt("incomplete macro definition - missing '%)'", decl.tok)
	}
}

// maxMacroDepth bounds nested macro expansion; stap itself recurses until it
// runs out of memory on a macro that invokes itself.
const maxMacroDepth = 1000

func (pp *preprocessor) invoke(t *token, decl *macroDecl) {
	p := pp.p
	if len(pp.stack) >= maxMacroDepth {
		pp.stack = nil
		p.failAt(fmt.Sprintf("macro expansion nested too deeply (more than %d levels)", maxMacroDepth), t)
	}
	var parent *activation
	if len(pp.stack) > 0 {
		parent = pp.stack[len(pp.stack)-1]
	}
	act := &activation{tok: t, macro: decl, params: map[string]*macroDecl{}}
	if decl.isParam && len(decl.params) == 0 {
		act.params = decl.closure.paramsOrEmpty()
		pp.stack = append(pp.stack, act)
		return
	}
	n := len(decl.params)
	if n > 0 {
		name := t.text[1:]
		u := pp.nextPP1()
		if !u.isOp("(") {
			plural := "s"
			if n == 1 {
				plural = ""
			}
			p.failAt(fmt.Sprintf("expected '(' in invocation of macro '@%s' taking %d parameter%s", name, n, plural), u)
		}
		for i, formal := range decl.params {
			param := &macroDecl{name: formal, tok: t, isParam: true, closure: parent}
			if parent == nil {
				param.closure = &activation{}
			}
			act.params[formal] = param
			u = pp.slurpParam(&param.body)
			switch {
			case u == nil:
				p.failAt("could not find end of macro invocation", t)
			case u.isOp(",") && i+1 == n:
				p.failAt(fmt.Sprintf("too many parameters for macro '@%s' (expected %d)", name, n), u)
			case u.isOp(")") && i+1 != n:
				p.failAt(fmt.Sprintf("too few parameters for macro '@%s' (expected %d)", name, n), u)
			}
		}
	}
	pp.stack = append(pp.stack, act)
}

func (a *activation) paramsOrEmpty() map[string]*macroDecl {
	if a == nil || a.params == nil {
		return map[string]*macroDecl{}
	}
	return a.params
}

// slurpParam collects one macro argument, stopping at an unbracketed `,` or
// `)`, which it returns (nil at the end of the input).
func (pp *preprocessor) slurpParam(body *[]*token) *token {
	return pp.slurpNested(body, []string{"(", "["}, []string{")", "]"}, []string{")", ","})
}

// slurpBody collects a macro body up to its matching `%)`, which it returns.
func (pp *preprocessor) slurpBody(body *[]*token) *token {
	return pp.slurpNested(body, []string{"%("}, []string{"%)"}, []string{"%)"})
}

// slurpNested collects tokens up to the first one of ends outside the
// brackets given by opens and closes, which it returns (nil at the end of
// the input).
func (pp *preprocessor) slurpNested(body *[]*token, opens, closes, ends []string) *token {
	nesting := 0
	for {
		t := pp.nextPP1()
		switch {
		case t == nil:
			return nil
		case isOpIn(t, opens):
			nesting++
		case nesting > 0 && isOpIn(t, closes):
			nesting--
		case nesting == 0 && isOpIn(t, ends):
			return t
		}
		*body = append(*body, t)
	}
}

// scan returns the next token of the preprocessed stream, nil at the end.
func (pp *preprocessor) scan() *token {
	p := pp.p
	for {
		state := condState(0)
		if n := len(pp.conds); n > 0 {
			state = pp.conds[n-1].state
		}
		var t *token
		if state == skipThen || state == skipElse {
			t = pp.skip()
		} else {
			t = pp.scanPP1(false)
		}
		if t == nil {
			if state != 0 {
				open := pp.conds[len(pp.conds)-1].tok
				pp.conds = pp.conds[:len(pp.conds)-1]
				p.failAt("incomplete conditional at end of file", open)
			}
			return nil
		}
		switch {
		case t.isOp("%?"):
			p.failAt("incomplete conditional - missing '%('", t)
		case t.isOp("%:"):
			if state == 0 {
				p.failAt("incomplete conditional - missing '%('", t)
			}
			if state == keepElse || state == skipElse {
				p.failAt("invalid conditional - duplicate '%:'", t)
			}
			next := keepElse
			if state == keepThen {
				next = skipElse
			}
			pp.conds[len(pp.conds)-1].state = next
		case t.isOp("%)"):
			if state == 0 {
				p.failAt("incomplete conditional - missing '%('", t)
			}
			pp.conds = pp.conds[:len(pp.conds)-1]
		case t.isOp("%("):
			pp.conds = append(pp.conds, condFrame{t, pp.condition(t)})
		default:
			return t
		}
	}
}

// condition reads `LHS OP RHS [&& ...] [|| ...] %?` after `%(` and returns the
// state the chosen branch starts in.
func (pp *preprocessor) condition(open *token) condState {
	result, and := false, true
	for {
		l := pp.scanPP1(false)
		op := pp.scanPP1(false)
		r := pp.scanPP1(false)
		if l == nil || op == nil || r == nil {
			pp.p.failAt("incomplete condition after '%('", open)
		}
		if !pp.eval(l, op, r) {
			and = false
		}
		n := pp.scanPP1(false)
		if n.isOp("&&") {
			continue
		}
		result = result || and
		and = true
		if n.isOp("||") {
			continue
		}
		if !n.isOp("%?") {
			pp.p.failAt("expected '%?' marker for conditional", open)
		}
		if result {
			return keepThen
		}
		return skipThen
	}
}

// skip passes over the tokens of an excluded branch, heeding only nested
// conditionals, and returns the `%:`, `%?` or `%)` that ends it.
func (pp *preprocessor) skip() *token {
	nesting := 0
	for {
		t, ok := pp.tryScanPP1()
		if !ok {
			continue
		}
		switch {
		case t == nil:
			return nil
		case t.isOp("%("):
			nesting++
		case nesting > 0 && t.isOp("%)"):
			nesting--
		case nesting == 0 && (t.isOp("%:") || t.isOp("%?") || t.isOp("%)")):
			return t
		}
	}
}

// tryScanPP1 is scanPP1 with errors swallowed (ok false), for skipped text.
func (pp *preprocessor) tryScanPP1() (t *token, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isBail := r.(bailout); !isBail {
				panic(r)
			}
			ok = false
		}
	}()
	return pp.scanPP1(true), true
}

// eval evaluates one comparison of a conditional.
func (pp *preprocessor) eval(l, op, r *token) bool {
	p := pp.p
	cfg := pp.cfg
	if l.kind == tokIdent {
		switch name := l.text; {
		case name == "kernel_v" || name == "kernel_vr" || name == "systemtap_v":
			if r.kind != tokString {
				p.failAt("expected string literal", r)
			}
			target := cfg.Version
			switch name {
			case "kernel_v":
				target, _, _ = strings.Cut(cfg.KernelRelease, "-")
			case "kernel_vr":
				target = cfg.KernelRelease
			}
			return pp.versionCompare(target, op, r)
		case name == "systemtap_privilege":
			if r.kind != tokString {
				p.failAt("expected string literal", r)
			}
			return pp.equality(op, cfg.Privilege == r.text)
		case name == "guru_mode":
			if r.kind != tokNumber {
				p.failAt("expected number", r)
			}
			rhs, _ := strconv.ParseInt(r.text, 0, 64)
			if rhs != 0 && rhs != 1 {
				p.failAt("expected 0 or 1", op)
			}
			if !op.isOp("==") && !op.isOp("!=") {
				p.failAt("expected '==' or '!='", op)
			}
			guru := int64(0)
			if cfg.Guru {
				guru = 1
			}
			return compareOrdered(guru, rhs, op, p)
		case name == "arch" || name == "runtime":
			if r.kind != tokString {
				p.failAt("expected string literal", r)
			}
			target := cfg.Arch
			if name == "runtime" {
				target = cfg.Runtime
			}
			return pp.equality(op, fnmatch(r.text, target))
		case strings.HasPrefix(name, "CONFIG_"):
			return pp.evalConfig(l, op, r)
		}
	}
	switch {
	case l.kind == tokString && r.kind == tokString:
		return compareOrdered(l.text, r.text, op, p)
	case l.kind == tokNumber && r.kind == tokNumber:
		return compareOrdered(lexInt(l.text), lexInt(r.text), op, p)
	case l.kind == tokString && r.kind == tokNumber && op.kind == tokOperator:
		p.failAt("expected string literal as right value", r)
	case l.kind == tokNumber && r.kind == tokString && op.kind == tokOperator:
		p.failAt("expected number literal as right value", r)
	}
	p.failAt("expected 'arch', 'kernel_v', 'kernel_vr', 'systemtap_v',\n"+
		"             'runtime', 'systemtap_privilege', 'CONFIG_...', or\n"+
		"             comparison between strings or integers", l)
	return false
}

func (pp *preprocessor) equality(op *token, match bool) bool {
	switch {
	case op.isOp("=="):
		return match
	case op.isOp("!="):
		return !match
	}
	pp.p.failAt("expected '==' or '!='", op)
	return false
}

func (pp *preprocessor) versionCompare(target string, op, r *token) bool {
	wildcard := strings.ContainsAny(r.text, "*?[")
	if wildcard {
		if !op.isOp("==") && !op.isOp("!=") {
			if !isComparison(op) {
				pp.p.failAt("expected comparison operator", op)
			}
			pp.p.failAt("wildcard not allowed with order comparison operators", op)
		}
		return pp.equality(op, fnmatch(r.text, target))
	}
	return compareOrdered(strverscmp(target, r.text), 0, op, pp.p)
}

func (pp *preprocessor) evalConfig(l, op, r *token) bool {
	p := pp.p
	lhs := pp.cfg.KConfig[l.text]
	switch {
	case r.kind == tokString:
		return pp.equality(op, fnmatch(r.text, lhs))
	case r.kind == tokNumber:
		v, ok := strtoll(lhs)
		if !ok {
			p.failAt("Config option value not a number", l)
		}
		return compareOrdered(v, lexInt(r.text), op, p)
	case r.kind == tokIdent && strings.HasPrefix(r.text, "CONFIG_"):
		rhs := pp.cfg.KConfig[r.text]
		if lv, ok := strtoll(lhs); ok {
			if rv, ok := strtoll(rhs); ok {
				return compareOrdered(lv, rv, op, p)
			}
		}
		return compareOrdered(lhs, rhs, op, p)
	}
	p.failAt("expected string, number literal or other CONFIG_... as right side operand", r)
	return false
}

func isComparison(op *token) bool {
	if op.kind != tokOperator {
		return false
	}
	switch op.text {
	case "<", "<=", ">", ">=", "==", "!=":
		return true
	}
	return false
}

func compareOrdered[T int64 | string | int](a, b T, op *token, p *parser) bool {
	if isComparison(op) {
		switch op.text {
		case "<":
			return a < b
		case "<=":
			return a <= b
		case ">":
			return a > b
		case ">=":
			return a >= b
		case "==":
			return a == b
		case "!=":
			return a != b
		}
	}
	p.failAt("expected comparison operator", op)
	return false
}

// strtoll parses a whole string as C's strtoll with base 0 does.
func strtoll(s string) (int64, bool) {
	if s == "" {
		return 0, true // strtoll accepts "" (no digits, endp at the terminator)
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		if strings.HasPrefix(s, "0") && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
			v, err = strconv.ParseInt(s, 8, 64)
		}
	}
	return v, err == nil
}

// lexInt converts a number token the way lex_cast<int64_t> does: decimal digits
// from the start, 0 when there are none.
func lexInt(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// fnmatch matches name against a shell pattern as fnmatch(3) with FNM_NOESCAPE:
// `*`, `?` and bracket expressions, where `/` is an ordinary character.
func fnmatch(pattern, name string) bool {
	if pattern == "" {
		return name == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(name); i++ {
			if fnmatch(pattern[1:], name[i:]) {
				return true
			}
		}
		return false
	case '?':
		return name != "" && fnmatch(pattern[1:], name[1:])
	case '[':
		if end, ok := bracketEnd(pattern); ok {
			return name != "" && bracketMatch(pattern[1:end], name[0]) && fnmatch(pattern[end+1:], name[1:])
		}
	}
	return name != "" && name[0] == pattern[0] && fnmatch(pattern[1:], name[1:])
}

// bracketEnd finds the `]` closing the bracket expression at pattern[0].
func bracketEnd(pattern string) (int, bool) {
	i := 1
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		i++
	}
	if i < len(pattern) && pattern[i] == ']' {
		i++
	}
	for ; i < len(pattern); i++ {
		if pattern[i] == ']' {
			return i, true
		}
	}
	return 0, false
}

func bracketMatch(set string, c byte) bool {
	negate := set != "" && (set[0] == '!' || set[0] == '^')
	if negate {
		set = set[1:]
	}
	found := false
	for i := 0; i < len(set); i++ {
		if i+2 < len(set) && set[i+1] == '-' {
			if set[i] <= c && c <= set[i+2] {
				found = true
			}
			i += 2
		} else if set[i] == c {
			found = true
		}
	}
	return found != negate
}

// strverscmp compares version strings as glibc's strverscmp(3) does: digit
// runs compare numerically, and runs with leading zeros as fractional parts.
// It returns -1, 0 or 1.
func strverscmp(a, b string) int {
	const (
		sN, sI, sF, sZ = 0, 3, 6, 9
		cmp, length    = 2, 3
	)
	nextState := [...]int{sN, sI, sZ, sN, sI, sI, sN, sF, sF, sN, sF, sZ}
	resultType := [...]int{
		cmp, cmp, cmp, cmp, length, cmp, cmp, cmp, cmp,
		cmp, -1, -1, 1, length, length, 1, length, length,
		cmp, cmp, cmp, cmp, cmp, cmp, cmp, cmp, cmp,
		cmp, 1, 1, -1, cmp, cmp, -1, cmp, cmp,
	}
	at := func(s string, i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return 0
	}
	class := func(c int) int {
		switch {
		case c == '0':
			return 2
		case isDigit(c):
			return 1
		}
		return 0
	}
	sign := func(d int) int {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
		return 0
	}
	i := 0
	c1, c2 := at(a, 0), at(b, 0)
	state := sN + class(c1)
	for c1 == c2 {
		if c1 == 0 {
			return 0
		}
		state = nextState[state]
		i++
		c1, c2 = at(a, i), at(b, i)
		state += class(c1)
	}
	switch r := resultType[state*3+class(c2)]; r {
	case cmp:
		return sign(c1 - c2)
	case length:
		j := i + 1
		for isDigit(at(a, j)) {
			if !isDigit(at(b, j)) {
				return 1
			}
			j++
		}
		if isDigit(at(b, j)) {
			return -1
		}
		return sign(c1 - c2)
	default:
		return r
	}
}
