// Command kfunc measures issue 23's targets for kernel.function probes in
// the guest kernels of internal/guest (Debian's 6.1 and 6.12 under qemu's
// TCG emulator; the host kernel has neither kprobes nor fentry):
//
//   - ns added per hit on vfs_read under a read loop (readloop.c, one-byte
//     reads of /dev/zero on CPU 1): bpftap's `n++` on kernel.function (fentry)
//     and kprobe.function (kprobe), beside an empty two-instruction program on
//     the same hook (empty.go) and bpftrace's `@n = count()` (kfunc, kprobe);
//   - start-up: launch to attached and launch to exit of scripts that exit
//     from their begin probe, on a tracepoint, on one function, and on
//     wildcards (vfs_*, tcp_*, a wide pattern of a few thousand functions),
//     beside bpftrace (kprobe wildcards take one kprobe-multi link where the
//     kernel has it).
//
// On the host it builds a static bpftap, itself (static, as the guest's
// driver and empty-program loader), the read loop (gcc -static) and gathers
// bpftrace with the shared libraries ldd lists; boots each kernel with them
// (guest.Initramfs.Bench runs `kfunc -guest` as /bench/run); and writes a
// report of medians and ratios. TCG times are not real times: only ratios
// within one guest compare.
//
//	go run ./bench/kfunc -o bench/RESULTS-kfunc.md
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bpftap/bpftap/bench/stats"
	"github.com/bpftap/bpftap/internal/guest"
)

func main() {
	var o guestOptions
	guestMode := flag.Bool("guest", false, "run the measurements (inside a guest)")
	empty := flag.String("empty", "", "attach an empty program: fentry or kprobe, on the function named by the argument")
	floor := flag.String("floor", "", "attach bench/floor's program (empty or count) to sys_enter as a tp_btf")
	flag.IntVar(&o.hitRounds, "hit-rounds", 7, "rounds of the per-hit cases")
	flag.IntVar(&o.startRounds, "start-rounds", 5, "rounds of the start-up cases")
	flag.IntVar(&o.wideRounds, "wide-rounds", 3, "rounds of the wide-pattern start-up cases")
	flag.IntVar(&o.reads, "reads", 100000, "reads per read-loop run")
	flag.IntVar(&o.repeat, "repeat", 3, "read-loop runs per attach (the fastest counts)")
	flag.DurationVar(&o.startTimeout, "start-timeout", 15*time.Minute, "bound on one start-up run")
	flag.StringVar(&o.wide, "wide", "*_get*", "the wide pattern")
	cases := flag.String("cases", "", "run only the cases matching this regular expression")
	flag.DurationVar(&o.settle, "settle", time.Second, "wait after a tracer says it is attached, and after it exits")
	kernels := flag.String("kernels", "6.1,6.12", "guest kernels, by name")
	archName := flag.String("arch", "amd64", "the guests' architecture: amd64 or arm64")
	out := flag.String("o", "", "write the report here (default: standard output only)")
	raw := flag.String("raw", "", "keep each guest's raw output in this directory")
	parallel := flag.Bool("parallel", false, "boot the kernels at once (faster, noisier)")
	timeout := flag.Duration("timeout", time.Hour, "bound on one guest's boot")
	qemuArgs := flag.String("qemu", "", `more qemu options for guest.Boot ("-icount shift=0,sleep=off": guest time counts instructions, a nanosecond each)`)
	flag.Parse()
	o.cases = regexp.MustCompile(*cases)
	switch {
	case *empty != "":
		emptyMain(*empty, flag.Arg(0))
		return
	case *floor != "":
		floorMain(*floor)
		return
	case *guestMode:
		guestMain(o)
		return
	}
	i := slices.IndexFunc(guest.Arches, func(a *guest.Arch) bool { return a.Name == *archName })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "kfunc: no architecture %q\n", *archName)
		os.Exit(2)
	}
	if err := host(o, guest.Arches[i], *cases, *kernels, *out, *raw, *parallel, *timeout, strings.Fields(*qemuArgs)); err != nil {
		fmt.Fprintf(os.Stderr, "kfunc: %v\n", err)
		os.Exit(1)
	}
}

// host builds what the guests of arch need, boots them and writes the
// report.
func host(o guestOptions, arch *guest.Arch, cases, kernels, out, raw string, parallel bool, timeout time.Duration, qemuArgs []string) error {
	repo, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(repo))
	qemu, err := arch.QEMUPath()
	if err != nil {
		return err
	}
	cache, err := guest.CacheDir()
	if err != nil {
		return err
	}
	busybox, err := arch.Busybox(cache)
	if err != nil {
		return err
	}
	applets, err := guest.StaticBusybox() // lists the applets, whatever busybox's architecture
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bpftap-kfunc.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bpftapBin, _, _, err := guest.BuildStatic(root, dir, arch, nil)
	if err != nil {
		return err
	}
	self := filepath.Join(dir, "kfunc")
	if err := run(root, []string{"CGO_ENABLED=0", "GOARCH=" + arch.Name}, "go", "build", "-o", self, "./bench/kfunc"); err != nil {
		return err
	}
	readloop := filepath.Join(dir, "readloop")
	if err := run(root, nil, arch.CC, "-static", "-O2", "-o", readloop, "bench/kfunc/readloop/readloop.c"); err != nil {
		return err
	}
	files := map[string]string{"bench/kfunc": self, "bench/readloop": readloop}
	note, err := "none: the host's bpftrace runs on amd64 guests only", error(nil)
	if arch == guest.AMD64 {
		note, err = addBpftrace(files)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfunc: no bpftrace in the guests: %v\n", err)
		note = "none: " + err.Error()
	}
	script := filepath.Join(dir, "run")
	args := fmt.Sprintf("-guest -hit-rounds %d -start-rounds %d -wide-rounds %d -reads %d -repeat %d -wide '%s' -settle %s -start-timeout %s -cases '%s'",
		o.hitRounds, o.startRounds, o.wideRounds, o.reads, o.repeat, o.wide, o.settle, o.startTimeout, cases)
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec /bench/kfunc "+args+"\n"), 0o755); err != nil {
		return err
	}

	var images []*guest.Image
	for _, name := range strings.Split(kernels, ",") {
		var k *guest.Kernel
		for i := range guest.Kernels {
			if guest.Kernels[i].Name == name && guest.Kernels[i].Arch == arch {
				k = &guest.Kernels[i]
			}
		}
		if k == nil {
			return fmt.Errorf("no guest kernel %q", name)
		}
		img, err := k.Fetch(cache)
		if err != nil {
			return err
		}
		images = append(images, img)
	}
	results := make([]*guestResult, len(images))
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for i, img := range images {
		boot := func() {
			defer wg.Done()
			// the modules of the results port (arm64's virtio console)
			r := &guest.Initramfs{Busybox: busybox, Applets: applets, Bpftap: bpftapBin, Files: files, Bench: script}
			var res *guestResult
			err := r.AddModules(img, arch.Modules...)
			if err == nil {
				res, err = bootBench(qemu, img, r, filepath.Join(dir, img.Name), timeout, raw, qemuArgs)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			results[i] = res
		}
		wg.Add(1)
		if parallel {
			go boot()
		} else {
			boot()
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	report := render(results, o, note, "go run ./bench/kfunc "+strings.Join(os.Args[1:], " "), strings.Join(qemuArgs, " "))
	fmt.Print(report)
	if out != "" {
		return os.WriteFile(out, []byte(report), 0o644)
	}
	return nil
}

// addBpftrace adds the host's bpftrace and the shared libraries ldd lists
// (and the dynamic loader) to files, at their host paths; it returns
// bpftrace's version and size.
func addBpftrace(files map[string]string) (string, error) {
	path, err := exec.LookPath("bpftrace")
	if err != nil {
		return "", fmt.Errorf("no bpftrace on the host (apt-get install bpftrace)")
	}
	version, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", err
	}
	ldd, err := exec.Command("ldd", path).Output()
	if err != nil {
		return "", fmt.Errorf("ldd %s: %v", path, err)
	}
	files["usr/bin/bpftrace"] = path
	var size int64
	for _, line := range strings.Split(string(ldd), "\n") {
		// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x...)"
		f := strings.Fields(line)
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		default:
			continue
		}
		files[strings.TrimPrefix(lib, "/")] = lib
		if st, err := os.Stat(lib); err == nil {
			size += st.Size()
		}
	}
	return fmt.Sprintf("%s (Debian's, dynamically linked; it and the %d libraries ldd lists, %d MB, copied into the initramfs)",
		strings.TrimSpace(string(version)), len(files)-3, size>>20), nil
}

// guestResult is one kernel's measurements.
type guestResult struct {
	kernel  string
	elapsed time.Duration
	hits    map[string][]float64 // by case, indexed by round (NaN: missing)
	starts  map[string][]startSample
	funcs   map[string]int
	info    []string
	stderr  string
}

type startSample struct {
	attached, exited float64 // ms
	status           int
}

func bootBench(qemu string, img *guest.Image, r *guest.Initramfs, dir string, timeout time.Duration, raw string, qemuArgs []string) (*guestResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fmt.Fprintf(os.Stderr, "kfunc: booting %s %s\n", img.Name, strings.Join(qemuArgs, " "))
	run, res, err := guest.BootBench(ctx, qemu, img, r, dir, qemuArgs...)
	if res != nil && raw != "" {
		os.MkdirAll(raw, 0o755)
		os.WriteFile(filepath.Join(raw, img.Name+".console"), res.Console, 0o644)
	}
	if err != nil {
		return nil, err
	}
	if raw != "" {
		os.WriteFile(filepath.Join(raw, img.Name+".out"), []byte(run.Stdout), 0o644)
		os.WriteFile(filepath.Join(raw, img.Name+".err"), []byte(run.Stderr), 0o644)
	}
	if run.Status != 0 {
		return nil, fmt.Errorf("%s: the bench exited with status %d\n%s%s", img.Name, run.Status, run.Stdout, run.Stderr)
	}
	fmt.Fprintf(os.Stderr, "kfunc: %s done in %v\n", img.Name, res.Elapsed.Round(time.Second))
	return parse(img.Name, run.Stdout, run.Stderr, res.Elapsed), nil
}

func parse(kernel, stdout, stderr string, elapsed time.Duration) *guestResult {
	g := &guestResult{kernel: kernel, elapsed: elapsed, hits: map[string][]float64{},
		starts: map[string][]startSample{}, funcs: map[string]int{}, stderr: stderr}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "hit" && len(f) == 4:
			r, _ := strconv.Atoi(f[2])
			v, _ := strconv.ParseFloat(f[3], 64)
			g.hits[f[1]] = set(g.hits[f[1]], r, v)
		case f[0] == "start" && len(f) == 6:
			r, _ := strconv.Atoi(f[2])
			a, _ := strconv.ParseFloat(f[3], 64)
			e, _ := strconv.ParseFloat(f[4], 64)
			st, _ := strconv.Atoi(f[5])
			for len(g.starts[f[1]]) <= r {
				g.starts[f[1]] = append(g.starts[f[1]], startSample{math.NaN(), math.NaN(), -2})
			}
			g.starts[f[1]][r] = startSample{a, e, st}
		case f[0] == "funcs" && len(f) == 3:
			g.funcs[f[1]], _ = strconv.Atoi(f[2])
		case f[0] == "info":
			g.info = append(g.info, strings.TrimPrefix(sc.Text(), "info "))
		}
	}
	return g
}

func set(xs []float64, i int, v float64) []float64 {
	for len(xs) <= i {
		xs = append(xs, math.NaN())
	}
	xs[i] = v
	return xs
}

// render writes the report: per kernel, the per-hit table, the start-up
// table and the targets.
func render(gs []*guestResult, o guestOptions, bpftraceNote, command, qemuArgs string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# kernel.function in the guest kernels (issue 23)\n\n")
	p("Generated by `%s` on %s, %s (%d CPUs), %s.\n", command, time.Now().Format("2006-01-02"), cpuModel(), runtime.NumCPU(), hostKernel())
	p("Guests: qemu `-accel tcg,thread=single -smp 2` (internal/guest), booted one after the other (both at once with -parallel); the read loop runs on the guest's last CPU,\n")
	p("the tracers on guest CPU 0. TCG times are emulated, not real: only ratios within one guest compare.\n")
	if qemuArgs != "" {
		p("More qemu options: `%s` (of two -smp, the last counts; with -icount, \"ns\" are guest instructions).\n", qemuArgs)
	}
	p("bpftrace: %s.\n\n", bpftraceNote)
	p("Medians with distribution-free ~95%% intervals `[lo, hi]` (order statistics; min–max below 6 samples).\n")
	p("Per hit: %d rounds, each case once a round in rotated order; under each attach the read loop runs %d times, %d one-byte reads of /dev/zero\n", o.hitRounds, o.repeat, o.reads)
	p("a run, and the fastest run counts (a busy host only adds time), %v after the tracer says it is attached\n", o.settle)
	p("(and the next case %v after it exits: the kernel frees its maps after the exit);\n", o.settle)
	p("\"added\" is traced minus untraced ns per read, paired within a round; the ratios are paired within a round too.\n")
	p("Start-up: %d rounds (%d for the wide pattern `%s`); launch to attached is to bpftap -v's `Pass 5: attached`;\n", o.startRounds, o.wideRounds, o.wide)
	p("launch to exit is the whole run of a script that exits from its begin probe (attach, run begin, detach, exit).\n\n")
	for _, g := range gs {
		renderGuest(&b, g, o.wide)
	}
	return b.String()
}

func renderGuest(b *strings.Builder, g *guestResult, wide string) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## %s\n\n", g.kernel)
	for _, i := range g.info {
		p("- %s\n", i)
	}
	p("- guest run: %v wall on the host\n\n", g.elapsed.Round(time.Second))

	base := g.hits["untraced"]
	added := func(name string) []float64 {
		return stats.Paired(g.hits[name], base, func(x, b float64) float64 { return x - b })
	}
	ratio := func(a, c []float64) string {
		r := stats.Finite(stats.Paired(a, c, func(x, y float64) float64 { return x / y }))
		if len(r) == 0 {
			return "–"
		}
		return stats.Summarize(r).Format(2)
	}
	p("### ns per vfs_read hit\n\n")
	p("| case | ns/read | added ns/read | × empty, same hook | × bpftrace, same hook |\n|---|---|---|---|---|\n")
	for _, name := range []string{"untraced", "bpftap_seed", "bpftap_seed_as510", "empty_seed", "count_seed", "empty_fentry", "empty_kprobe", "bpftap_fentry", "bpftap_kprobe", "bpftrace_fentry", "bpftrace_kprobe"} {
		xs := stats.Finite(g.hits[name])
		if len(xs) == 0 {
			continue
		}
		hook := name[strings.LastIndex(name, "_")+1:]
		addedS, xEmpty, xBpftrace := "", "", ""
		if name != "untraced" {
			a := added(name)
			addedS = stats.Summarize(stats.Finite(a)).Format(0)
			if !strings.HasPrefix(name, "empty") {
				xEmpty = ratio(a, added("empty_"+hook))
			}
			if strings.HasPrefix(name, "bpftap") && len(g.hits["bpftrace_"+hook]) > 0 {
				xBpftrace = ratio(a, added("bpftrace_"+hook))
			}
		}
		p("| %s | %s | %s | %s | %s |\n", name, stats.Summarize(xs).Format(0), addedS, xEmpty, xBpftrace)
	}
	p("\n")

	p("### start-up (ms)\n\n")
	p("| case | functions | launch to attached | launch to exit | exit × tracepoint's | exit × bpftrace's | failed runs |\n|---|---|---|---|---|---|---|\n")
	pattern := map[string]string{"one": "vfs_read", "one_kprobe": "vfs_read", "vfs": "vfs_*", "vfs_kprobe": "vfs_*", "vfs_fentry": "vfs_*", "tcp": "tcp_*", "tcp_kprobe": "tcp_*"}
	names := make([]string, 0, len(g.starts))
	for name := range g.starts {
		names = append(names, name)
	}
	order := []string{"tp", "one", "one_kprobe", "vfs", "vfs_kprobe", "vfs_fentry", "tcp", "tcp_kprobe", "wide", "wide_kprobe"}
	rank := func(n string) int {
		tool, rest, _ := strings.Cut(n, "_")
		for i, o := range order {
			if o == rest {
				return i*2 + map[bool]int{true: 0, false: 1}[tool == "bpftap"]
			}
		}
		return 100
	}
	sort.Slice(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	for _, name := range names {
		tool, rest, _ := strings.Cut(name, "_")
		var att, exit []float64
		failed := 0
		for _, s := range g.starts[name] {
			if s.status != 0 {
				failed++
				att, exit = append(att, math.NaN()), append(exit, math.NaN())
				continue
			}
			att, exit = append(att, s.attached), append(exit, s.exited)
		}
		tpExit := exitTimes(g.starts[tool+"_tp"])
		funcs := ""
		if pat, ok := pattern[rest]; ok {
			funcs = "1"
			if pat != "vfs_read" {
				funcs = strconv.Itoa(g.funcs[pat])
			}
		} else if strings.HasPrefix(rest, "wide") {
			funcs = strconv.Itoa(g.funcs[wide])
		}
		attS := "–"
		if tool == "bpftap" && len(stats.Finite(att)) > 0 {
			attS = stats.Summarize(stats.Finite(att)).Format(0)
		}
		exitS, xTp, xBt := "–", "", ""
		if len(stats.Finite(exit)) > 0 {
			exitS = stats.Summarize(stats.Finite(exit)).Format(0)
			if rest != "tp" {
				xTp = ratio(exit, tpExit)
			}
			if tool == "bpftap" && len(g.starts["bpftrace_"+strings.TrimSuffix(rest, "_kprobe")]) > 0 {
				xBt = ratio(exit, exitTimes(g.starts["bpftrace_"+strings.TrimSuffix(rest, "_kprobe")]))
			}
		}
		p("| %s | %s | %s | %s | %s | %s | %d of %d |\n", name, funcs, attS, exitS, xTp, xBt, failed, len(g.starts[name]))
	}
	p("\n")
	if g.stderr != "" {
		p("<details><summary>%s: what the tracers printed in the first round</summary>\n\n```\n%s```\n</details>\n\n", g.kernel, g.stderr)
	}
}

func exitTimes(ss []startSample) []float64 {
	var out []float64
	for _, s := range ss {
		if s.status != 0 {
			out = append(out, math.NaN())
		} else {
			out = append(out, s.exited)
		}
	}
	return out
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			_, v, _ := strings.Cut(line, ":")
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func hostKernel() string {
	out, _ := exec.Command("uname", "-r").Output()
	return "host kernel " + strings.TrimSpace(string(out))
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
