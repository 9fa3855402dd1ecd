package output

import (
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// FlushSize is how many bytes Text buffers at most before it writes them
// without waiting for Flush.
const FlushSize = 64 << 10

// Text renders output as SystemTap's text, byte for byte (see the package
// comment), and writes it to an io.Writer.
type Text struct {
	w   io.Writer
	buf []byte
	err error // the failed write of an automatic flush, for the next Flush
}

// NewText returns a Text writing to w.
func NewText(w io.Writer) *Text { return &Text{w: w} }

// Print renders a print-family call with printf's room.
func (t *Text) Print(f *format.Format, args []format.Arg, mem format.Memory) error {
	return t.keep(f.Exec(t.buf, args, mem, format.BufferSize))
}

// Hist renders a histogram; it fails with format.ErrEmpty when s holds no
// value.
func (t *Text) Hist(s *format.Stat) error {
	return t.keep(s.AppendHist(t.buf))
}

// keep makes out, the buffer with a rendering appended, the buffer, unless
// the rendering failed.
func (t *Text) keep(out []byte, err error) error {
	if err != nil {
		return err
	}
	t.buf = out
	t.flushIfFull()
	return nil
}

// Log writes msg and a newline.
func (t *Text) Log(msg string) {
	t.buf = append(append(t.buf, msg...), '\n')
	t.flushIfFull()
}

// Global writes the display of g, a line per element.
func (t *Text) Global(g *Global) {
	for i := range g.Elements {
		start := len(t.buf)
		t.buf = appendElement(t.buf, g, &g.Elements[i])
		t.buf = t.buf[:min(len(t.buf), start+format.BufferSize)]
		t.flushIfFull()
	}
}

// Flush writes what is buffered. Its error reports the failed writes since
// the last Flush: the first automatic one's, and its own.
func (t *Text) Flush() error {
	err := errors.Join(t.err, t.write())
	t.err = nil
	return err
}

func (t *Text) flushIfFull() {
	if len(t.buf) < FlushSize {
		return
	}
	if err := t.write(); t.err == nil {
		t.err = err
	}
}

func (t *Text) write() error {
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.w.Write(t.buf)
	t.buf = t.buf[:0]
	return err
}

// appendElement appends the display line of element e of g.
func appendElement(b []byte, g *Global, e *Element) []byte {
	b = append(b, g.Name...)
	if g.Keys != nil {
		b = append(b, '[')
		for i, k := range e.Key {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, i < len(g.Keys) && g.Keys[i] == syntax.TypeString, k)
		}
		b = append(b, ']')
	}
	if g.Type == syntax.TypeStats {
		b = appendStat(b, e.Stat, g.Keys == nil)
	} else {
		b = appendValue(append(b, '='), g.Type == syntax.TypeString, e.Value)
	}
	return append(b, '\n')
}

// appendValue appends a long in decimal, or a string in double quotes up to
// its first NUL byte.
func appendValue(b []byte, isString bool, v format.Arg) []byte {
	if !isString {
		return strconv.AppendInt(b, v.Int, 10)
	}
	s, _, _ := strings.Cut(v.Str, "\x00")
	return append(append(append(b, '"'), s...), '"')
}

// statOps are the aggregates a statistic's display shows, in order.
var statOps = []string{format.OpCount, format.OpMin, format.OpMax, format.OpSum, format.OpAvg}

// appendStat appends " @count=N @min=N @max=N @sum=N @avg=N", or for a
// scalar statistic holding no value " @count=0x0". A nil s holds no value.
func appendStat(b []byte, s *format.Stat, scalar bool) []byte {
	if s == nil {
		s = &format.Stat{}
	}
	if scalar && s.Count == 0 {
		return append(b, " @count=0x0"...)
	}
	for _, op := range statOps {
		v, _ := s.Get(op) // an empty statistic shows zeros
		b = strconv.AppendInt(append(b, " @"+op+"="...), v, 10)
	}
	return b
}
