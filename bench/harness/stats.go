package main

import (
	"math"
	"slices"
)

// summary is the median of a sample with a distribution-free confidence
// interval for it.
type summary struct {
	n              int
	median, lo, hi float64
}

// summarize returns the median of xs and the order-statistic interval
// [x(k), x(n+1-k)] with the largest k whose coverage of the true median is
// still at least 95%; below 6 samples no interval reaches 95% and it is
// [min, max] (94% at n=5, 88% at n=4).
func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{median: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	k := medianRank(n)
	return summary{n: n, median: med, lo: s[k-1], hi: s[n-k]}
}

// medianRank returns the largest k >= 1 with P(X < k) <= 2.5% for
// X ~ Binomial(n, 1/2), the number of samples below the median; 1 when
// even k = 1 misses that.
func medianRank(n int) int {
	k := 1
	for k+1 <= (n+1)/2 && binomialBelow(n, k+1) <= 0.025 {
		k++
	}
	return k
}

// binomialBelow returns P(X < k) for X ~ Binomial(n, 1/2).
func binomialBelow(n, k int) float64 {
	sum, c := 0.0, 1.0
	for i := range k {
		sum += c
		c = c * float64(n-i) / float64(i+1)
	}
	return sum / math.Pow(2, float64(n))
}
