package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Text renders output as SystemTap's text, byte for byte (see the package
// comment): the script's output to one io.Writer, diagnostics to another.
type Text struct {
	buffer
	diag io.Writer
	// Verbose shows the Attached event, as -v shows stap's pass lines.
	Verbose bool
}

// NewText returns a Text writing the output to w and diagnostics to diag.
func NewText(w, diag io.Writer) *Text { return &Text{buffer: buffer{w: w}, diag: diag} }

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

// Diagnostic writes "ERROR: MSG near TOKEN at FILE:LINE:COL" or "WARNING:
// MSG", and with Source the source line and a caret.
func (t *Text) Diagnostic(d *Diagnostic) {
	io.WriteString(t.diag, string(appendDiagnostic(nil, d)))
}

// appendDiagnostic appends d's text.
func appendDiagnostic(b []byte, d *Diagnostic) []byte {
	if !d.Bare {
		b = append(b, severityPrefix[d.Severity]...)
	}
	b = append(b, d.Msg...)
	if d.At.IsValid() {
		if d.Near != "" {
			b = append(append(b, " near "...), d.Near...)
		}
		b = append(append(b, " at "...), d.At.String()...)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if d.Source && d.At.IsValid() {
		b = append(append(b, d.At.SourceLine("        source: ")...), '\n')
	}
	return b
}

var severityPrefix = map[Severity]string{Error: "ERROR: ", Warning: "WARNING: "}

// Loss writes stap's warning, with the option that raises the limit.
func (t *Text) Loss(l *Loss) {
	fmt.Fprintf(t.diag, "WARNING: There were %d %s failures. Try bpftap %s to increase the %s from %d.\n",
		l.Count, l.What, l.Option, l.Limit, l.Size)
}

// Summary writes stap's closing warnings when there were errors or
// skipped probes.
func (t *Text) Summary(s *Summary) {
	if s.Errors > 0 || s.Skipped > 0 {
		fmt.Fprintf(t.diag, "WARNING: Number of errors: %d, skipped probes: %d\n", s.Errors, s.Skipped)
	}
	if s.Reentrancy && s.Skipped > 0 {
		fmt.Fprintf(t.diag, "WARNING: Skipped due to reentrancy: %d\n", s.Skipped)
	}
}

// HitReport writes -t's report to the output, as stap does.
func (t *Text) HitReport(hits []Hit) {
	t.buf = append(t.buf, "----- probe hit report: \n"...)
	for _, h := range hits {
		t.buf = fmt.Appendf(t.buf, "%s, (%s), hits: %d, nsecs: %dmin/%davg/%dmax, variance: %d, from: %s, index: %d\n",
			h.Probe, h.At, h.Hits, h.Min, h.Avg, h.Max, h.Variance, h.From, h.Index)
		t.flushIfFull()
	}
}

// Attached writes -v's line.
func (t *Text) Attached(a *Attached) {
	if t.Verbose {
		fmt.Fprintf(t.diag, "Pass 5: attached %s in %s.\n", Plural(a.Programs, "probe program"), a.Elapsed)
	}
}

// Plural is "1 NOUN" or "N NOUNs".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// System writes a command's output at once, after what is buffered.
func (t *Text) System(out []byte) {
	t.buf = append(t.buf, out...)
	t.keepErr(t.write())
}

// SwitchFile delivers what is buffered and switches the destination's
// file, when it has files (Switcher).
func (t *Text) SwitchFile() error { return t.switchFile() }

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

// ElementText is element e of g as the end-of-run display writes it,
// without its newline: `NAME=VALUE`, `NAME[KEY,...]=VALUE`, or a
// statistic's aggregates.
func ElementText(g *Global, e *Element) string {
	b := appendElement(nil, g, e)
	return string(b[:len(b)-1])
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
