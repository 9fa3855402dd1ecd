package main

import (
	"fmt"
	"github.com/bpftap/bpftap/bench/stats"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

func renderReport(cfg *config, s *setup, cases []*tracerCase, results map[string]*result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\nWritten by `%s`, %s; %d rounds, %d getppid calls per run, workload pinned to CPUs %v in turn. Method: at the end of this file.\n\n",
		strings.Join(append([]string{"bench/run.sh"}, userArgs()...), " "), time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.rounds, cfg.n, cfg.cpus)
	writeMachine(&b, s)
	for _, cpu := range cfg.cpus {
		writeOverhead(&b, cfg, cpu, cases, results)
	}
	writeStartup(&b, cases, results)
	writeSkipped(&b, cases, results)
	b.WriteString(method)
	return b.String()
}

func writeMachine(b *strings.Builder, s *setup) {
	b.WriteString("## Machine\n\n| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, v) }
	row("kernel", firstLine(output("uname", "-rv")))
	row("CPU", fmt.Sprintf("%s, %d CPUs", cpuModel(), runtime.NumCPU()))
	row("bpftrace", firstLine(output("bpftrace", "--version")))
	row("libbpf-tools (syscount)", firstLine(output("dpkg-query", "-W", "-f=${Version}", "libbpf-tools")))
	row("SystemTap", firstLine(output("stap", "-V")))
	row("strace", firstLine(output("strace", "-V")))
	row("bpftap", "commit "+firstLine(output("git", "describe", "--always", "--dirty")))
	row("Go, cilium/ebpf (floor tool)", runtime.Version()+", "+output("go", "list", "-m", "-f={{.Version}}", "github.com/cilium/ebpf"))
	for _, v := range variants {
		if sec, ok := s.translate[v.stapFile]; ok {
			row("stap -p4 translation of "+v.stapFile, fmt.Sprintf("%.1f s", sec))
		}
	}
	b.WriteString("\n")
}

// writeOverhead writes the table of ns per call on one CPU.
func writeOverhead(b *strings.Builder, cfg *config, cpu int, cases []*tracerCase, results map[string]*result) {
	base := results[baselineName].ns[cpu]
	added := func(name string) []float64 {
		var xs []float64
		for round, ns := range results[name].ns[cpu] {
			if !math.IsNaN(ns) && !math.IsNaN(base[round]) {
				xs = append(xs, ns-base[round])
			}
		}
		return xs
	}
	ref := func(name string) float64 { return stats.Summarize(added(name)).Median }
	syscount, bpftrace := ref(syscountName), ref(bpftraceRef)
	fmt.Fprintf(b, "## ns per getppid() on CPU %d\n\nMedian [95%% interval of the median] over rounds. \"added\" = traced run − the same round's untraced run.\n\n", cpu)
	b.WriteString("| case | ns per call | ns added | × syscount | × bpftrace count() | counted the calls |\n|---|---:|---:|---:|---:|---|\n")
	for _, c := range cases {
		r := results[c.name]
		all := stats.Summarize(stats.Finite(r.ns[cpu]))
		if all.N == 0 {
			fmt.Fprintf(b, "| %s | — | — | | | %s |\n", c.name, shortReason(r.err))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | ", c.name, all.Format(1))
		if c.argv == nil {
			b.WriteString("0 | | | |\n")
			continue
		}
		a := stats.Summarize(added(c.name))
		fmt.Fprintf(b, "%s | %s | %s | %s |\n", a.Format(1), ratio(a.Median, syscount), ratio(a.Median, bpftrace), countedNote(c, r, all.N))
	}
	b.WriteString("\n")
}

func writeStartup(b *strings.Builder, cases []*tracerCase, results map[string]*result) {
	b.WriteString("## Start-up: launch to probes attached (ms)\n\nMedian [95% interval of the median], from the rounds above (each launch of a tracer is one sample).\n\n| tracer | ms | samples |\n|---|---:|---:|\n")
	names := []string{oracleStartup}
	for _, c := range cases {
		if c.argv != nil && !c.wrap {
			names = append(names, c.name)
		}
	}
	for _, name := range names {
		r := results[name]
		if len(r.startup) == 0 {
			fmt.Fprintf(b, "| %s | — (%s) | 0 |\n", name, shortReason(r.err))
			continue
		}
		s := stats.Summarize(r.startup)
		fmt.Fprintf(b, "| %s | %s | %d |\n", name, s.Format(1), s.N)
	}
	b.WriteString("\n")
}

func writeSkipped(b *strings.Builder, cases []*tracerCase, results map[string]*result) {
	var lines []string
	for _, c := range cases {
		if err := results[c.name].err; err != "" {
			lines = append(lines, fmt.Sprintf("- %s: %s\n", c.name, err))
		}
	}
	if err := results[oracleStartup].err; err != "" {
		lines = append(lines, fmt.Sprintf("- %s: %s\n", oracleStartup, err))
	}
	if len(lines) > 0 {
		b.WriteString("## Cases that did not run\n\n" + strings.Join(lines, "") + "\n")
	}
}

func ratio(x, ref float64) string {
	if math.IsNaN(x) || math.IsNaN(ref) || ref <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", x/ref)
}

func countedNote(c *tracerCase, r *result, rounds int) string {
	if !c.counted {
		return "n/a"
	}
	if r.uncounted == 0 {
		return "yes"
	}
	return fmt.Sprintf("**no** in %d of %d rounds", r.uncounted, rounds)
}

func shortReason(err string) string {
	if strings.HasPrefix(err, "not yet supported") {
		return "not yet supported"
	}
	if err == "" {
		return "no data"
	}
	return "failed"
}

func output(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "unavailable (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// userArgs returns the harness's arguments without the -bin that run.sh adds.
func userArgs() []string {
	var args []string
	for i := 1; i < len(os.Args); i++ {
		if os.Args[i] == "-bin" {
			i++
			continue
		}
		args = append(args, os.Args[i])
	}
	return args
}

const method = `## Method

- Workload: bench/getppid, a Go program that pins its thread to the given CPU
  (sched_setaffinity), warms up with n/100 calls, then times n raw getppid
  system calls (no Go scheduler hooks) and prints the mean ns per call. It is
  run once per CPU listed, while the tracer is attached.
- Rounds: every round runs every case once in a fresh random order, so slow
  drifts of the noisy shared machine hit all cases alike. "ns added" pairs
  each traced run with the same round's untraced run. The interval is the
  distribution-free confidence interval of the median from order statistics
  (at least 95%; with fewer than 6 rounds it is [min, max], 94% at 5 rounds).
- Attachment (start-up): the tracer starts alone in a new process group; the
  harness polls every millisecond the open files of that group's processes
  and asks the kernel (BPF_TASK_FD_QUERY, as ` + "`bpftool perf`" + ` does) whether a
  BPF link or perf event holds a program attached to raw_syscalls:sys_enter or
  sys_exit. Start-up is the time from fork/exec to the first such answer
  (not to the tracer's exit: bpftrace -c /bin/true takes ~320 ms from launch
  to exit here, the figure quoted in issue #3, but attaches within ~55 ms). Then
  it waits -settle before running the workload, and stops the tracer with
  SIGINT (the tracers print their tables then).
- "counted the calls": the tracer's printed table has a line naming the
  workload (comm getppid) with a count of at least n.
- Floors (bench/floor, cilium/ebpf): an empty program (r0 = 0; exit) on the
  BTF-typed raw tracepoint or on the raw tracepoint sys_enter, and a
  hand-written count by comm in a per-CPU hash: what a good compilation of
  the seed script costs.
- bpftrace 0.17 attaches through the classic tracepoint (perf event);
  libbpf-tools syscount by default attaches only to sys_exit and counts by
  syscall number.
- SystemTap's BPF runtime: stap-oracle translates a tracepoint script in
  about 45 s on every run, so the overhead rounds translate each seed variant
  once (` + "`stap --compatible=4.1 --runtime=bpf -r KERNEL-TREE -p4`" + `, stap-oracle's
  own command and kernel tree) and run ` + "`stapbpf`" + ` on the result with stap-oracle's
  setrlimit shim; the stapbpf rows' start-up is therefore load + attach only.
  The separate stap-oracle row is the whole script-to-attached time.
- bpftap rows run the seed scripts verbatim with the bpftap built from this
  tree; they are reported as not yet supported while ` + "`bpftap -p4 SCRIPT`" + `
  fails.
- The seed's ` + "`<<< 1`" + ` script sorts a foreach over statistics, which stapbpf refuses;
  stapbpf runs scripts/syscalls_by_proc_agg_stapbpf.stp instead, the same
  kernel probe with an unsorted end probe.
- strace runs the workload under ` + "`strace -c -f`" + ` (ptrace stops on every call), with
  fewer calls; its start-up is not measured.
`
