package format

import "math/bits"

// A Span is where an argument's value is in a call's text, as the value
// itself: text[Start:End]. NoSpan when the text does not hold it so.
type Span struct{ Start, End int }

// NoSpan is the Span of an argument whose value the text does not hold as
// it is.
var NoSpan = Span{-1, -1}

// ValueSpans tells where the text of a call, the n bytes Exec appended
// for args, holds each argument as it is (spans has len(f.Args())
// entries): a long's decimal number, written by %d or %i, or a string
// whole, by %s, neither of them with a precision or a flag other than '-'
// (a static width is fine), nor cut by a NUL byte or by the room. Every
// other argument, and every one after a directive that is not of these,
// whose field's length depends on more than its value ('*' widths and
// precisions included), is NoSpan. A caller that needs both the text and
// the values (JSON's print records) copies the values from the text.
//
// It retraces Exec from the lengths alone: a literal's, and a field's,
// the value's length or the width when that is more, the value on the
// right of it (on the left under '-'). A field that Exec could not write
// whole (its width clamped, its text cut by the room) ends past n.
func (f *Format) ValueSpans(n int, args []Arg, spans []Span) {
	pos := 0
	for i := range f.spans {
		st := &f.spans[i]
		var a Arg
		if i < len(args) {
			a = args[i]
		}
		var size int
		if st.str {
			size = len(cString(a.Str))
		} else {
			size = decimalLen(a.Int)
		}
		pos += st.skip
		field := max(size, st.width)
		start := pos + field - size
		if st.left {
			start = pos
		}
		if pos += field; pos <= n && (!st.str || size == len(a.Str)) {
			spans[i] = Span{start, start + size}
		} else {
			spans[i] = NoSpan
		}
	}
	for i := len(f.spans); i < len(spans); i++ {
		spans[i] = NoSpan
	}
}

// spanStep is a directive ValueSpans follows: skip bytes of literal text
// before its field, and the field's layout.
type spanStep struct {
	skip, width int
	left, str   bool // the value on the left ('-'); a string (%s), not a long
}

// spanSteps are the steps of ValueSpans: one per directive up to the first
// that does not write its value as it is (writesValue), each of which
// consumes one argument.
func spanSteps(pieces []Directive) []spanStep {
	var steps []spanStep
	skip := 0
	for i := range pieces {
		d := &pieces[i]
		switch {
		case d.Verb == 0:
			skip += len(d.Text)
			continue
		case !d.writesValue():
			return steps
		}
		steps = append(steps, spanStep{skip: skip, width: max(int(int32(d.Width)), 0), left: d.Flags&FlagLeft != 0, str: d.Verb == 's'})
		skip = 0
	}
	return steps
}

// decimalLen is the length of v in decimal, its sign included.
func decimalLen(v int64) int {
	u, sign := uint64(v), 0
	if v < 0 {
		u, sign = -u, 1
	}
	u |= 1 // 0 has a digit, as 1 has
	// t is log10(u) or one more, from log2(u): 1233/4096 is just over log10(2)
	t := bits.Len64(u) * 1233 >> 12
	return sign + t + 1 - b2i(u < powersOf10[t])
}

// powersOf10 are 10^0 to 10^19, the largest a uint64 holds.
var powersOf10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()
