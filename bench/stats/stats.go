// Package stats summarizes the samples of bpftap's benchmarks: medians with
// distribution-free confidence intervals, shared by bench/harness (per-call
// costs) and bench/startup (start-up times).
package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Summary is the median of a sample with a distribution-free confidence
// interval for it.
type Summary struct {
	N              int
	Median, Lo, Hi float64
}

// Summarize returns the median of xs and the order-statistic interval
// [x(k), x(n+1-k)] with the largest k whose coverage of the true median is
// still at least 95%; below 6 samples no interval reaches 95% and it is
// [min, max] (94% at n=5, 88% at n=4).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	k := medianRank(n)
	return Summary{N: n, Median: med, Lo: s[k-1], Hi: s[n-k]}
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

// Format renders s as "median [lo, hi]" with prec decimals, the median alone
// for a single sample.
func (s Summary) Format(prec int) string {
	if s.N == 1 {
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f]", prec, s.Median, prec, s.Lo, prec, s.Hi)
}

// Bootstrap returns the median of xs with a 95% percentile-bootstrap
// interval: the median of iters resamples of xs (with replacement), cut at
// 2.5% and 97.5%. rng makes it reproducible.
func Bootstrap(xs []float64, iters int, rng *rand.Rand) Summary {
	s := Summarize(xs)
	if len(xs) < 2 {
		return s
	}
	medians := make([]float64, iters)
	sample := make([]float64, len(xs))
	for i := range medians {
		for j := range sample {
			sample[j] = xs[rng.IntN(len(xs))]
		}
		medians[i] = Summarize(sample).Median
	}
	slices.Sort(medians)
	s.Lo, s.Hi = medians[iters*25/1000], medians[iters*975/1000]
	return s
}

// Finite returns the finite values of xs (the rounds that have one).
func Finite(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// Paired combines xs with base round by round, op(x, base) (NaN where base
// has no round): a traced case against the same round's untraced one.
func Paired(xs, base []float64, op func(x, b float64) float64) []float64 {
	out := make([]float64, len(xs))
	for i := range xs {
		out[i] = math.NaN()
		if i < len(base) {
			out[i] = op(xs[i], base[i])
		}
	}
	return out
}
