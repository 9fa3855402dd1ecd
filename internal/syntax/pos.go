package syntax

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A Source is one script or tapset file: its name as the user gave it and its text.
// Every position points into a Source, so every diagnostic can show the offending line.
type Source struct {
	Name string // "<input>" for -e scripts
	Text string
	// Library is set when the text was parsed as tapset library code
	// (Config.Tapset): its names never see the user's globals.
	Library bool
	// lineStarts[i] is the byte offset where line i+1 begins; built lazily.
	lineStarts []int
}

// NewSource returns a Source for name with the given text.
func NewSource(name, text string) *Source { return &Source{Name: name, Text: text} }

// Line returns the text of line n (1-based) without its newline, or "" when out of range.
func (s *Source) Line(n int) string {
	start, ok := s.offset(n, 1)
	if !ok {
		return ""
	}
	end := len(s.Text)
	if n < len(s.lineStarts) {
		end = s.lineStarts[n] - 1
	}
	return s.Text[start:end]
}

// From returns the text from line n, column col (1-based, in bytes) to the
// end of the source, or "" when out of range.
func (s *Source) From(n, col int) string {
	start, ok := s.offset(n, col)
	if !ok {
		return ""
	}
	return s.Text[min(start, len(s.Text)):]
}

// offset returns the byte offset of line n, column col.
func (s *Source) offset(n, col int) (int, bool) {
	if s == nil {
		return 0, false
	}
	if s.lineStarts == nil {
		s.lineStarts = []int{0}
		for i := 0; i < len(s.Text); i++ {
			if s.Text[i] == '\n' {
				s.lineStarts = append(s.lineStarts, i+1)
			}
		}
	}
	if n < 1 || n > len(s.lineStarts) || col < 1 {
		return 0, false
	}
	return s.lineStarts[n-1] + col - 1, true
}

// DisplayLine is line n made safe to print in a diagnostic (displayable).
func (s *Source) DisplayLine(n int) string { return displayable(s.Line(n)) }

// A diagnostic shows a source line whole up to maxShownLine bytes; of a
// longer one (generated, or garbage) it shows shownContext bytes either
// side of the column, between "...": a thousand diagnostics on a line of
// a megabyte would otherwise print a gigabyte (stap prints the whole line).
const (
	maxShownLine = 1024
	shownContext = 100
)

// shownLine is line n as a diagnostic pointing at column col shows it
// (displayable, cut around col when it is longer than maxShownLine), and
// the column of col in it.
func (s *Source) shownLine(n, col int) (string, int) {
	line := s.Line(n)
	if len(line) <= maxShownLine {
		return displayable(line), col
	}
	start, end := max(0, col-1-shownContext), min(len(line), max(col-1, 0)+shownContext)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	text, col := displayable(line[start:end]), col-start
	if start > 0 {
		text, col = "..."+text, col+len("...")
	}
	if end < len(line) {
		text += "..."
	}
	return text, col
}

// displayable is text with every control byte but the tab, and every
// byte that is not part of valid UTF-8, shown as '?', one for one, so a
// caret under a column stays where it belongs (stap echoes such bytes to
// the terminal as they are).
func displayable(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20 && r != '\t', r == 0x7f:
			b.WriteString(strings.Repeat("?", size))
		default:
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Pos is a position in a Source: 1-based line and column (columns count bytes, as stap's do).
// The zero Pos means "no position".
type Pos struct {
	Src  *Source
	Line int
	Col  int
}

// IsValid reports whether p refers to a real place in a source.
func (p Pos) IsValid() bool { return p.Line > 0 }

// File returns the name of the source file, or "" for the zero Pos.
func (p Pos) File() string {
	if p.Src == nil {
		return ""
	}
	return p.Src.Name
}

// String formats p as stap does: FILE:LINE:COL.
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File(), p.Line, p.Col) }

// SourceLine renders the two lines stap prints under a diagnostic: the source line
// after `prefix` (e.g. "        source: ") and a caret under column p.Col.
// Tabs in the source line are kept in the caret line so the caret stays aligned;
// a line longer than maxShownLine shows the part around the column.
func (p Pos) SourceLine(prefix string) string {
	if !p.IsValid() || p.Src == nil {
		return ""
	}
	line, col := p.Src.shownLine(p.Line, p.Col)
	var caret strings.Builder
	caret.WriteString(strings.Repeat(" ", len(prefix)))
	for i := 0; i < col-1 && i < len(line); i++ {
		if line[i] == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	return prefix + line + "\n" + caret.String() + "\n"
}
