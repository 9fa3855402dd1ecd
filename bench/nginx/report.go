package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/bpftap/bpftap/bench/stats"
)

// render writes the report: per case the median ratio to the bracketing
// untraced runs over all brackets and over the steady ones, and the
// distance from the floor paired per round; then every run, for
// whoever wants to redo the arithmetic.
func render(cfg *config, cases []*nginxCase, brackets map[string][]bracket, errs map[string]string, rng *rand.Rand) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# nginx throughput while counting system calls (seed 001)\n\n"+
		"Written by `bench/nginx.sh`, %s; %d rounds, wrk -t1 -c%d for %v per run, nginx (one worker) on CPU %s, wrk and tracers on CPU %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.rounds, cfg.connections, cfg.duration, cfg.serverCPU, cfg.load)
	untraced, steady, total := untracedSummary(cases, brackets, cfg.steady)
	fmt.Fprintf(&b, "Untraced: %s requests/s (median [95%% interval]); %d of %d brackets steady (their two untraced runs within %.0f%% of each other).\n\n",
		untraced.Format(0), steady, total, 100*cfg.steady)
	b.WriteString("Each traced run is compared with the untraced runs just before and just after it (requests/s over their mean); " +
		"a figure is the median of those ratios over the rounds [95% bootstrap interval]. " +
		"\"Below\" a floor is that floor's ratio minus the case's, paired per round (rounds where both brackets are steady), in points of untraced throughput: the floor tool's empty program (what any tracer pays), and bpftap's own empty probe (what bpftap pays before a probe does anything, its process included). " +
		"The seed measured syscount at 0.815 of untraced system-wide (−18.5%), and at 0.908 filtered in the kernel to another pid.\n\n")
	b.WriteString("| case | × untraced, all brackets | × untraced, steady brackets | rounds steady | points below the floor tool | points below bpftap's empty probe |\n|---|---:|---:|---:|---:|---:|\n")
	for _, c := range cases {
		writeRow(&b, c.name, brackets, errs[c.name], cfg.steady, rng)
	}
	writeRuns(&b, cases, brackets)
	return b.String()
}

func writeRow(b *strings.Builder, name string, brackets map[string][]bracket, failure string, tolerance float64, rng *rand.Rand) {
	all, steady := ratios(brackets[name], tolerance)
	if len(all) == 0 {
		fmt.Fprintf(b, "| %s | failed: %s | | 0 | | |\n", name, failure)
		return
	}
	gap := func(floor string) string {
		if name == floor {
			return "—"
		}
		return formatOrNone(floorGaps(brackets[floor], brackets[name], tolerance), 1, rng)
	}
	fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s |\n", name, stats.Bootstrap(all, 2000, rng).Format(3),
		formatOrNone(steady, 3, rng), len(steady), gap(floorName), gap(ownFloorName))
}

// formatOrNone is the median of xs with its bootstrap interval, to prec
// decimals ("none steady" without values).
func formatOrNone(xs []float64, prec int, rng *rand.Rand) string {
	if len(xs) == 0 {
		return "none steady"
	}
	return stats.Bootstrap(xs, 2000, rng).Format(prec)
}

// ratios returns the finite ratios of a case's brackets, all and steady.
func ratios(bs []bracket, tolerance float64) (all, steady []float64) {
	for _, br := range bs {
		all = append(all, br.ratio())
		if br.steady(tolerance) {
			steady = append(steady, br.ratio())
		}
	}
	return stats.Finite(all), stats.Finite(steady)
}

// floorGaps returns, round by round, the floor's ratio minus the case's in
// points, for the rounds where both brackets are steady.
func floorGaps(floor, other []bracket, tolerance float64) []float64 {
	var d []float64
	for i := range min(len(floor), len(other)) {
		f, o := floor[i], other[i]
		if !f.steady(tolerance) || !o.steady(tolerance) {
			continue
		}
		d = append(d, 100*(f.ratio()-o.ratio()))
	}
	return stats.Finite(d)
}

// untracedSummary summarizes the untraced runs (each bracket's before: all
// but each round's last) and counts the steady brackets.
func untracedSummary(cases []*nginxCase, brackets map[string][]bracket, tolerance float64) (stats.Summary, int, int) {
	var runs []float64
	steady, total := 0, 0
	for _, c := range cases {
		for _, br := range brackets[c.name] {
			runs = append(runs, br.before)
			total++
			if br.steady(tolerance) {
				steady++
			}
		}
	}
	return stats.Summarize(runs), steady, total
}

// writeRuns lists every bracket: round, case, the three requests/s.
func writeRuns(b *strings.Builder, cases []*nginxCase, brackets map[string][]bracket) {
	b.WriteString("\n<details><summary>Every run (requests/s: untraced before, traced, untraced after)</summary>\n\n| round | case | before | traced | after |\n|---:|---|---:|---:|---:|\n")
	for _, c := range cases {
		for i, br := range brackets[c.name] {
			fmt.Fprintf(b, "| %d | %s | %.0f | %.0f | %.0f |\n", i+1, c.name, br.before, br.traced, br.after)
		}
	}
	b.WriteString("\n</details>\n")
}
