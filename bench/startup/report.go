package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/bpftap/bpftap/bench/stats"
)

// render writes the report: each case's medians and intervals, then the
// comparisons' paired ratios beside their targets, then (with -before)
// each case against its twin.
func (s *suite) render(times map[*startupCase][]sample, errs map[*startupCase]string, rounds int) string {
	var b strings.Builder
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "Written by `bench/startup.sh`, %s on %s; %d rounds; load average at the end: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	b.WriteString("Each case runs from launch to exit (parse, translate, load, attach, run, detach), as a user types it. ")
	b.WriteString("Median [95% interval of the median]. CPU is the user and system time of the process and its children (the -c command's too). ")
	b.WriteString("Peak memory is the maximum resident set size.\n\n")
	for _, n := range s.notes {
		b.WriteString(n + "\n\n")
	}
	b.WriteString("| case | ms | CPU ms | max RSS MiB | n |\n|---|---:|---:|---:|---:|\n")
	for _, c := range s.cases {
		ms := summary(times[c], msOf)
		if ms.N == 0 {
			fmt.Fprintf(&b, "| %s | failed: %s | | | 0 |\n", c.name, errs[c])
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", c.name, ms.Format(1), summary(times[c], cpuOf).Format(1), summary(times[c], mibOf).Format(1), ms.N)
	}
	b.WriteString("\nTargets: the median of the per-round ratio of a case to its peer (wall time and CPU time), and peak memory.\n\n")
	b.WriteString("| case | ÷ peer | × wall | × CPU | target | met |\n|---|---|---:|---:|---:|---|\n")
	for _, cmp := range s.comparisons {
		if !cmp.twin {
			writeComparison(&b, times, cmp)
		}
	}
	for _, m := range s.memory {
		mib := summary(times[m.c], mibOf)
		fmt.Fprintf(&b, "| %s | (peak memory, MiB) | %s | | ≤ %.0f | %s |\n", m.c.name, mib.Format(1), m.mib, met(mib.Median, m.mib))
	}
	if s.hasTwins() {
		b.WriteString("\nAfter against before, in the same rounds: the median per-round ratio of each case to its twin built from the other binary.\n\n")
		b.WriteString("| case | ÷ | × wall | × CPU | | |\n|---|---|---:|---:|---:|---|\n")
		for _, cmp := range s.comparisons {
			if cmp.twin {
				writeComparison(&b, times, cmp)
			}
		}
	}
	return b.String()
}

// writeComparison writes one row of a ratio table.
func writeComparison(b *strings.Builder, times map[*startupCase][]sample, cmp comparison) {
	wall := stats.Summarize(stats.Finite(ratios(field(times[cmp.c], msOf), field(times[cmp.peer], msOf))))
	cpu := stats.Summarize(stats.Finite(ratios(field(times[cmp.c], cpuOf), field(times[cmp.peer], cpuOf))))
	target, verdict := "", ""
	switch {
	case cmp.target > 0:
		target, verdict = fmt.Sprintf("≤ %.2f", cmp.target), met(wall.Median, cmp.target)
	case !cmp.twin:
		target = "none"
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", cmp.c.name, cmp.peer.name, wall.Format(2), cpu.Format(2), target, verdict)
}

// met says whether a median is within its bound.
func met(median, bound float64) string {
	switch {
	case math.IsNaN(median):
		return "not measured"
	case median <= bound:
		return "met"
	}
	return "**not met**"
}

func (s *suite) hasTwins() bool {
	for _, cmp := range s.comparisons {
		if cmp.twin {
			return true
		}
	}
	return false
}

func summary(xs []sample, measure func(sample) float64) stats.Summary {
	return stats.Summarize(stats.Finite(field(xs, measure)))
}

func msOf(s sample) float64  { return s.ms }
func cpuOf(s sample) float64 { return s.cpu }
func mibOf(s sample) float64 { return s.mib }

// field picks one measure of every sample.
func field(xs []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// ratios divides xs by ref round by round (NaN where either is missing).
func ratios(xs, ref []float64) []float64 {
	return stats.Paired(xs, ref, func(x, r float64) float64 {
		if r > 0 {
			return x / r
		}
		return math.NaN()
	})
}
