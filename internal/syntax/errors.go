package syntax

import (
	"fmt"
	"io"
	"runtime"
	"strings"
)

// Error is one parse error, rendered as stap renders it. The rendering
// (with the whole source line) is made when it is first asked for: a
// line of a megabyte with a thousand errors on it must not cost a
// thousand copies of the line, when stap prints one error per origin.
type Error struct {
	Msg string // the text after "parse error: "
	Pos Pos    // where it points; invalid when it points at the end of the file
	// Chain holds a follow-on note printed with the error (for a redefined
	// macro: where it was first defined); it is not counted as an error.
	Chain *Error
	// Hint says how to write what the script seems to mean (a bpftrace
	// user's probes in SystemTap's syntax), or is empty.
	Hint string
	// text is the rendering, once made; tok is the token the error names
	// ("at:" when explicit) or blames ("saw:"), nil at the end of file.
	text     string
	tok      *token
	explicit bool
	file     string
	site     string
	// noSkip: parsing resumes at the next token, not the next declaration.
	noSkip bool
	// summary marks the "Input file ... is empty" verdict that stap prints
	// instead of the error count; it is not a parse error.
	summary bool
}

func (e *Error) Error() string { return strings.TrimSuffix(e.rendered(), "\n") }

// Text returns the full rendering: the message, the "saw:"/"at:" line, the
// source line with a caret, the macro expansion chain and a blank line.
func (e *Error) Text() string {
	s := e.rendered()
	for c := e.Chain; c != nil; c = c.Chain {
		s += c.rendered()
	}
	return s
}

// rendered is the error's own text, made on the first call.
func (e *Error) rendered() string {
	if e.text == "" {
		e.text = renderError(e.Msg, e.tok, e.explicit, e.file)
		if e.Hint != "" {
			e.text = strings.TrimSuffix(e.text, "\n") + fmt.Sprintf("%s  hint: %s\n\n", errAlign, e.Hint)
		}
	}
	return e.text
}

// ErrorList is the list of errors of one Parse. stap prints an error only the
// first time its origin in the parser reports it; later ones are suppressed but
// still counted. A script without declarations ends the list with stap's
// "Input file '...' is empty." verdict (see Empty), printed instead of the count.
type ErrorList []*Error

// Empty reports whether the script had no declarations (then stap prints
// "Input file '...' is empty[ after preprocessing]." instead of a count).
func (l ErrorList) Empty() bool { return len(l) > 0 && l[len(l)-1].summary }

// count returns the number of parse errors proper.
func (l ErrorList) count() int {
	if l.Empty() {
		return len(l) - 1
	}
	return len(l)
}

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Render writes the errors that stap would show and returns how many it suppressed.
func (l ErrorList) Render(w io.Writer) (suppressed int) {
	seen := map[string]bool{}
	for _, e := range l {
		if e.summary {
			continue
		}
		if seen[e.site] {
			suppressed++
			continue
		}
		seen[e.site] = true
		io.WriteString(w, e.Text())
	}
	return suppressed
}

// Suppressed returns how many errors Render leaves out as repetitions.
func (l ErrorList) Suppressed() int { return l.Render(io.Discard) }

// CountLine returns stap's summary line, e.g. "1 parse error." or "3 parse
// errors.", or the empty-file verdict.
func (l ErrorList) CountLine() string {
	if l.Empty() {
		return l[len(l)-1].Msg
	}
	if l.count() == 1 {
		return "1 parse error."
	}
	return fmt.Sprintf("%d parse errors.", l.count())
}

// Report renders the errors followed by the count line, as stap prints them
// before "Pass 1: parse failed.".
func (l ErrorList) Report() string {
	var b strings.Builder
	l.Render(&b)
	b.WriteString(l.CountLine())
	b.WriteByte('\n')
	return b.String()
}

// junkMessage is the lexer's own message for a junk token, which replaces the
// parser's when the parser trips over it.
func junkMessage(t *token, nargs int) string {
	switch t.junk {
	case junkNestedArg:
		return "invalid nested substitution of command line arguments"
	case junkInvalidArg:
		return fmt.Sprintf("command line argument out of range [1-%d]", nargs)
	case junkUnclosedQuote:
		return "Could not find matching closing quote"
	case junkUnclosedEmbedded:
		return "Could not find matching '%}' to close embedded function block"
	}
	return "unknown junk token"
}

const errAlign = "     "

// shownMessage is the message an error at tok shows: msg, or the lexer's
// own for a junk token.
func shownMessage(msg string, tok *token, nargs int) string {
	if isJunk(tok) {
		return junkMessage(tok, nargs)
	}
	return msg
}

func isJunk(tok *token) bool { return tok != nil && tok.kind == tokJunk && tok.junk != junkUnknown }

// renderError builds stap's text for an error showing msg. explicit tells
// whether the error names its token (rendered "at:") or merely blames the
// last token read ("saw:").
func renderError(msg string, tok *token, explicit bool, file string) string {
	var b strings.Builder
	junk := isJunk(tok)
	fmt.Fprintf(&b, "parse error: %s\n", msg)
	switch {
	case tok == nil:
		fmt.Fprintf(&b, "%s   saw: %s EOF\n", errAlign, file)
	case explicit || junk:
		fmt.Fprintf(&b, "%s    at: %s\n", errAlign, tok.describe())
		writeSource(&b, tok)
	default:
		fmt.Fprintf(&b, "%s   saw: %s\n", errAlign, tok.describe())
		writeSource(&b, tok)
	}
	b.WriteByte('\n')
	return b.String()
}

// writeSource writes the source line of tok with a caret under it, then the
// chain of macro invocations it was expanded from.
func writeSource(b *strings.Builder, tok *token) {
	for t := tok; t != nil; t = t.chain {
		if t != tok {
			fmt.Fprintf(b, "\tin expansion of macro: %s\n", t.describe())
		}
		if t.pos.Src == nil {
			return
		}
		line, col := t.pos.Src.shownLine(t.pos.Line, t.pos.Col)
		fmt.Fprintf(b, "%ssource: %s\n%s        ", errAlign, line, errAlign)
		for i := 0; i < col-1; i++ {
			if i < len(line) && isSpace(int(line[i])) {
				b.WriteByte(line[i])
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString("^\n")
	}
}

// callerSite identifies the code that raised an error, for stap's
// suppression of repeated errors from the same origin.
func callerSite(skip int) string {
	_, file, line, _ := runtime.Caller(skip + 1)
	return fmt.Sprintf("%s:%d", file, line)
}
