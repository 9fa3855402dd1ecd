package syntax

import (
	"strconv"
	"strings"
)

// scanner turns a Source into tokens, following stap's lexer: `#`, `//` and
// `/* */` comments; identifiers that may start with `$` or `@` (the latter are
// operators); numbers as runs of alphanumerics (validated by the parser);
// strings whose C escapes are kept for later; `%{ ... %}` embedded code; and the
// longest-match operators. Command-line arguments `$N`, `@N`, `$#`, `@#` are
// pasted into the input as text, so they may form part of longer tokens; every
// token that starts inside pasted text gets the position of the argument reference.
type scanner struct {
	src *Source
	// input is the source's text, with the arguments pasted so far.
	input string
	off   int
	args  []string

	line, col int
	// suspended counts pasted bytes still to be read; while positive the cursor
	// stays on the argument reference and resumes at resumeLine/resumeCol.
	suspended             int
	resumeLine, resumeCol int

	sawTokens bool
	// slab holds the tokens not yet given out (newToken).
	slab []token
}

// tokenSlab is how many tokens newToken allocates at a time: a file's
// tokens are a third of what parsing it allocates, and one allocation
// for each was a fifth of its time.
const tokenSlab = 256

// newToken returns a new token, a copy of t, out of the scanner's slab.
func (s *scanner) newToken(t token) *token {
	if len(s.slab) == 0 {
		s.slab = make([]token, tokenSlab)
	}
	n := &s.slab[0]
	*n = t
	s.slab = s.slab[1:]
	return n
}

func newScanner(src *Source, args []string) *scanner {
	return &scanner{src: src, input: src.Text, args: args, line: 1, col: 1}
}

func (s *scanner) peekByte(n int) int {
	if s.off+n >= len(s.input) {
		return -1
	}
	return int(s.input[s.off+n])
}

func (s *scanner) getByte() int {
	c := s.peekByte(0)
	if c < 0 {
		return c
	}
	s.off++
	if s.suspended > 0 {
		s.suspended--
		if s.suspended == 0 {
			s.line, s.col = s.resumeLine, s.resumeCol
		}
	} else if c == '\n' {
		s.line++
		s.col = 1
	} else {
		s.col++
	}
	return c
}

// paste inserts text at the read position; its bytes all read as if at pos.
func (s *scanner) paste(text string, pos Pos) {
	s.input = s.input[:s.off] + text + s.input[s.off:]
	s.suspended += len(text)
	s.resumeLine, s.resumeCol = s.line, s.col
	s.line, s.col = pos.Line, pos.Col
}

func isSpace(c int) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c int) bool { return isAlpha(c) || isDigit(c) }
func isPunct(c int) bool { return c > 0x20 && c < 0x7f && !isAlnum(c) }

// scan returns the next token, or nil at the end of the input.
func (s *scanner) scan() *token {
	afterSpace := false
	for {
		suspendedAtStart := s.suspended > 0
		pos := Pos{Src: s.src, Line: s.line, Col: s.col}
		c := s.getByte()
		if c < 0 {
			return nil
		}
		s.sawTokens = true
		if isSpace(c) {
			afterSpace = true
			continue
		}
		c2 := s.peekByte(0)
		if (c == '$' || c == '@') && (c2 == '#' || isDigit(c2)) {
			if t := s.argument(c, pos, suspendedAtStart); t != nil {
				t.afterSpace = afterSpace
				return t
			}
			continue
		}
		if s.comment(c, c2) {
			afterSpace = true
			continue
		}
		t := s.token(c, c2, pos)
		t.afterSpace = afterSpace
		return t
	}
}

// argument handles $N, @N, $#, @#: it pastes the argument and returns nil, or
// returns a junk token for a bad reference.
func (s *scanner) argument(c int, pos Pos, nested bool) *token {
	var text string
	if s.peekByte(0) == '#' {
		s.getByte()
		text = strconv.Itoa(len(s.args))
		if c == '@' {
			text = quoteString(text)
		}
	} else {
		idx := 0
		for {
			d := s.peekByte(0)
			if d < 0 || !isDigit(d) {
				break
			}
			s.getByte()
			idx = idx*10 + d - '0'
			if idx > len(s.args) {
				break
			}
		}
		if !nested && (idx == 0 || idx > len(s.args)) {
			return s.newToken(token{kind: tokJunk, junk: junkInvalidArg, pos: pos})
		}
		if !nested {
			text = s.args[idx-1]
			if c == '@' {
				text = quoteString(text)
			}
		}
	}
	if nested {
		return s.newToken(token{kind: tokJunk, junk: junkNestedArg, pos: pos})
	}
	s.paste(text, pos)
	return nil
}

// comment skips a comment starting with c, c2 and reports whether there was one.
func (s *scanner) comment(c, c2 int) bool {
	switch {
	case c == '#' || c == '/' && c2 == '/':
		line := s.line
		for {
			c = s.getByte()
			if c < 0 || s.line != line {
				return true
			}
		}
	case c == '/' && c2 == '*':
		s.getByte()
		c = s.getByte()
		c2 = s.getByte()
		for c2 >= 0 && !(c == '*' && c2 == '/') {
			c, c2 = c2, s.getByte()
		}
		return true
	}
	return false
}

func (s *scanner) token(c, c2 int, pos Pos) *token {
	switch {
	case isAlpha(c) || c == '$' || c == '@' || c == '_':
		return s.word(c, pos)
	case isDigit(c):
		start := s.off - 1
		for isAlnum(s.peekByte(0)) {
			s.getByte()
		}
		return s.newToken(token{kind: tokNumber, text: s.text(start, s.off), pos: pos})
	case c == '"':
		return s.stringLit(pos)
	case c == '%' && c2 == '{':
		return s.embedded(pos)
	case isPunct(c):
		return s.newToken(token{kind: tokOperator, text: s.operator(c, c2), pos: pos})
	}
	return s.newToken(token{kind: tokJunk, junk: junkUnknown, text: "\\x" + strconv.FormatInt(int64(c)|0x100, 16)[1:], pos: pos})
}

// text is the input from start to end, which a token spans (no copy).
func (s *scanner) text(start, end int) string { return s.input[start:end] }

func (s *scanner) word(c int, pos Pos) *token {
	start := s.off - 1
	for d := s.peekByte(0); isAlnum(d) || d == '_' || d == '$'; d = s.peekByte(0) {
		s.getByte()
	}
	t := s.newToken(token{kind: tokIdent, text: s.text(start, s.off), pos: pos})
	if t.text[0] == '@' {
		t.kind = tokOperator
	} else if isKeyword(t.text) {
		t.kind = tokKeyword
	}
	return t
}

// stringLit reads a string after its opening quote. Escapes stap passes to C
// (\a \b \t \n \v \f \r \x, octal digits, \\) stay escaped; any other escaped
// character stands for itself.
func (s *scanner) stringLit(pos Pos) *token {
	start := s.off
	for c := s.peekByte(0); c >= 0 && c != '"' && c != '\\' && c != '\n'; c = s.peekByte(0) {
		s.getByte() // a literal without escapes is a piece of the input
	}
	if s.peekByte(0) == '"' {
		s.getByte()
		return s.newToken(token{kind: tokString, text: s.text(start, s.off-1), pos: pos})
	}
	var b strings.Builder
	b.WriteString(s.input[start:s.off])
	for {
		c := s.getByte()
		if c < 0 || c == '\n' {
			return s.newToken(token{kind: tokJunk, junk: junkUnclosedQuote, pos: pos})
		}
		if c == '"' {
			return s.newToken(token{kind: tokString, text: b.String(), pos: pos})
		}
		if c == '\\' {
			c = s.getByte()
			if strings.IndexByte("xabtnvfr01234567\\", byte(c)) >= 0 && c > 0 {
				b.WriteByte('\\')
			}
			if c < 0 {
				continue
			}
		}
		b.WriteByte(byte(c))
	}
}

func (s *scanner) embedded(pos Pos) *token {
	s.getByte()
	var b strings.Builder
	c := s.getByte()
	c2 := s.getByte()
	for c2 >= 0 {
		if c == '%' && c2 == '}' {
			return s.newToken(token{kind: tokEmbedded, text: b.String(), pos: pos})
		}
		b.WriteByte(byte(c))
		c, c2 = c2, s.getByte()
	}
	return s.newToken(token{kind: tokJunk, junk: junkUnclosedEmbedded, pos: pos})
}

// multiCharOps are the operators of two and three characters, by their
// bytes (c<<16 | c2<<8 | c3, c3 0 for two): the scanner returns these
// strings, not new ones (one an operator token).
var multiCharOps = func() map[int]string {
	ops := map[int]string{}
	for _, op := range []string{
		"<<<", ">>>", "<<=", ">>=",
		"==", "!=", "<=", ">=", "=~", "!~",
		"+=", "-=", "*=", "/=", "%=", "&=",
		"^=", "|=", ".=", "&&", "||", "++",
		"--", "->", "<<", ">>",
		"%(", "%?", "%:", "%)",
	} {
		key := int(op[0])<<16 | int(op[1])<<8
		if len(op) == 3 {
			key |= int(op[2])
		}
		ops[key] = op
	}
	return ops
}()

func (s *scanner) operator(c, c2 int) string {
	if c2 < 0 || !opSeconds[c2&0x7f] {
		return oneCharOps[c]
	}
	if c3 := s.peekByte(1); c3 > 0 {
		if op, ok := multiCharOps[c<<16|c2<<8|c3]; ok {
			s.getByte()
			s.getByte()
			return op
		}
	}
	if op, ok := multiCharOps[c<<16|c2<<8]; ok {
		s.getByte()
		return op
	}
	return oneCharOps[c]
}

// oneCharOps are the strings of the operators of one character (isPunct's
// bytes), made once; opSeconds tells the bytes that may follow the first
// of a longer operator (multiCharOps), which most operators' next byte is
// not (a map lookup for each was a tenth of the scan).
var oneCharOps, opSeconds = func() (ops [0x80]string, seconds [0x80]bool) {
	for c := range ops {
		if isPunct(c) {
			ops[c] = string(rune(c))
		}
	}
	for key := range multiCharOps {
		seconds[key>>8&0x7f] = true
	}
	return ops, seconds
}()

// quoteString quotes s as stap's lex_cast_qstring does: `"` and `\` escaped,
// unprintable bytes as three-digit octal escapes.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			b.WriteByte('0' + c>>6&7)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
