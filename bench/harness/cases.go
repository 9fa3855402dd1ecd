package main

import (
	"bytes"
	"fmt"
	"github.com/bpftap/bpftap/bench/tracer"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tracerCase is one row of the overhead table.
type tracerCase struct {
	name    string   // row label
	argv    []string // tracer command line; nil for the untraced baseline
	env     []string
	wrap    bool   // the tracer runs the workload itself (strace)
	counted bool   // its output must show the workload's calls
	skip    string // why it does not run, if it does not
}

const (
	baselineName  = "no tracer (baseline)"
	syscountName  = "libbpf-tools syscount"
	bpftraceRef   = "bpftrace `@[comm] = count()`"
	oracleStartup = "stap-oracle (translate + load + attach), seed `++`"
)

// setup holds what the cases need: the built binaries, the seed scripts
// and what preparing SystemTap's BPF programs measured.
type setup struct {
	bin, scripts string
	stapCache    string             // stap-oracle's cache (kernel tree, setrlimit shim)
	translate    map[string]float64 // seconds stap -p4 took per seed variant
	notes        []string
}

// variants are the seed's two scripts; stapFile is the one stapbpf runs.
var variants = []struct{ label, file, stapFile string }{
	{"`++`", "syscalls_by_proc_inc.stp", "syscalls_by_proc_inc.stp"},
	{"`<<< 1`", "syscalls_by_proc_agg.stp", "syscalls_by_proc_agg_stapbpf.stp"},
}

func (s *setup) cases(cfg *config) []*tracerCase {
	cs := []*tracerCase{
		{name: baselineName},
		{name: "floor: empty program, tp_btf", argv: []string{s.path("floor"), "-prog=empty", "-attach=tp_btf"}},
		{name: "floor: empty program, raw_tp", argv: []string{s.path("floor"), "-prog=empty", "-attach=raw_tp"}},
		{name: "floor: per-CPU hash count by comm, tp_btf (hand-written)", argv: []string{s.path("floor"), "-prog=count", "-attach=tp_btf"}},
		{name: bpftraceRef, counted: true, argv: []string{"bpftrace", "-e", "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }"}},
		{name: "bpftrace `@[comm]++`", counted: true, argv: []string{"bpftrace", "-e", "tracepoint:raw_syscalls:sys_enter { @[comm]++ }"}},
		{name: syscountName, counted: true, argv: []string{"syscount"}},
	}
	for _, v := range variants {
		if cfg.stapbpf {
			cs = append(cs, s.stapCase(v.label, v.stapFile))
		}
	}
	for _, v := range variants {
		cs = append(cs, s.bpftapCase("bpftap, seed "+v.label, s.path("bpftap"), v.file))
		if cfg.baseline != "" {
			cs = append(cs, s.bpftapCase("bpftap baseline, seed "+v.label, cfg.baseline, v.file))
		}
	}
	if cfg.strace {
		cs = append(cs, &tracerCase{name: fmt.Sprintf("strace -c -f (n/%d calls)", cfg.straceDiv), wrap: true,
			argv: []string{"strace", "-c", "-f", "-o", "/dev/null"}})
	}
	return cs
}

func (s *setup) path(name string) string { return filepath.Join(s.bin, name) }

// stapCase runs the seed script under stapbpf from a program translated
// once beforehand, exactly as stap-oracle does in one go: translating
// takes ~45 s per run, too long to repeat in every round.
func (s *setup) stapCase(label, file string) *tracerCase {
	c := &tracerCase{name: "SystemTap BPF runtime (stapbpf), seed " + label, counted: true}
	bo, err := s.translateStap(file)
	if err != nil {
		c.skip = err.Error()
		return c
	}
	c.argv = []string{"stapbpf", bo}
	c.env = []string{"LD_PRELOAD=" + filepath.Join(s.stapCache, "no-rlimit.so")}
	return c
}

func (s *setup) translateStap(file string) (string, error) {
	tree := filepath.Join(s.stapCache, "kernel-tree")
	if _, err := os.Stat(filepath.Join(tree, "Makefile")); err != nil {
		return "", fmt.Errorf("stap-oracle's kernel tree is missing (%v): run stap-oracle once", err)
	}
	module := "bench_" + strings.TrimSuffix(strings.TrimPrefix(file, "syscalls_by_proc_"), ".stp")
	module = strings.ReplaceAll(module, "_stapbpf", "")
	start := time.Now()
	cmd := exec.Command("stap", "--compatible=4.1", "--runtime=bpf", "-r", tree, "-p4", "-m", module,
		filepath.Join(s.scripts, file))
	cmd.Dir = s.bin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("stap -p4 failed: %v: %s", err, tracer.FirstLines(withoutSetupWarnings(stderr.String())))
	}
	s.translate[file] = time.Since(start).Seconds()
	return filepath.Join(s.bin, module+".bo"), nil
}

// bpftapCase runs the seed script with a bpftap binary (the one built from
// this tree, or -baseline's), once `bpftap -p4` (translate and load)
// accepts it.
func (s *setup) bpftapCase(name, bpftap, file string) *tracerCase {
	script := filepath.Join(s.scripts, file)
	c := &tracerCase{name: name, counted: true, argv: []string{bpftap, script}}
	if _, err := os.Stat(bpftap); err != nil {
		build, _ := os.ReadFile(s.path("bpftap-build.log"))
		c.skip = "not yet supported: cmd/bpftap does not build: " + tracer.FirstLines(string(build))
		return c
	}
	var stderr bytes.Buffer
	check := exec.Command(bpftap, "-p4", script)
	check.Stderr = &stderr
	if err := check.Run(); err != nil {
		c.skip = "not yet supported: " + tracer.FirstLines(stderr.String())
	}
	return c
}

// showsCalls reports whether a tracer's output has a line naming the
// workload (comm "getppid") with a count of at least n.
func showsCalls(output string, n int) bool {
	for line := range strings.Lines(output) {
		if !strings.Contains(line, "getppid") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, err := strconv.Atoi(f); err == nil && v >= n {
				return true
			}
		}
	}
	return false
}

// withoutSetupWarnings drops the lines stap prints because of this
// machine's setup (no kernel symbol table, Debian's tip).
func withoutSetupWarnings(s string) string {
	var keep []string
	for line := range strings.Lines(s) {
		if !strings.Contains(line, "symbol table missing") && !strings.HasPrefix(line, "Tip: ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
