package bpfgen_test

import (
	"reflect"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestStats fills statistics in the kernel and checks that their per-CPU
// partials, read as the interpreter reads them (decoded and combined),
// equal format.Stat fed the same values (the Welford terms only for s,
// whose @variance the script reads).
func TestStats(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `global once, s, lg, ln
probe begin {
  if (once++) next
  for (i = -5; i < 100; i += 7) { v = i * i * 1000 - 50; s <<< v; lg[i % 2] <<< v; ln <<< i }
}
probe end { println(@variance(s, 3)); print(@hist_log(lg[1])); print(@hist_linear(ln, 0, 50, 10)) }`)
	s := run(t, prog, newChild(t, "sh", "-c", "read x"), &recorder{})
	defer s.Close()
	want, variance := map[string]*format.Stat{}, map[string]bool{}
	for _, v := range prog.Globals {
		if shape := prog.StatShape(v); v.Type == syntax.TypeStats {
			want[v.Name], variance[v.Name] = format.NewStat(shape.Hist, shape.Shift), shape.Variance
		}
	}
	for i := int64(-5); i < 100; i += 7 {
		v := i*i*1000 - 50
		want["s"].Add(v)
		want["ln"].Add(i)
		if i%2 == 1 {
			want["lg"].Add(v)
		}
	}
	got := map[string]*format.Stat{
		"s":  global(s, prog, "s").Statistic.Total(),
		"ln": global(s, prog, "ln").Statistic.Total(),
		"lg": global(s, prog, "lg").Array.Stat(interp.Key{{Int: 1}}),
	}
	for name, w := range want {
		g, w := got[name], format.Total(w)
		if !variance[name] { // only count, sum, min, max and buckets are kept
			g.AvgS, g.M2, g.VarianceS = 0, 0, 0
			w.AvgS, w.M2, w.VarianceS = 0, 0, 0
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: kernel %+v\nwant %+v", name, g, w)
		}
	}
}
