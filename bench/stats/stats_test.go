package stats

import (
	"math/rand/v2"
	"testing"
)

func TestMedianRank(t *testing.T) {
	// Ranks of the 95% interval of the median from published tables.
	for n, want := range map[int]int{1: 1, 5: 1, 6: 1, 8: 1, 9: 2, 12: 3, 20: 6} {
		if got := medianRank(n); got != want {
			t.Errorf("medianRank(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3, 6})
	if s.Median != 3.5 || s.Lo != 1 || s.Hi != 6 || s.N != 6 {
		t.Errorf("Summarize = %+v", s)
	}
}

func TestBootstrap(t *testing.T) {
	xs := []float64{0.90, 0.92, 0.95, 0.97, 0.99, 1.00, 1.02}
	s := Bootstrap(xs, 2000, rand.New(rand.NewPCG(1, 2)))
	if s.Median != 0.97 || s.Lo < 0.90 || s.Hi > 1.02 || s.Lo > s.Median || s.Hi < s.Median {
		t.Errorf("Bootstrap = %+v", s)
	}
}
