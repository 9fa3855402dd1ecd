package stats

import "testing"

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
