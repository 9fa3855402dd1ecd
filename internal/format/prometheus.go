package format

import "strconv"

// Histogram buckets as Prometheus histograms (the tapset's
// @prometheus_dump_hist_* macros): a bucket's `le` is the largest value it
// counts, an integer, since statistics hold integers. A log bucket 64+k
// counts the values of k significant bits, up to 2^k-1; bucket 64 counts 0;
// bucket 64-k the negative values down to -(2^k-1), up to -2^(k-1). A
// linear bucket n counts up to start+n*interval-1 (bucket 0, the
// underflow, up to start-1); the overflow bucket has no finite bound: its
// values are only in the "+Inf" bucket.

// LogBucketLE is the `le` of log bucket n.
func LogBucketLE(n int) string {
	switch {
	case n == logBucketZero:
		return "0"
	case n < logBucketZero:
		return strconv.FormatInt(-int64(uint64(1)<<(logBucketZero-n-1)), 10)
	case n == logBuckets-1:
		return strconv.FormatInt(1<<63-1, 10)
	}
	return strconv.FormatInt(int64(1)<<(n-logBucketZero)-1, 10)
}

// LinearBucketLE is the `le` of bucket n of h, a linear histogram; n is
// below its overflow bucket.
func (h *Hist) LinearBucketLE(n int) string {
	return strconv.FormatInt(int64(h.Start)+int64(n)*int64(h.Interval)-1, 10)
}

// FiniteBucket is the bucket that counts v, or the last bucket with a
// finite bound when that is the overflow bucket of a linear histogram.
func (h *Hist) FiniteBucket(v int64) int {
	n := h.Bucket(v)
	if h.Linear {
		n = min(n, h.buckets-2)
	}
	return n
}
