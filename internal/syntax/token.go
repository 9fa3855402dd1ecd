package syntax

import "strings"

// tokenKind classifies tokens the way stap's lexer does; the names appear in
// diagnostics ("saw: operator ';' at ...").
type tokenKind uint8

const (
	tokJunk tokenKind = iota
	tokIdent
	tokOperator
	tokString
	tokNumber
	tokEmbedded
	tokKeyword
)

func (k tokenKind) String() string {
	switch k {
	case tokIdent:
		return "identifier"
	case tokOperator:
		return "operator"
	case tokString:
		return "string"
	case tokNumber:
		return "number"
	case tokEmbedded:
		return "embedded-code"
	case tokKeyword:
		return "keyword"
	}
	return "junk"
}

// junkKind tells why the lexer produced a junk token; all but junkUnknown
// replace the parser's message with their own.
type junkKind uint8

const (
	junkUnknown junkKind = iota
	junkNestedArg
	junkInvalidArg
	junkUnclosedQuote
	junkUnclosedEmbedded
)

// token is one lexical token. Text is stap's token content: for strings the
// characters between the quotes with `\"` and unknown escapes resolved and the
// C escapes (\n, \t, \x41, \101, \\ ...) kept as written. Chain points at the
// macro invocation the token was expanded from.
type token struct {
	text  string
	pos   Pos
	chain *token
	kind  tokenKind
	junk  junkKind
	// afterSpace is true when whitespace or a comment preceded the token.
	afterSpace bool
}

func (t *token) is(kind tokenKind, text string) bool {
	return t != nil && t.kind == kind && t.text == text
}

func (t *token) isOp(text string) bool { return t.is(tokOperator, text) }

// describe renders a token as stap does in "saw:" and "at:" lines.
func (t *token) describe() string {
	var b strings.Builder
	b.WriteString(t.kind.String())
	if t.kind != tokEmbedded && t.kind != tokKeyword {
		b.WriteString(" '")
		for i := 0; i < len(t.text); i++ {
			c := t.text[i]
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteString("'")
	}
	b.WriteString(" at ")
	b.WriteString(t.pos.String())
	return b.String()
}

// isKeyword tells whether an identifier's text is a keyword (a switch:
// the lookup of a map hashed every identifier of the library).
func isKeyword(text string) bool {
	switch text {
	case "probe", "global", "private", "function", "if", "else", "for", "foreach", "in",
		"limit", "return", "delete", "while", "break", "continue", "next", "string",
		"long", "try", "catch":
		return true
	}
	return false
}

// atWords are the built-in @operators; a macro of the same name draws a warning.
var atWords = map[string]bool{
	"cast": true, "defined": true, "probewrite": true, "entry": true,
	"perf": true, "var": true, "avg": true, "count": true, "sum": true,
	"min": true, "max": true, "hist_linear": true, "hist_log": true,
	"const": true, "variance": true, "kregister": true, "uregister": true,
	"kderef": true, "uderef": true,
}
