package interp

import "github.com/bpftap/bpftap/internal/format"

// The bucket arithmetic of the Prometheus tapset's histogram macros
// (tapset/prometheus.stpm, format/prometheus.go): which buckets a
// statistic's values fill, and each bucket's `le`.
var prometheusBuiltins = map[string]builtinFunc{
	"__prometheus_log_bucket": func(_ *callContext, a []Value) Value {
		return long(int64(format.LogHist.FiniteBucket(a[0].Int)))
	},
	"__prometheus_log_le": func(_ *callContext, a []Value) Value {
		return str(format.LogBucketLE(int(a[0].Int)))
	},
	"__prometheus_linear_bucket": func(cc *callContext, a []Value) Value {
		return long(int64(cc.linearHist(a[1:]).FiniteBucket(a[0].Int)))
	},
	"__prometheus_linear_le": func(cc *callContext, a []Value) Value {
		return str(cc.linearHist(a[1:]).LinearBucketLE(int(a[0].Int)))
	},
}

// linearHist is the layout of @hist_linear(start, stop, interval).
func (cc *callContext) linearHist(a []Value) *format.Hist {
	h, err := format.LinearHist(a[0].Int, a[1].Int, a[2].Int)
	if err != nil {
		cc.fail(err.Error())
	}
	return h
}
