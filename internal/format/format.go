// Package format renders SystemTap output byte for byte: printf-style formats,
// the print family, statistics aggregates and their histograms, and the string
// helpers of the tapset (text_str, string_quoted, ctime).
//
// # printf
//
// A format string is compiled once (Compile) into a list of pieces: literal chunks
// and conversion directives. Compilation follows the SystemTap translator's format
// parser, including its quirks: at most one flag character per directive (so
// "%-08d" is left-justified with width 8 and "%+-5d" is an error), at most one 'l'
// length modifier and no 'h', and conversions b c s m M d i u o x X p. Every
// numeric argument is a 64-bit long; '*' width and precision take a long argument
// each, before the value.
//
// Rendering (Exec, Append) follows SystemTap's module runtime, which the compiled
// printf of each script calls into: number() for the integer conversions (so
// "%#x" of 0 is "0x0" and "%#o" of 0 is "00", unlike C), %p as "%#x", %c with
// C-style escapes under '#', %s and %m/%M with a NUL byte appended under the '0'
// flag, %b as the raw little-endian bytes of the value (width and precision 1, 2,
// 4 or 8). A call has a fixed amount of room (BufferSize for printf, the
// MAXSTRINGLEN in force for sprintf): widths and precisions are clamped to the
// room left and bytes past it are dropped, as the runtime does.
//
// # String length
//
// Every function that builds a script string value (Sprint, StringValue,
// TextStr, TextStrN, StringQuoted) takes maxLen, the MAXSTRINGLEN in force
// (-D MAXSTRINGLEN=N; DefaultMaxStringLen otherwise): a string value holds at
// most maxLen-1 bytes. A maxLen below 1 counts as 1: no room at all.
//
// # Arguments
//
// An Arg carries either a long or a string; the directive decides which field is
// read, so building an argument list costs no allocation.
package format

import (
	"errors"
	"strconv"
	"strings"
)

// Limits of SystemTap's runtime that shape output.
const (
	// BufferSize is STP_BUFFER_SIZE, the most one printf call writes.
	BufferSize = 8192
	// DefaultMaxStringLen is stap's default MAXSTRINGLEN.
	DefaultMaxStringLen = 512
	// MaxPrintArgs is the most arguments a print-family call may take.
	MaxPrintArgs = 32
	// pageSize bounds the bytes one %m or %M directive may dump.
	pageSize = 4096
)

// Kind is the type of value a directive consumes.
type Kind uint8

const (
	KindNone   Kind = iota // literal text: no argument
	KindLong               // a 64-bit integer
	KindString             // a string
)

func (k Kind) String() string {
	switch k {
	case KindLong:
		return "long"
	case KindString:
		return "string"
	}
	return "none"
}

// Arg is one argument of a formatted print: a long or a string. Only the field
// matching the directive's Kind is read.
type Arg struct {
	Int int64
	Str string
}

// Long returns a long argument.
func Long(v int64) Arg { return Arg{Int: v} }

// String returns a string argument.
func String(s string) Arg { return Arg{Str: s} }

// Flags are a directive's flag characters, with the runtime's bit values.
type Flags uint8

const (
	FlagZero    Flags = 1 << iota // '0': pad numbers with zeros; append a NUL to %s %m %M
	FlagSign                      // conversion is signed (%d, %i)
	FlagPlus                      // '+'
	FlagSpace                     // ' '
	FlagLeft                      // '-'
	FlagSpecial                   // '#' (and %p)
	FlagLarge                     // upper-case hex digits (%X)
)

// Errors reported by Compile and CheckArgs, with SystemTap's texts. The parser
// reports the first two as parse errors at the token after the format string;
// the elaborator reports ErrArgCount as a semantic error at the print call.
var (
	ErrConversion = errors.New("invalid or missing conversion specifier")
	ErrIncomplete = errors.New("trailing incomplete print format conversion")
	ErrArgCount   = errors.New("Wrong number of args to formatted print operator")
)

// Directive is one piece of a compiled format: a literal chunk (Verb 0) or a
// conversion.
type Directive struct {
	Verb     byte   // conversion character: b c s m M d i u o x X p; 0 for literal text
	Text     string // the literal text, for Verb 0
	Flags    Flags
	Width    int  // static width as written (modulo 2^32), or -1 when unspecified or WidthArg
	Prec     int  // static precision as written (modulo 2^32), or -1 when unspecified or PrecArg
	WidthArg bool // width comes from a long argument ('*')
	PrecArg  bool // precision comes from a long argument ('.*')
	base     uint64
}

// Kind is the kind of the value the directive converts.
func (d *Directive) Kind() Kind {
	switch d.Verb {
	case 0:
		return KindNone
	case 's':
		return KindString
	}
	return KindLong
}

// Format is a compiled format string.
type Format struct {
	pieces []Directive
	kinds  []Kind  // kinds of all arguments, in order, including '*' arguments
	memory bool    // has %m or %M
	source *string // the format string Compile compiled; nil for Print's
}

// Directives returns the format's pieces in order. The slice must not be modified.
func (f *Format) Directives() []Directive { return f.pieces }

// Args returns the kinds of the arguments the format consumes, in order: a '*'
// width, then a '*' precision, then the value, for each directive.
func (f *Format) Args() []Kind { return f.kinds }

// NumArgs is len(f.Args()).
func (f *Format) NumArgs() int { return len(f.kinds) }

// ReadsMemory reports whether the format dumps memory (%m, %M), which needs a
// Memory to render.
func (f *Format) ReadsMemory() bool { return f.memory }

// CheckArgs checks the number of arguments of a printf call; types are checked
// one by one against Args.
func (f *Format) CheckArgs(n int) error {
	if n != len(f.kinds) {
		return ErrArgCount
	}
	return nil
}

// Source returns the format string f was compiled from (a printf call's),
// and false for a format Print built (print, println, printd, printdln),
// which no format string wrote.
func (f *Format) Source() (string, bool) {
	if f.source == nil {
		return "", false
	}
	return *f.source, true
}

// String rebuilds a format string equivalent to f.
func (f *Format) String() string {
	var b []byte
	for i := range f.pieces {
		b = f.pieces[i].appendSource(b)
	}
	return string(b)
}

func (d *Directive) appendSource(b []byte) []byte {
	if d.Verb == 0 {
		for i := 0; i < len(d.Text); i++ {
			if d.Text[i] == '%' {
				b = append(b, '%')
			}
			b = append(b, d.Text[i])
		}
		return b
	}
	b = append(b, '%')
	for _, fl := range [...]struct {
		f Flags
		c byte
	}{{FlagZero, '0'}, {FlagPlus, '+'}, {FlagSpace, ' '}, {FlagLeft, '-'}} {
		if d.Flags&fl.f != 0 {
			b = append(b, fl.c)
		}
	}
	if d.Flags&FlagSpecial != 0 && d.Verb != 'p' {
		b = append(b, '#')
	}
	if d.WidthArg {
		b = append(b, '*')
	} else if d.Width >= 0 {
		b = strconv.AppendInt(b, int64(d.Width), 10)
	}
	if d.PrecArg {
		b = append(b, ".*"...)
	} else if d.Prec >= 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(d.Prec), 10)
	}
	return append(b, d.Verb)
}

// Compile parses a printf format string.
func Compile(format string) (*Format, error) {
	p := parser{src: format}
	if err := p.parse(); err != nil {
		return nil, err
	}
	f := newFormat(p.pieces)
	f.source = &format
	return f, nil
}

func newFormat(pieces []Directive) *Format {
	f := &Format{pieces: pieces}
	for i := range pieces {
		d := &pieces[i]
		if d.Verb == 0 {
			continue
		}
		if d.WidthArg {
			f.kinds = append(f.kinds, KindLong)
		}
		if d.PrecArg {
			f.kinds = append(f.kinds, KindLong)
		}
		f.kinds = append(f.kinds, d.Kind())
		f.memory = f.memory || d.Verb == 'm' || d.Verb == 'M'
	}
	return f
}

// Print returns the format the print family uses for arguments of the given
// kinds: each long in decimal, each string verbatim, delim between arguments
// (printd, printdln), and a newline at the end for the *ln variants.
func Print(kinds []Kind, delim string, newline bool) *Format {
	var pieces []Directive
	for i, k := range kinds {
		if i > 0 && cString(delim) != "" {
			pieces = appendLiteral(pieces, cString(delim))
		}
		d := Directive{Verb: 'd', Flags: FlagSign, Width: -1, Prec: -1, base: 10}
		if k == KindString {
			d = Directive{Verb: 's', Width: -1, Prec: -1}
		}
		pieces = append(pieces, d)
	}
	if newline {
		pieces = appendLiteral(pieces, "\n")
	}
	return newFormat(pieces)
}

// Char returns the format of print_char: its value's low byte, as %c
// renders it, without a format string (Source reports none).
func Char() *Format {
	f, _ := Compile("%c")
	f.source = nil
	return f
}

// appendLiteral adds text to the pieces, merging it with a preceding literal.
func appendLiteral(pieces []Directive, text string) []Directive {
	if n := len(pieces); n > 0 && pieces[n-1].Verb == 0 {
		pieces[n-1].Text += text
		return pieces
	}
	return append(pieces, Directive{Text: text})
}

// parser splits a format string the way SystemTap's translator does.
type parser struct {
	src    string
	i      int
	lit    []byte
	pieces []Directive
}

func (p *parser) parse() error {
	for p.i < len(p.src) {
		c := p.src[p.i]
		if c != '%' {
			p.lit = append(p.lit, c)
			p.i++
			continue
		}
		if p.i+1 < len(p.src) && p.src[p.i+1] == '%' {
			p.lit = append(p.lit, '%')
			p.i += 2
			continue
		}
		if p.i+1 == len(p.src) {
			// A lone trailing '%': stap's scanner runs past the end here and
			// then fails to find a conversion.
			return ErrConversion
		}
		p.flushLiteral()
		p.i++
		d, err := p.directive()
		if err != nil {
			return err
		}
		if d.Verb == 0 {
			break // an unfinished conversion with nothing in it is dropped
		}
		p.pieces = append(p.pieces, d)
	}
	p.flushLiteral()
	return nil
}

func (p *parser) flushLiteral() {
	if len(p.lit) > 0 {
		p.pieces = appendLiteral(p.pieces, cString(string(p.lit)))
		p.lit = p.lit[:0]
	}
}

// directive parses what follows a '%': one optional flag, a width, a precision,
// one optional 'l', and the conversion. It returns a Directive with Verb 0 when
// the format ends before the conversion with nothing specified.
func (p *parser) directive() (Directive, error) {
	d := Directive{Width: -1, Prec: -1}
	incomplete := func() (Directive, error) {
		if d.Flags != 0 || d.Width >= 0 || d.WidthArg || d.Prec >= 0 || d.PrecArg {
			return d, ErrIncomplete
		}
		return Directive{}, nil
	}
	switch p.peek() {
	case '0':
		d.Flags |= FlagZero
	case '+':
		d.Flags |= FlagPlus
	case '-':
		d.Flags |= FlagLeft
	case ' ':
		d.Flags |= FlagSpace
	case '#':
		d.Flags |= FlagSpecial
	}
	if d.Flags != 0 {
		p.i++
	}
	d.Width, d.WidthArg = p.count()
	if p.peek() == '.' {
		p.i++
		d.Prec, d.PrecArg = p.count()
	}
	if p.peek() == 'l' {
		p.i++
	}
	if p.i >= len(p.src) {
		return incomplete()
	}
	if !d.setVerb(p.src[p.i]) {
		return d, ErrConversion
	}
	p.i++
	return d, nil
}

// setVerb records the conversion character c, reporting whether it is one.
func (d *Directive) setVerb(c byte) bool {
	switch c {
	case 'b', 'c', 's', 'm', 'M':
	case 'd', 'i':
		d.Flags |= FlagSign
		d.base = 10
	case 'u':
		d.base = 10
	case 'o':
		d.base = 8
	case 'X':
		d.Flags |= FlagLarge
		d.base = 16
	case 'x':
		d.base = 16
	case 'p':
		d.Flags |= FlagSpecial
		d.base = 16
	default:
		return false
	}
	d.Verb = c
	return true
}

func (p *parser) peek() byte {
	if p.i < len(p.src) {
		return p.src[p.i]
	}
	return 0
}

// count reads a width or precision: digits, or `*` to take it from an
// argument; -1 when there is neither.
func (p *parser) count() (n int, fromArg bool) {
	switch {
	case p.peek() == '*':
		p.i++
		return -1, true
	case isDigit(p.peek()):
		return p.number(), false
	}
	return -1, false
}

// number reads a decimal width or precision. Like the translator's unsigned
// accumulator it wraps at 32 bits.
func (p *parser) number() int {
	var n uint32
	for isDigit(p.peek()) {
		n = n*10 + uint32(p.src[p.i]-'0')
		p.i++
	}
	return int(n)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// cString is s up to its first NUL byte.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}
