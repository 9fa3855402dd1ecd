package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// goTestPackages are the packages whose Go tests also run in every guest
// (tests that need kprobes or fentry skip on the host and run there);
// $BPFTAP_GUEST_PACKAGES replaces the list (space-separated).
var goTestPackages = []string{"./internal/bpfrt", "./internal/kernel", "./internal/target"}

// goTestFlags are more flags for a package's test binary in the guests, by
// its name. The guests are emulated, in turn on one host thread, on a host
// that may be busy: tests of wall-clock rates cannot hold there (bpfrt's
// TestPerfSampling counted 47 cpu-clock samples where 200 were due).
var goTestFlags = map[string][]string{
	"bpfrt": {"-test.skip=^TestPerfSampling$"},
	// docs/kernels.md, which TestFeatureTable reads, is not in the guest
	"target": {"-test.skip=^TestFeatureTable$"},
}

// A guest is bounded by its progress, not by a total: it fails when no
// case or test binary has ended for stallBound, or a minute before go
// test's own deadline, so that a guest running late fails with its console
// rather than go test's panic. Three guests share the host's two cores: on
// a quiet host a whole suite took 12 to 16 minutes per guest, beside a
// second copy of the suite and two CPU hogs 14 to 19, and with more work
// on top 41 (a fixed bound, and the guest's own 400 s limit of
// nfs_traffic, stopped it). The guest's own time limits are guestSlack
// times what a case needs on a quiet host, since its clock is the host's
// wall clock; stallBound adds bootMargin (booting, the features, powering
// off) to the longest of them, so that the guest's own timeout, which
// names the hung run, comes first.
const (
	guestSlack = 3
	bootMargin = 5 * time.Minute
)

// stallBound is the longest a guest booted with r may go without a run
// ending.
func stallBound(r *Initramfs) time.Duration { return bootMargin + r.LongestLimit() }

// TestGuest boots each kernel of Kernels under qemu, in parallel, runs the
// cases of testdata/guest that apply to it and the Go tests of
// goTestPackages, and checks every run: TestGuest/KERNEL/case/NAME,
// TestGuest/KERNEL/go/PKG (KERNEL is Kernel.String: 6.1, 6.1-arm64).
// $BPFTAP_GUEST_KERNELS, when set, names the kernels to boot
// (space-separated). It skips only when qemu, busybox-static or a kernel
// package cannot be had on this machine, saying why; with
// BPFTAP_GUEST_REQUIRE=1 (CI) that is a failure instead.
func TestGuest(t *testing.T) {
	cases := loadCases(t)
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	kernels := selectedKernels(t)
	builds := map[*Arch]*archBuild{}
	for _, k := range kernels {
		if builds[k.Arch] == nil {
			builds[k.Arch] = buildFor(t, cache, k.Arch)
		}
	}
	for _, k := range kernels {
		b := builds[k.Arch]
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			unavailable(t, b.err)
			img, err := k.Fetch(cache)
			unavailable(t, err)
			r := &Initramfs{Busybox: b.busybox, Applets: b.applets, Bpftap: b.bpftap, Tests: b.tests, TestData: b.testdata,
				TestFlags: goTestFlags, Config: img.Config, Files: b.files, Slack: guestSlack}
			for _, c := range cases {
				if c.RunsOn(k) {
					r.Cases = append(r.Cases, c)
				}
			}
			if err := r.AddModules(img, k.Arch.BootModules()...); err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(r.Cases, func(c *Case) bool { return c.Debuginfo }) {
				dbg, err := img.Debuginfo()
				unavailable(t, err)
				r.Debuginfo = dbg
			}
			bootAndCheck(t, b.qemu, img, r)
		})
	}
}

// archBuild is what the guests of one architecture run: its emulator,
// busybox (and the host's, which lists the applets), bpftap, test
// binaries and programs, built for it; err says why there is none.
type archBuild struct {
	qemu, busybox, applets, bpftap string
	tests, testdata, files         map[string]string
	err                            error
}

// buildFor builds what the guests of arch run; an error that means the
// guests cannot be had here is left in err, for each guest to skip on.
func buildFor(t *testing.T, cache string, arch *Arch) *archBuild {
	b := &archBuild{}
	if b.qemu, b.err = arch.QEMUPath(); b.err != nil {
		return b
	}
	if b.busybox, b.err = arch.Busybox(cache); b.err != nil {
		return b
	}
	if arch != AMD64 {
		if b.applets, b.err = StaticBusybox(); b.err != nil {
			return b
		}
	}
	dir := filepath.Join(t.TempDir(), arch.Name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var err error
	if b.bpftap, b.tests, b.testdata, err = BuildStatic("../..", dir, arch, packages()); err != nil {
		t.Fatal(err)
	}
	if b.files, err = UserFiles("../..", dir, arch); err != nil {
		t.Fatal(err)
	}
	t.Logf("built bpftap, %d test binaries and %d programs for %s in %v", len(b.tests), len(GuestPrograms), arch.Name, time.Since(start).Round(time.Millisecond))
	return b
}

// selectedKernels are Kernels, or those BPFTAP_GUEST_KERNELS names.
func selectedKernels(t *testing.T) []Kernel {
	names := strings.Fields(os.Getenv("BPFTAP_GUEST_KERNELS"))
	if len(names) == 0 {
		return Kernels
	}
	var kernels []Kernel
	for _, name := range names {
		i := slices.IndexFunc(Kernels, func(k Kernel) bool { return k.String() == name })
		if i < 0 {
			t.Fatalf("BPFTAP_GUEST_KERNELS: no kernel %q", name)
		}
		kernels = append(kernels, Kernels[i])
	}
	return kernels
}

// bootAndCheck boots img with r and checks each of its runs.
func bootAndCheck(t *testing.T, qemu string, img *Image, r *Initramfs) {
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := r.Write(initrd); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	}
	defer cancel()
	stall := stallBound(r)
	var stalled atomic.Bool
	watchdog := time.AfterFunc(stall, func() { stalled.Store(true); cancel() })
	defer watchdog.Stop()
	t.Logf("%s: %d cases and %d test binaries, a run ending at least every %v", img.Kernel, len(r.Cases), len(r.Tests), stall)
	logEnd := endedLogger(t, img.Kernel.String(), len(r.Cases)+len(r.Tests))
	res, err := Boot(ctx, qemu, img, initrd, dir, func(run string) { watchdog.Reset(stall); logEnd(run) })
	if stalled.Load() {
		err = fmt.Errorf("no case or test binary ended for %v: %w", stall, err)
	}
	if err != nil {
		t.Fatalf("%s: %v\nconsole:\n%s", filepath.Base(img.Dir), err, res.Console)
	}
	t.Logf("%s: booted, ran %d cases and %d test binaries, powered off in %v",
		filepath.Base(img.Dir), len(r.Cases), len(r.Tests), res.Elapsed.Round(100*time.Millisecond))
	if info := res.Runs["info features"]; info != nil {
		t.Logf("features:\n%s%s", img.Features(), info.Stdout)
	}
	t.Run("case", func(t *testing.T) {
		for _, c := range r.Cases {
			t.Run(c.Name, func(t *testing.T) { checkCase(t, img.Name, c, res.Runs["case "+c.Name]) })
		}
	})
	t.Run("go", func(t *testing.T) {
		for _, name := range sortedKeys(r.Tests) {
			t.Run(name, func(t *testing.T) { checkGoTest(t, res.Runs["go "+name]) })
		}
	})
}

// endedLogger logs each case and test binary as it ends in the guest
// (go test -v shows the line at once), so that a slow guest can be told
// from a hung one: "6.12: case exec status=0 (3 of 64)".
func endedLogger(t *testing.T, kernel string, runs int) func(string) {
	ended := 0
	return func(run string) {
		if strings.HasPrefix(run, "case ") || strings.HasPrefix(run, "go ") {
			ended++
			t.Logf("%s: %s (%d of %d)", kernel, run, ended, runs)
		}
	}
}

func checkCase(t *testing.T, kernel string, c *Case, run *Run) {
	if run == nil {
		t.Fatal("the guest did not run the case")
	}
	if want := c.WantStatus(kernel); run.Status != want {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", run.Status, want, run.Stdout, run.Stderr)
	}
	for _, stream := range []struct{ name, got string }{{"stdout", run.Stdout}, {"stderr", run.Stderr}} {
		if err := c.Check(kernel, stream.name, stream.got); err != nil {
			t.Error(err)
		}
	}
}

// checkGoTest passes when the test binary passed in the guest; its verbose
// output is logged either way, so that what ran and what skipped shows.
func checkGoTest(t *testing.T, run *Run) {
	if run == nil {
		t.Fatal("the guest did not run the test binary")
	}
	t.Logf("in the guest:\n%s%s", run.Stdout, run.Stderr)
	if run.Status != 0 {
		t.Errorf("the test binary exited with status %d", run.Status)
	}
}

// loadCases parses every case of testdata/guest, or only those whose names
// match one of the glob patterns BPFTAP_GUEST_CASES lists when it is set
// (say BPFTAP_GUEST_CASES='load_* exec').
func loadCases(t *testing.T) []*Case {
	patterns := strings.Fields(os.Getenv("BPFTAP_GUEST_CASES"))
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	var paths []string
	for _, pattern := range patterns {
		matched, _ := filepath.Glob("../../testdata/guest/" + pattern + ".txtar")
		if len(matched) == 0 {
			t.Fatalf("no cases in testdata/guest match %q", pattern)
		}
		paths = append(paths, matched...)
	}
	var cases []*Case
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCase(strings.TrimSuffix(filepath.Base(path), ".txtar"), data)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

// packages are the Go test packages the guests run, built for each
// guest's architecture.
func packages() []string {
	if list, ok := os.LookupEnv("BPFTAP_GUEST_PACKAGES"); ok {
		return strings.Fields(list)
	}
	return goTestPackages
}

// unavailable skips the test when err says a guest cannot be had here
// (fails it under BPFTAP_GUEST_REQUIRE=1), and fails it on any other error.
func unavailable(t *testing.T, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrUnavailable) && os.Getenv("BPFTAP_GUEST_REQUIRE") != "1":
		t.Skipf("skipped: %v", err)
	default:
		t.Fatal(err)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
