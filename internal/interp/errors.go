package interp

import (
	"strings"

	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
)

// runError is a run-time error raised with panic and recovered at the handler
// boundary or by try/catch. Msg is stap's c->last_error; At is the token stap
// last noted (c->last_stmt), shown as "near TOKEN" when valid.
type runError struct {
	Msg string
	At  syntax.Pos
	// Uncatchable errors (MAXACTION) pass through try/catch.
	Uncatchable bool
}

// abortSignal unwinds a handler after abort(): no message, not catchable.
type abortSignal struct{}

func throw(msg string, at syntax.Pos) {
	panic(&runError{Msg: msg, At: at})
}

// diagnostic is the error as the output writer shows it: stap's line
// "ERROR: MSG near TOKEN at FILE:LINE:COL".
func (e *runError) diagnostic() *output.Diagnostic {
	d := &output.Diagnostic{Severity: output.Error, Kind: output.KindRuntime, Msg: e.Msg, At: e.At}
	if e.At.IsValid() {
		d.Near = tokenName(e.At)
	}
	return d
}

// stap's keywords, which it names without their text ("keyword at ...").
var keywords = map[string]bool{
	"probe": true, "global": true, "private": true, "function": true, "if": true, "else": true,
	"for": true, "foreach": true, "in": true, "limit": true, "return": true, "delete": true,
	"while": true, "break": true, "continue": true, "next": true, "string": true, "long": true,
	"try": true, "catch": true,
}

// operators of stap's lexer, longest first.
var operators = []string{
	"<<<=", ">>>=", "<<<", ">>>", "<<=", ">>=", "==", "!=", "<=", ">=", "&&", "||", "++", "--",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".=", "<<", ">>", "->", "=~", "!~",
}

// tokenName names the token at p as stap does in diagnostics, before its
// position: `identifier 'x'`, `operator '/'`, `keyword`.
func tokenName(p syntax.Pos) string {
	line := p.Src.DisplayLine(p.Line)
	rest := ""
	if p.Col-1 < len(line) && p.Col >= 1 {
		rest = line[p.Col-1:]
	}
	kind, text := classifyToken(rest)
	if kind == "keyword" {
		return kind
	}
	return kind + " '" + printable(text) + "'"
}

func classifyToken(s string) (kind, text string) {
	if s == "" {
		return "junk", ""
	}
	c := s[0]
	switch {
	case isAlpha(c) || c == '$' || c == '@' || c == '_':
		n := 1
		for n < len(s) && (isAlpha(s[n]) || isDigit(s[n]) || s[n] == '_' || s[n] == '$') {
			n++
		}
		switch {
		case c == '@':
			return "operator", s[:n]
		case keywords[s[:n]]:
			return "keyword", s[:n]
		}
		return "identifier", s[:n]
	case isDigit(c):
		n := 1
		for n < len(s) && (isAlpha(s[n]) || isDigit(s[n])) {
			n++
		}
		return "number", s[:n]
	case c == '"':
		return "string", stringTokenText(s[1:])
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return "operator", op
		}
	}
	return "operator", s[:1]
}

// stringTokenText is the content of a string token: up to the closing quote,
// with \" resolved.
func stringTokenText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			return b.String()
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// printable replaces non-printable bytes by '?', as stap's token printer does.
func printable(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// firstPos is the position of the first token of e, which stap uses as the
// token of an expression statement.
func firstPos(e syntax.Node) syntax.Pos {
	best := e.Position()
	syntax.Walk(e, func(n syntax.Node) bool {
		p := n.Position()
		if p.IsValid() && p.Src == best.Src && (p.Line < best.Line || p.Line == best.Line && p.Col < best.Col) {
			best = p
		}
		return true
	})
	return best
}

// stmtPos is stap's token of a statement, or of an expression used as one.
func stmtPos(s syntax.Node) syntax.Pos {
	switch s := s.(type) {
	case *syntax.ExprStmt:
		return firstPos(s.X)
	case syntax.Expr:
		return firstPos(s)
	}
	return s.Position()
}
