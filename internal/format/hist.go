package format

import (
	"errors"
	"strconv"
)

// Histogram rendering follows the runtime's _stp_stat_print_histogram:
//
//   - rows run from the lowest to the highest non-empty bucket, widened by up
//     to two empty buckets on each side (a log histogram widens below its zero
//     bucket only when it has negative values; a linear one shows its
//     underflow and overflow rows only when they count something);
//   - an empty row whose neighbours up to two rows away are all empty is left
//     out, and a run of left-out rows shows as one "~" row;
//   - the value column is as wide as the widest value shown ("<" and ">" mark
//     the underflow and overflow rows of a linear histogram), and at least as
//     wide as "value";
//   - bars are drawn with '@', scaled so the largest count is at most
//     histWidth characters, and counts are right-aligned after them;
//   - a blank line ends the histogram.
const (
	histWidth   = 50 // HIST_WIDTH
	histElision = 2  // HIST_ELISION
)

var errNoHist = errors.New("statistic has no histogram")

// AppendHist appends the rendering of s's histogram to dst, as
// print(@hist_log(s)) or print(@hist_linear(s, ...)) writes it. It fails with
// ErrEmpty when s holds no value.
func (s *Stat) AppendHist(dst []byte) ([]byte, error) {
	if err := s.HistError(); err != nil {
		return dst, err
	}
	r := histRender{h: s.Hist, counts: s.Counts}
	r.bounds()
	return r.render(dst), nil
}

// HistError is why s's histogram cannot be printed (it has none, or
// ErrEmpty: it holds no value), nil when it can.
func (s *Stat) HistError() error {
	switch {
	case s.Hist == nil || len(s.Counts) != s.Hist.buckets:
		return errNoHist
	case s.Count == 0:
		return ErrEmpty
	}
	return nil
}

type histRender struct {
	h                      *Hist
	counts                 []int64
	low, high              int   // rows shown
	under, over            bool  // linear: underflow, overflow rows shown
	maxCount, scale        int64 // largest count; counts per '@'
	valueSpace, countSpace int   // widths of the value and count columns
}

// bounds finds the rows to show, the bar scale and the column widths.
func (r *histRender) bounds() {
	last := len(r.counts) - 1
	r.low, r.high = -1, 0
	for i, c := range r.counts {
		if c > 0 {
			if r.low == -1 {
				r.low = i
			}
			r.high = i
		}
		r.maxCount = max(r.maxCount, c)
	}
	r.low = max(r.low, 0)
	for range 2 {
		if r.low > 0 && (r.h.Linear || r.low != logBucketZero) {
			r.low--
		}
		r.high = min(r.high+1, last)
	}
	if r.h.Linear {
		if r.low == 0 && r.counts[0] == 0 {
			r.low++
		}
		if r.high == last && r.counts[last] == 0 {
			r.high--
		}
		r.under, r.over = r.low == 0, r.high == last
	}
	r.scale = 1
	if r.maxCount > histWidth {
		r.scale = (r.maxCount + histWidth - 1) / histWidth
	}
	r.countSpace = neededSpace(r.maxCount)
	if r.h.Linear {
		top := int64(r.h.Start + r.h.Interval*int32(r.high)) // int arithmetic, as in the runtime
		r.valueSpace = max(neededSpace(int64(r.h.Start))+b2i(r.under), neededSpace(top)+b2i(r.over))
	} else {
		r.valueSpace = max(neededSpace(logBucketValue(r.high)), neededSpace(logBucketValue(r.low)))
	}
	r.valueSpace = max(r.valueSpace, len("value"))
}

func (r *histRender) render(b []byte) []byte {
	b = pad(b, ' ', r.valueSpace-len("value"))
	b = append(b, "value |"...)
	b = pad(b, '-', histWidth)
	b = append(b, " count\n"...)
	eliding := false
	for i := r.low; i <= r.high; i++ {
		if r.elided(i) {
			eliding = true
			continue
		}
		if eliding {
			b = pad(b, ' ', r.valueSpace)
			b = append(b, " ~\n"...)
			eliding = false
		}
		b = r.row(b, i)
	}
	return append(b, '\n')
}

// elided reports whether row i and its neighbours within histElision rows are
// all empty.
func (r *histRender) elided(i int) bool {
	span := min(histElision, len(r.counts))
	for k := max(r.low, i-span); k <= min(r.high, i+span); k++ {
		if r.counts[k] != 0 {
			return false
		}
	}
	return true
}

func (r *histRender) row(b []byte, i int) []byte {
	value, prefix := r.label(i)
	// The prefix is right-aligned in the room the value leaves; the runtime's
	// "%*s" left-aligns it when that room is negative.
	room := r.valueSpace - neededSpace(value)
	if room >= 0 {
		b = pad(b, ' ', room-len(prefix))
		b = append(b, prefix...)
	} else {
		b = append(b, prefix...)
		b = pad(b, ' ', -room-len(prefix))
	}
	b = strconv.AppendInt(b, value, 10)
	b = append(b, " |"...)
	bar := int(uint64(r.counts[i]) / uint64(uint32(r.scale)))
	b = pad(b, '@', bar)
	b = appendNumber(b, uint64(r.counts[i]), 10, histWidth-bar+1+r.countSpace, -1, FlagSign)
	return append(b, '\n')
}

// label is the value shown for bucket i and its "<" or ">" mark.
func (r *histRender) label(i int) (int64, string) { return r.h.Label(i) }

// Label is the value a histogram shows for bucket i, and its mark: "<"
// for a linear histogram's bucket of values below its start, ">" for the
// bucket of values past its stop, "" for the others.
func (h *Hist) Label(i int) (int64, string) {
	switch {
	case !h.Linear:
		return logBucketValue(i), ""
	case i == 0:
		return int64(h.Start), "<"
	case i == h.buckets-1:
		return int64(h.Start) + int64(i-2)*int64(h.Interval), ">"
	}
	return int64(h.Start) + int64(i-1)*int64(h.Interval), ""
}

// neededSpace is the number of characters of v in decimal.
func neededSpace(v int64) int {
	n := 1
	if v < 0 {
		n++
	}
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
