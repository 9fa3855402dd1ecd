package bpfgen

import (
	"reflect"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
)

// TestStats fills statistics in the kernel and checks that the per-CPU
// partials, decoded and totalled, equal format.Stat fed the same values
// (the Welford terms only for s, whose @variance the script reads).
func TestStats(t *testing.T) {
	requireBPF(t)
	prog := elaborate(t, `global once, s, lg, ln
probe begin {
  if (once++) next
  for (i = -5; i < 100; i += 7) { v = i * i * 1000 - 50; s <<< v; lg[i % 2] <<< v; ln <<< i }
}
probe end { println(@variance(s, 3)); print(@hist_log(lg[1])); print(@hist_linear(ln, 0, 50, 10)) }`)
	m := New(prog, Config{Target: true})
	ms := attachRun(t, m, prog, newChild(t, "sh", "-c", "read x"))
	defer ms.Close()
	want := map[string]*format.Stat{}
	for _, gl := range m.Globals() {
		if gl.Stat != nil {
			want[gl.Var.Name] = format.NewStat(gl.Stat.Hist, gl.Stat.Shift)
		}
	}
	lg1 := format.NewStat(format.LogHist, 0)
	for i := int64(-5); i < 100; i += 7 {
		v := i*i*1000 - 50
		want["s"].Add(v)
		want["ln"].Add(i)
		if i%2 == 1 {
			lg1.Add(v)
		}
	}
	key := map[string]any{"s": uint32(0), "ln": uint32(0), "lg": int64(1)}
	for _, gl := range m.Globals() {
		if gl.Stat == nil {
			continue
		}
		var parts [][]byte
		if err := ms.Globals[gl].Lookup(key[gl.Var.Name], &parts); err != nil {
			t.Fatalf("%s: %v", gl.Var.Name, err)
		}
		var stats []*format.Stat
		for _, p := range parts {
			stats = append(stats, gl.Stat.Decode(p))
		}
		got, w := format.Total(stats...), want[gl.Var.Name]
		if gl.Var.Name == "lg" {
			w = lg1
		}
		w = format.Total(w)
		if !gl.Stat.Variance { // only count, sum, min, max and buckets are kept
			got.AvgS, got.M2, got.VarianceS = 0, 0, 0
			w.AvgS, w.M2, w.VarianceS = 0, 0, 0
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: kernel %+v\nwant %+v", gl.Var.Name, got, w)
		}
	}
}
