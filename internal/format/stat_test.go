package format

import (
	"errors"
	"testing"
)

// statOf is a partial holding vals, with @variance's bit shift.
func statOf(shift uint, vals ...int64) *Stat {
	s := NewStat(nil, shift)
	for _, v := range vals {
		s.Add(v)
	}
	return s
}

// arrayRead reads a partial as an element of an array of statistics is read:
// merged into an empty aggregate.
func arrayRead(parts ...*Stat) *Stat {
	agg := NewStat(nil, 0)
	for _, p := range parts {
		agg.Merge(p)
	}
	return agg
}

func TestStatExtractors(t *testing.T) {
	// Expected values were computed by hand from stat-common.c, stat.c and
	// map.c, or are SystemTap's own results where a testsuite file is named.
	tests := []struct {
		name  string
		read  *Stat
		count int64
		sum   int64
		min   int64
		max   int64
		avg   int64
		vari  int64
	}{
		// testsuite/systemtap.maps/ix.exp: foo[0] and foo[9] after 100, i, -2
		{"ix foo[0]", arrayRead(statOf(0, 100, 0, -2)), 3, 98, -2, 100, 32, 3410},
		{"ix foo[9]", arrayRead(statOf(0, 100, 9, -2)), 3, 107, -2, 100, 35, 3176},
		// ... and after adding 10
		{"ix foo[0]+10", arrayRead(statOf(0, 100, 0, -2, 10)), 4, 108, -2, 100, 27, 2411},
		{"ix foo[10]+10", arrayRead(statOf(0, 100, 10, -2, 10)), 4, 118, -2, 100, 29, 2245},
		// testsuite/systemtap.maps/PR31740.exp: @variance(stats["k"], 7) of 1, 2, 3
		{"PR31740", arrayRead(statOf(7, 1, 2, 3)), 3, 6, 1, 3, 2, 1},
		// Welford's integer mean sticks at 1: the partial's variance is 30/4,
		// a global's total variance around the exact mean 3 is (20+28)/4.
		{"1..5 array", arrayRead(statOf(0, 1, 2, 3, 4, 5)), 5, 15, 1, 5, 3, 7},
		{"1..5 global", Total(statOf(0, 1, 2, 3, 4, 5)), 5, 15, 1, 5, 3, 12},
		{"1,0,0 array", arrayRead(statOf(0, 1, 0, 0)), 3, 1, 0, 1, 0, 1},
		{"1,0,0 global", Total(statOf(0, 1, 0, 0)), 3, 1, 0, 1, 0, 2},
		// two CPUs: {10, 20} and {30}; the sample variance is 100 either way
		{"two CPUs global", Total(statOf(0, 10, 20), statOf(0, 30)), 3, 60, 10, 30, 20, 100},
		{"two CPUs array", arrayRead(statOf(0, 10, 20), statOf(0, 30)), 3, 60, 10, 30, 20, 100},
		{"two CPUs array reversed", arrayRead(statOf(0, 30), statOf(0, 10, 20)), 3, 60, 10, 30, 20, 100},
		// an empty partial (a CPU that saw nothing) changes nothing
		{"empty CPU", Total(NewStat(nil, 0), statOf(0, 4, 8), NewStat(nil, 0)), 2, 12, 4, 8, 6, 8},
		{"empty CPU array", arrayRead(NewStat(nil, 0), statOf(0, 4, 8)), 2, 12, 4, 8, 6, 8},
		// one value: no variance
		{"single", Total(statOf(0, 42)), 1, 42, 42, 42, 42, 0},
		{"single array", arrayRead(statOf(3, 42)), 1, 42, 42, 42, 42, 0},
		// @avg divides like C: toward zero
		{"negative avg", Total(statOf(0, -7, 0)), 2, -7, -7, 0, -3, 30},
		// the running deviation is an int: 2^40 - 0 truncates to 0
		{"int delta", arrayRead(statOf(0, 0, 1<<40)), 2, 1 << 40, 0, 1 << 40, 1 << 39, 0},
		// with a bit shift the mean keeps fractions: 1..5 gives 2.5 exactly
		{"1..5 shift 8", Total(statOf(8, 1, 2, 3, 4, 5)), 5, 15, 1, 5, 3, 2},
	}
	for _, tt := range tests {
		want := map[string]int64{OpCount: tt.count, OpSum: tt.sum, OpMin: tt.min, OpMax: tt.max,
			OpAvg: tt.avg, OpVariance: tt.vari}
		for _, op := range []string{OpCount, OpSum, OpMin, OpMax, OpAvg, OpVariance} {
			got, err := tt.read.Get(op)
			if err != nil || got != want[op] {
				t.Errorf("%s: @%s = %d, %v; want %d", tt.name, op, got, err, want[op])
			}
		}
	}
}

func TestEmptyAggregate(t *testing.T) {
	for _, s := range []*Stat{NewStat(LogHist, 0), Total(), Total(NewStat(nil, 0)), arrayRead()} {
		for _, op := range []string{OpCount, OpSum} {
			if v, err := s.Get(op); v != 0 || err != nil {
				t.Errorf("@%s of empty = %d, %v; want 0", op, v, err)
			}
		}
		for _, op := range []string{OpMin, OpMax, OpAvg, OpVariance} {
			if _, err := s.Get(op); !errors.Is(err, ErrEmpty) || err.Error() != "empty aggregate" {
				t.Errorf("@%s of empty: %v; want empty aggregate", op, err)
			}
		}
	}
	if _, err := NewStat(LogHist, 0).AppendHist(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("histogram of empty: %v", err)
	}
	if _, err := statOf(0, 1).AppendHist(nil); err == nil {
		t.Error("histogram of a statistic without one: no error")
	}
}

func TestStatReset(t *testing.T) {
	s := NewStat(LogHist, 2)
	s.Add(5)
	s.Add(9)
	s.Reset()
	s.Add(3)
	if s.Count != 1 || s.Sum != 3 || s.Shift != 2 || s.Counts[logBucket(5)] != 0 || s.Counts[logBucket(3)] != 1 {
		t.Errorf("after Reset and Add(3): %+v", s)
	}
}

func TestTotalHistogram(t *testing.T) {
	h, err := LinearHist(0, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	a, b := NewStat(h, 0), NewStat(h, 0)
	a.Add(5)
	b.Add(5)
	b.Add(95)
	for name, s := range map[string]*Stat{"total": Total(a, b), "array": arrayRead(a, b)} {
		if s.Counts[1] != 2 || s.Counts[10] != 1 || s.Hist != h {
			t.Errorf("%s: counts %v", name, s.Counts)
		}
	}
}

func TestHistLayouts(t *testing.T) {
	tests := []struct {
		start, stop, interval int64
		buckets               int
		err                   string
	}{
		{0, 1500, 50, 33, ""},
		{0, 0, 1, 3, ""},
		{-100, 100, 10, 23, ""},
		{0, 1500, 0, 0, "histogram: interval cannot be zero."},
		// testsuite/systemtap.maps/linear_bad.stp and linear_neg.stp
		{0, 1500, 2, 0, "histogram: Number of buckets must be between 1 and 126\n" +
			"Number_of_buckets = (stop - start) / interval.\nPlease adjust your start, stop, and interval values."},
		{0, 1500, -1, 0, "histogram: Number of buckets must be between 1 and 126\n" +
			"Number_of_buckets = (stop - start) / interval.\nPlease adjust your start, stop, and interval values."},
		{0, 1250, 10, 128, ""},
		{0, 1260, 10, 0, "histogram: Number of buckets must be between 1 and 126\n" +
			"Number_of_buckets = (stop - start) / interval.\nPlease adjust your start, stop, and interval values."},
		// the runtime keeps them as ints: 2^32+10 is 10
		{0, 1<<32 + 10, 1, 13, ""},
	}
	for _, tt := range tests {
		h, err := LinearHist(tt.start, tt.stop, tt.interval)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("LinearHist(%d, %d, %d): %v; want %q", tt.start, tt.stop, tt.interval, err, tt.err)
		case tt.err == "" && (err != nil || h.Buckets() != tt.buckets):
			t.Errorf("LinearHist(%d, %d, %d): %v; want %d buckets", tt.start, tt.stop, tt.interval, err, tt.buckets)
		}
	}
}

func TestBuckets(t *testing.T) {
	lin, _ := LinearHist(-50, 50, 25)
	tests := []struct {
		h    *Hist
		v    int64
		want int
	}{
		{LogHist, 0, 64}, {LogHist, 1, 65}, {LogHist, 2, 66}, {LogHist, 3, 66}, {LogHist, 4, 67},
		{LogHist, -1, 63}, {LogHist, -2, 62}, {LogHist, -3, 62}, {LogHist, -4, 61},
		{LogHist, 1 << 62, 127}, {LogHist, 1<<63 - 1, 127}, {LogHist, -1 << 63, 0}, {LogHist, -(1 << 62), 1},
		{lin, -51, 0}, {lin, -50, 1}, {lin, -26, 1}, {lin, -25, 2}, {lin, 49, 4}, {lin, 50, 5},
		{lin, 74, 5}, {lin, 75, 6}, {lin, 1 << 62, 6}, {lin, -1 << 63, 0}, {lin, 1<<63 - 1, 0},
	}
	for _, tt := range tests {
		if got := tt.h.Bucket(tt.v); got != tt.want {
			t.Errorf("Bucket(%d) linear=%v: %d, want %d", tt.v, tt.h.Linear, got, tt.want)
		}
	}
	for n, want := range map[int]int64{0: -1 << 63, 1: -(1 << 62), 62: -2, 63: -1, 64: 0, 65: 1, 66: 2, 127: 1 << 62} {
		if got := logBucketValue(n); got != want {
			t.Errorf("logBucketValue(%d) = %d, want %d", n, got, want)
		}
	}
}
