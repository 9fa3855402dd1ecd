package format

import (
	"strconv"
	"testing"
)

// TestBucketLE checks each bucket's le against the values the bucket
// counts: its largest value is le, le+1 is in a later bucket.
func TestBucketLE(t *testing.T) {
	for _, v := range []int64{-1 << 40, -1000, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 7, 8, 1000, 1 << 40} {
		n := LogHist.Bucket(v)
		le := LogBucketLE(n)
		top := mustInt(t, le)
		if v > top || LogHist.Bucket(top) != n || LogHist.Bucket(top+1) == n {
			t.Errorf("log: %d is in bucket %d, whose le is %s", v, n, le)
		}
	}
	h, err := LinearHist(0, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{-5, 0, 9, 10, 55, 99, 100, 109} {
		n := h.FiniteBucket(v)
		top := mustInt(t, h.LinearBucketLE(n))
		if v > top || h.Bucket(top) != n || h.Bucket(top+1) == n {
			t.Errorf("linear: %d is in bucket %d, whose le is %d", v, n, top)
		}
	}
	if n := h.FiniteBucket(1000); n != h.Buckets()-2 {
		t.Errorf("linear: overflow value in finite bucket %d, want %d", n, h.Buckets()-2)
	}
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
