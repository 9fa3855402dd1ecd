package regexdfa

import (
	"fmt"
	"strconv"
	"strings"
)

// SystemTap compiles every =~ pattern in its pass 2 with a parser of its
// own, and refuses some patterns Go's accepts (`a{,2}`, `(?i)a`) while
// taking others Go's refuses (`a**`). CheckStapSyntax runs that grammar
// over a pattern so that the elaborator reports what stap reports, with
// stap's message and position.
//
// The pattern is read as stap reads it: the string literal as written in
// the script, its escapes still undecoded (\n, \x41, \101, \\), which the
// reader decodes one character at a time; positions count bytes of that
// text. The reader keeps one decoded character of lookahead, and the
// positions in stap's messages follow from that: most errors name the
// start of the last character read ("last"), some the offset just past the
// lookahead ("pos"), and a pattern whose lookahead is its last character
// counts as finished even before that character is consumed (so a trailing
// ')' goes unnoticed, and "[a" is an unclosed class at 1).
//
// The grammar: alternatives of concatenations of factors; a factor is '.',
// a bracket class, a group (`(?:` allowed, no other `(?` form), an anchor
// ^ or $, or a run of literal characters, each followed by any number of
// closures * + ? {n} {n,} {n,m} (n and m below 12345; an anchor takes
// none). Inside brackets: an optional ^, then single characters, ranges
// a-z (not inverted) and named classes [:alpha:], up to a ']' that is not
// the first.

// SyntaxError is a pattern stap refuses: its message and its byte offset
// in the literal as written, or -1 where stap names no position.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	if e.Pos < 0 {
		return "regex compilation error: " + e.Msg
	}
	return fmt.Sprintf("regex compilation error (at position %d): %s", e.Pos, e.Msg)
}

// CheckStapSyntax parses raw, a =~ pattern as written in the script, with
// SystemTap's grammar; it returns the first error stap reports, or nil.
func CheckStapSyntax(raw string) (err *SyntaxError) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*SyntaxError); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	p := &stapParser{text: raw, done: raw == ""}
	p.alternatives()
	if !p.done { // only a ')' stops the alternatives early
		p.failAt(p.pos, "unbalanced ')'")
	}
	return nil
}

// maxRepeat bounds the counts of {n,m}.
const maxRepeat = 12345

// namedClasses are the [:name:] classes stap knows.
var namedClasses = map[string]bool{
	"alpha": true, "alnum": true, "blank": true, "cntrl": true, "d": true, "digit": true,
	"xdigit": true, "graph": true, "l": true, "lower": true, "print": true, "punct": true,
	"s": true, "space": true, "u": true, "upper": true,
}

// stapParser reads the pattern with one decoded character of lookahead;
// the character 0 stands for none (as in stap, a decoded NUL ends a read).
type stapParser struct {
	text  string
	pos   int  // offset of the next undecoded byte
	last  int  // offset where the last decoded character started
	done  bool // no byte left to decode
	ahead byte
}

func (p *stapParser) failAt(pos int, format string, args ...any) {
	panic(&SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *stapParser) failLast(format string, args ...any) { p.failAt(p.last, format, args...) }

// byteAt is the byte at offset i, 0 past the end.
func (p *stapParser) byteAt(i int) byte {
	if i < len(p.text) {
		return p.text[i]
	}
	return 0
}

// hasLeft tells whether n bytes are left (stap's test, which an unsigned
// subtraction makes true for patterns shorter than n).
func (p *stapParser) hasLeft(n int) bool { return len(p.text) < n || p.pos <= len(p.text)-n }

// next consumes the lookahead (decoding it first if need be).
func (p *stapParser) next() byte {
	if p.ahead == 0 && p.done {
		p.failAt(p.pos, "unexpected end of regex")
	}
	if p.ahead == 0 {
		p.decode()
	}
	c := p.ahead
	p.ahead = 0
	return c
}

// peek returns the lookahead, decoding it if need be; 0 at the end.
func (p *stapParser) peek() byte {
	if p.ahead == 0 && !p.done {
		p.decode()
	}
	return p.ahead
}

// decode reads one character, resolving a backslash escape.
func (p *stapParser) decode() {
	p.last = p.pos
	c := p.text[p.pos]
	if c == '\\' {
		p.pos++
		if p.pos >= len(p.text) {
			p.failAt(p.pos, "unexpected end of regex")
		}
		c = p.escape(p.text[p.pos])
	}
	p.ahead = c
	p.pos++
	p.done = p.pos >= len(p.text)
}

// escape decodes the escape whose letter is c, at p.pos; \xHH and \OOO
// leave p.pos on their last digit.
func (p *stapParser) escape(c byte) byte {
	switch c {
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'v':
		return '\v'
	case 'f':
		return '\f'
	case 'r':
		return '\r'
	case 'x':
		return p.escapeDigits(16, 2, "two hex digits required in escape sequence")
	case '4', '5', '6', '7':
		p.failAt(p.pos, "octal escape sequence out of range")
	case '0', '1', '2', '3':
		return p.escapeDigits(8, 3, "three octal digits required in escape sequence")
	}
	return c
}

// escapeDigits decodes the n digits in base at p.pos (hex digits follow
// the 'x', octal ones start at p.pos). A bad one is blamed at p.pos+1 when
// the digit after p.pos is good, else at p.pos+2 (stap's arithmetic).
func (p *stapParser) escapeDigits(base, n int, msg string) byte {
	if p.pos >= len(p.text)-2 {
		p.failAt(p.pos, "%s", msg)
	}
	digits := p.text[p.pos+3-n : p.pos+3]
	if base == 16 {
		digits = strings.ToLower(digits)
	}
	v, err := strconv.ParseUint(digits, base, 16)
	if err != nil {
		blame := p.pos + 2
		if _, err := strconv.ParseUint(digits[n-2:n-1], base, 8); err == nil {
			blame = p.pos + 1
		}
		p.failAt(blame, "%s", msg)
	}
	p.pos += 2
	return byte(v)
}

func isStapSpecial(c byte) bool { return strings.IndexByte(".[{()\\*+?|^$", c) >= 0 }

func isClosure(c byte) bool { return c == '*' || c == '+' || c == '?' || c == '{' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// alternatives reads concatenations separated by '|'.
func (p *stapParser) alternatives() {
	p.concatenation()
	for p.peek() == '|' {
		p.next()
		p.concatenation()
	}
}

func (p *stapParser) concatenation() {
	p.factor()
	for c := p.peek(); c != 0 && c != '|' && c != ')'; c = p.peek() {
		p.factor()
	}
}

func (p *stapParser) factor() {
	c := p.peek()
	switch {
	case c == 0 || c == '|' || c == ')':
		return // empty
	case isClosure(c):
		p.failLast("unexpected '%c'", c)
	case c == '\\' || !isStapSpecial(c):
		p.literals()
		p.closures(false)
		return
	}
	p.next()
	switch c {
	case '[':
		p.bracket()
		p.expect(']')
	case '(':
		p.group()
	}
	p.closures(c == '^' || c == '$')
}

// literals reads a run of ordinary or escaped characters.
func (p *stapParser) literals() {
	for c := p.peek(); c != 0 && (c == '\\' || !isStapSpecial(c)); {
		if c == '\\' {
			p.next()
			p.peek()
		}
		p.next()
		if c = p.peek(); isClosure(c) {
			return // the closure governs the last character
		}
	}
}

// group reads the rest of a parenthesized group, after its '('.
func (p *stapParser) group() {
	if p.peek() == '?' {
		p.next()
		if c := p.peek(); c != ':' {
			tail := string([]byte{c, '\''})
			if c == 0 { // stap's message stops at the NUL
				tail = ""
			}
			p.failLast("unexpected '(?%s", tail)
		}
	}
	p.alternatives()
	p.expect(')')
}

// closures reads the postfix operators after a factor; anchor tells that
// the factor was ^ or $, which takes none.
func (p *stapParser) closures(anchor bool) {
	for c := p.peek(); isClosure(c); c = p.peek() {
		p.next()
		if anchor {
			p.failLast("postfix closure '%c' applied to anchoring operator", c)
		}
		if c == '{' {
			p.counts()
		}
	}
}

// counts reads the rest of {n}, {n,} or {n,m}, after the '{'.
func (p *stapParser) counts() {
	p.number()
	switch p.next() {
	case '}':
	case ',':
		switch c := p.peek(); {
		case c == '}':
			p.next()
		case isDigit(c):
			p.number()
			p.expect('}')
		default:
			p.failAt(p.pos, "expected '}' or number")
		}
	default:
		p.failLast("expected ',' or '}'")
	}
}

// number reads a repetition count.
func (p *stapParser) number() {
	var digits []byte
	for c := p.peek(); isDigit(c); c = p.peek() {
		digits = append(digits, p.next())
	}
	if len(digits) == 0 {
		p.failAt(p.pos, "expected number")
	}
	v, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		p.failAt(p.pos, "could not parse number %s", digits)
	}
	if int32(v) >= maxRepeat { // stap keeps the count in a C int
		p.failAt(p.pos, "%s is too large", digits)
	}
}

// expect consumes the character want.
func (p *stapParser) expect(want byte) {
	if p.ahead == 0 && p.done {
		p.failLast("expected %c, found end of regex", want)
	}
	if c := p.next(); c != want {
		p.failLast("expected %c, found %c", want, c)
	}
}

// bracket reads the inside of a bracket class, up to its closing ']'.
func (p *stapParser) bracket() {
	if p.peek() == '^' {
		p.next()
	}
	for {
		if p.done {
			p.failLast("unclosed character class")
		}
		p.classItem()
		if p.peek() == ']' {
			return
		}
	}
}

// classItem reads one character, range or named class of a bracket.
func (p *stapParser) classItem() {
	c := p.peek()
	switch c {
	case '\\':
		p.next()
		c = p.peek()
		p.next()
	case '[':
		p.next()
		if p.peek() == ':' {
			p.next()
			p.namedClass()
			return
		}
	default:
		p.next()
	}
	if !p.hasLeft(2) || p.peek() != '-' || p.byteAt(p.pos) == ']' {
		return
	}
	p.next()
	if hi := p.peek(); hi < c {
		p.failAt(p.pos, "Inverted character range %c-%c", c, hi)
	}
	p.next()
}

// namedClass reads the rest of [:name:], after the "[:".
func (p *stapParser) namedClass() {
	var name []byte
	for c := p.peek(); ; c = p.peek() {
		if p.done {
			p.failAt(p.pos, "unclosed character class '[:%s'", name)
		}
		if p.hasLeft(2) && c == ':' && p.byteAt(p.pos) == ']' {
			p.next()
			p.next()
			if !namedClasses[string(name)] {
				p.failAt(-1, "unknown character class '%s'", name)
			}
			return
		}
		name = append(name, c)
		p.next()
	}
}
