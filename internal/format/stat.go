package format

import (
	"errors"
	"math/bits"
	"strconv"
)

// Statistics aggregates (`s <<< v`) follow SystemTap's runtime/stat-common.c,
// stat.c and map.c. Each CPU accumulates a partial Stat: count, sum, min, max,
// an optional histogram, and Welford's running mean and squared deviations in
// integers scaled by 2^Shift (@variance's bit shift). The running update
// truncates the deviation to 32 bits, as the runtime's int does. A read
// combines the partials with the total-variance formula: Total for a global
// statistic (all partials against the overall mean at once), Merge for an
// element of an array of statistics (partials folded pairwise in CPU order).
// The two give different variances for the same data, as they do in stap.

// ErrEmpty is the run-time error of @min, @max, @avg, @variance and histograms
// of a statistic that holds no value.
var ErrEmpty = errors.New("empty aggregate")

// Histogram layouts.
const (
	logBuckets    = 128 // HIST_LOG_BUCKETS
	logBucketZero = 64  // HIST_LOG_BUCKET0, the bucket of 0
	maxBuckets    = 128 // STP_MAX_BUCKETS, for linear histograms
)

// Hist describes the histogram of a statistic: @hist_log, or @hist_linear with
// its start, stop and interval.
type Hist struct {
	Linear                bool
	Start, Stop, Interval int32 // linear only; the runtime keeps them as ints
	buckets               int
}

// LogHist is the layout of @hist_log: 128 power-of-two buckets, 64 of them for
// negative values.
var LogHist = &Hist{buckets: logBuckets}

// LinearHist returns the layout of @hist_linear(start, stop, interval): one
// bucket per interval plus an underflow and an overflow bucket. Like the
// runtime it computes in ints; the errors are the warnings it prints when it
// refuses the layout.
func LinearHist(start, stop, interval int64) (*Hist, error) {
	h := &Hist{Linear: true, Start: int32(start), Stop: int32(stop), Interval: int32(interval)}
	if h.Interval == 0 {
		return nil, errors.New("histogram: interval cannot be zero.")
	}
	h.buckets = int((h.Stop-h.Start)/h.Interval) + 3
	if h.buckets > maxBuckets || h.buckets < 3 {
		return nil, errors.New("histogram: Number of buckets must be between 1 and " +
			strconv.Itoa(maxBuckets-2) + "\nNumber_of_buckets = (stop - start) / interval.\n" +
			"Please adjust your start, stop, and interval values.")
	}
	return h, nil
}

// Buckets is the number of buckets.
func (h *Hist) Buckets() int { return h.buckets }

// Bucket is the bucket that counts v.
func (h *Hist) Bucket(v int64) int {
	if !h.Linear {
		return logBucket(v)
	}
	v -= int64(h.Start)
	n := int64(0) // underflow
	if v >= 0 {
		// The runtime's do_div divides by the interval as an unsigned 32-bit number.
		n = int64(uint64(v)/uint64(uint32(h.Interval))) + 1
	}
	return int(min(uint64(n), uint64(h.buckets-1)))
}

// logBucket is 64 for 0, 64+k for values of k significant bits, and 64-k for
// their negations.
func logBucket(v int64) int {
	switch {
	case v == 0:
		return logBucketZero
	case v < 0:
		return logBucketZero - bits.Len64(uint64(-v))
	}
	return logBucketZero + bits.Len64(uint64(v))
}

// logBucketValue is the value a log histogram shows for bucket n: 0, a power
// of two, or the negation of one.
func logBucketValue(n int) int64 {
	switch {
	case n == logBucketZero:
		return 0
	case n < logBucketZero:
		return int64(-1<<63) >> n
	}
	return 1 << (n - logBucketZero - 1)
}

// Stat is one partial of a statistics aggregate, or the result of combining
// partials. The fields mirror the runtime's stat_data so that partials kept
// elsewhere (per-CPU BPF maps) can be loaded into it.
type Stat struct {
	Count, Sum, Min, Max int64
	// AvgS is the running mean, M2 the running sum of squared deviations,
	// VarianceS the sample variance, all scaled by 2^Shift (squares by 2^2Shift).
	AvgS, M2, VarianceS int64
	Shift               uint
	Hist                *Hist   // nil without a histogram
	Counts              []int64 // per-bucket counts when Hist is set
}

// NewStat returns an empty statistic with the given histogram layout (nil for
// none) and @variance bit shift.
func NewStat(h *Hist, shift uint) *Stat {
	s := &Stat{Hist: h, Shift: shift}
	if h != nil {
		s.Counts = make([]int64, h.buckets)
	}
	return s
}

// Add records v (`s <<< v`).
func (s *Stat) Add(v int64) {
	if s.Count == 0 {
		s.Count, s.Sum, s.Min, s.Max = 1, v, v, v
		s.AvgS = v << s.Shift
		s.M2 = 0
	} else {
		s.Count++
		s.Sum += v
		s.Max = max(s.Max, v)
		s.Min = min(s.Min, v)
		delta := int64(int32(v<<s.Shift - s.AvgS))
		s.AvgS += div64(delta, s.Count)
		s.M2 += delta * (v<<s.Shift - s.AvgS)
		s.VarianceS = div64(s.M2, s.Count-1)
	}
	if s.Hist != nil && len(s.Counts) == s.Hist.buckets {
		s.Counts[s.Hist.Bucket(v)]++
	}
}

// Reset empties s (`delete s`).
func (s *Stat) Reset() {
	h, shift, counts := s.Hist, s.Shift, s.Counts
	clear(counts)
	*s = Stat{Hist: h, Shift: shift, Counts: counts}
}

// Merge folds partial o into s as the runtime aggregates an element of an
// array of statistics: s and o combine pairwise with the total-variance
// formula. A partial holding no value changes nothing.
func (s *Stat) Merge(o *Stat) {
	switch {
	case o.Count == 0:
		return
	case s.Count == 0:
		s.copyFrom(o)
		return
	}
	n1, avg1 := s.Count, s.AvgS
	s.Count += o.Count
	s.Sum += o.Sum
	s.Min = min(s.Min, o.Min)
	s.Max = max(s.Max, o.Max)
	s.Shift = o.Shift
	s.AvgS = div64(s.Sum<<o.Shift, s.Count)
	spread := n1*sq(avg1-s.AvgS) + (n1-1)*s.VarianceS +
		o.Count*sq(o.AvgS-s.AvgS) + (o.Count-1)*o.VarianceS
	s.VarianceS = div64(spread, s.Count-1)
	s.addCounts(o)
}

func (s *Stat) copyFrom(o *Stat) {
	s.Count, s.Sum, s.Min, s.Max = o.Count, o.Sum, o.Min, o.Max
	s.Shift, s.AvgS, s.M2, s.VarianceS = o.Shift, o.AvgS, o.M2, o.VarianceS
	if s.Hist == nil {
		s.Hist = o.Hist
	}
	clear(s.Counts)
	s.addCounts(o)
}

func (s *Stat) addCounts(o *Stat) {
	if len(s.Counts) < len(o.Counts) {
		s.Counts = append(s.Counts, make([]int64, len(o.Counts)-len(s.Counts))...)
	}
	for i, c := range o.Counts {
		s.Counts[i] += c
	}
}

// Total combines the per-CPU partials of a global statistic as the runtime
// reads one: counts, sums and histograms add up, and the variance is the
// total variance of the partials around the overall mean.
func Total(parts ...*Stat) *Stat {
	t := &Stat{}
	for _, p := range parts {
		if t.Hist == nil && p.Hist != nil {
			t.Hist = p.Hist
		}
		if p.Count == 0 {
			continue
		}
		t.Shift = p.Shift
		if t.Count == 0 {
			t.Min, t.Max = p.Min, p.Max
		}
		t.Count += p.Count
		t.Sum += p.Sum
		t.Max = max(t.Max, p.Max)
		t.Min = min(t.Min, p.Min)
		t.addCounts(p)
	}
	if t.Hist != nil && len(t.Counts) < t.Hist.buckets {
		t.Counts = append(t.Counts, make([]int64, t.Hist.buckets-len(t.Counts))...)
	}
	t.AvgS = div64(t.Sum<<t.Shift, t.Count)
	var spread int64
	for _, p := range parts {
		if p.Count != 0 {
			spread += p.Count*sq(p.AvgS-t.AvgS) + (p.Count-1)*p.VarianceS
		}
	}
	t.VarianceS = div64(spread, t.Count-1)
	return t
}

func sq(x int64) int64 { return x * x }

// div64 divides as the runtime's _stp_div64 does when it has nowhere to report
// an error: x/0 is 0.
func div64(x, y int64) int64 {
	switch y {
	case 0:
		return 0
	case -1:
		return -x
	}
	return x / y
}

// Extractors, named as in the syntax tree's StatOp.
const (
	OpCount    = "count"
	OpSum      = "sum"
	OpMin      = "min"
	OpMax      = "max"
	OpAvg      = "avg"
	OpVariance = "variance"
)

// Get is the value of @count(s), @sum(s), @min(s), @max(s), @avg(s) or
// @variance(s). All but @count and @sum fail with ErrEmpty on an empty statistic.
func (s *Stat) Get(op string) (int64, error) {
	switch op {
	case OpCount:
		return s.Count, nil
	case OpSum:
		return s.Sum, nil
	}
	if s.Count == 0 {
		return 0, ErrEmpty
	}
	switch op {
	case OpMin:
		return s.Min, nil
	case OpMax:
		return s.Max, nil
	case OpAvg:
		return div64(s.Sum, s.Count), nil
	case OpVariance:
		return s.VarianceS >> (2 * s.Shift), nil
	}
	return 0, errors.New("unknown statistics operator @" + op)
}
