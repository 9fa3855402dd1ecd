package driver

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/browsertest"
)

// TestSyscallTimeFlamegraphExample runs examples/syscall_time_flamegraph.stp
// on syscall_paths, which reads /dev/zero a byte at a time 2000 times under
// main → read_phase → read_small, then sleeps 200 ms under main →
// sleep_phase → nap. The heaviest folded stack is the sleep's, through
// sleep_phase, topped by the call, weighing at least the 200 ms slept; the
// reads are charged to read_phase. (libc's wrappers have no frame pointer,
// so the walk skips the function that called them: nap and read_small
// are not on the stacks, docs/thread-profile.md.)
func TestSyscallTimeFlamegraphExample(t *testing.T) {
	requireFeature(t, "bpf")
	folded := runExample(t, "-c", filepath.Join(cPrograms(), "syscall_paths")+" 2000", "../../examples/syscall_time_flamegraph.stp")
	stacks := foldedStacks(t, folded)
	heaviest := stacks[0]
	if !strings.Contains(heaviest.stack, ";main;sleep_phase;") || !strings.HasSuffix(heaviest.stack, ";clock_nanosleep") ||
		heaviest.weight < 200e6 {
		t.Errorf("heaviest stack %s %d, want main;sleep_phase;…;clock_nanosleep of at least 200 ms; folded stacks:\n%s",
			heaviest.stack, heaviest.weight, folded)
	}
	reads := int64(0)
	for _, s := range stacks {
		if strings.Contains(s.stack, ";main;read_phase;") && strings.HasSuffix(s.stack, ";read") {
			reads += s.weight
		}
	}
	if reads <= 0 || reads >= heaviest.weight {
		t.Errorf("reads under main;read_phase took %d ns, want some, less than the sleep; folded stacks:\n%s", reads, folded)
	}
	checkPicture(t, folded, []string{"sleep_phase", "read_phase", "clock_nanosleep"}, "-unit", "ns")
}

// foldedStack is a line of folded output: a stack and its weight.
type foldedStack struct {
	stack  string
	weight int64
}

// foldedStacks reads "STACK WEIGHT" lines, failing t on any other.
func foldedStacks(t *testing.T, text string) []foldedStack {
	t.Helper()
	var stacks []foldedStack
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		weight, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("not a folded stack: %q in\n%s", line, text)
		}
		stacks = append(stacks, foldedStack{line[:i], weight})
	}
	return stacks
}

// TestThreadProfileExample runs examples/thread_profile.stp on omp, an
// OpenMP program whose two threads each read /dev/zero 200 times and
// sleep 50 ms, as the docs run it (-o, then bpftap-tau), and checks
// that each thread's table adds up (its total is its calls', no share
// over 100 %, its lifetime its end less its start), that both threads
// show their reads and sleeps, that the TAU profile of each thread
// (read by TAU's format, independently of bpftap-tau) holds the table's
// numbers in microseconds; and that the folded form (-G folded=1) of
// another run has a line per thread and call.
func TestThreadProfileExample(t *testing.T) {
	requireFeature(t, "bpf")
	dir := t.TempDir()
	omp := filepath.Join(cPrograms(), "omp") + " 200"
	out := filepath.Join(dir, "omp.prof")
	runExample(t, "-o", out, "../../examples/thread_profile.stp", "-c", omp)
	text, _ := os.ReadFile(out)
	threads := profileTables(t, string(text))
	if len(threads) != 2 {
		t.Fatalf("%d tables, want 2 (omp's threads):\n%s", len(threads), text)
	}
	for i, th := range threads {
		th.check(t)
		if th.calls["read"].count < 200 || th.calls["clock_nanosleep"].us < 50000 || (i > 0) != (th.start > 0) {
			t.Errorf("thread %d: reads %+v, sleeps %+v, starts at %d µs: want 200 reads or more, 50 ms asleep, the second thread later than the first\n%s",
				i, th.calls["read"], th.calls["clock_nanosleep"], th.start, text)
		}
	}
	tau := filepath.Join(dir, "tau")
	if out, err := exec.Command("go", "run", "../../cmd/bpftap-tau", "-d", tau, out).CombinedOutput(); err != nil {
		t.Fatalf("bpftap-tau: %v\n%s", err, out)
	}
	for n, th := range threads {
		prof, err := os.ReadFile(filepath.Join(tau, fmt.Sprintf("profile.0.0.%d", n)))
		if err != nil {
			t.Fatal(err)
		}
		th.checkTAU(t, string(prof))
	}
	runExample(t, "-o", filepath.Join(dir, "omp.folded"), "-G", "folded=1", "../../examples/thread_profile.stp", "-c", omp)
	text, _ = os.ReadFile(filepath.Join(dir, "omp.folded"))
	checkFoldedThreads(t, foldedStacks(t, string(text)))
	thread, _, _ := strings.Cut(string(text), ";")
	checkPicture(t, string(text), []string{"read", "clock_nanosleep", thread}, "-chart", "bars", "-unit", "ns")
}

// checkPicture draws the folded lines with bpftap-flamegraph (with args)
// and opens the SVG in headless Chromium, as a user opens it: the
// screenshot is painted beyond the background, and the page the browser
// built names each of names.
func checkPicture(t *testing.T, folded string, names []string, args ...string) {
	t.Run("picture", func(t *testing.T) {
		chromium := browsertest.Chromium(t)
		dir := t.TempDir()
		in, svg := filepath.Join(dir, "in.folded"), filepath.Join(dir, "picture.svg")
		if err := os.WriteFile(in, []byte(folded), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", append(append([]string{"run", "../../cmd/bpftap-flamegraph"}, args...), in)...)
		out, err := cmd.Output()
		if err == nil {
			err = os.WriteFile(svg, out, 0o644)
		}
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		img := browsertest.Screenshot(t, chromium, svg, "", 1200, 400)
		if n := browsertest.Painted(img, color.RGBA{0xf8, 0xf8, 0xf8, 0xff}, 0, 1200, 40, 400); n < 5000 {
			t.Errorf("%d pixels of the picture painted, want a chart's (5000 or more)", n)
		}
		dom := string(browsertest.Browse(t, chromium, svg, "", "--dump-dom"))
		for _, name := range names {
			if !strings.Contains(dom, html.EscapeString(name)) {
				t.Errorf("the page shows no %q", name)
			}
		}
	})
}

// runExample runs bpftap with args and returns what it printed, failing
// t unless it exits 0 and prints nothing on stderr.
func runExample(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if status := Main(args, strings.NewReader(""), &stdout, &stderr); status != 0 || stderr.Len() > 0 {
		t.Fatalf("bpftap %q: exit status %d, stderr:\n%s", args, status, stderr.String())
	}
	return stdout.String()
}

// threadTable is a table of thread_profile.stp, times in µs.
type threadTable struct {
	tid, start, end, lifetime, total, count int64
	share                                   float64
	calls                                   map[string]callRow
	order                                   []string
}

// callRow is a row of a table.
type callRow struct {
	us, count int64
	share     float64
}

var (
	tableHead = regexp.MustCompile(`(?m)^----- TID (\d+) -----\nlifetime +\+(\d+\.\d{3}) ms to \+(\d+\.\d{3}) ms: (\d+\.\d{3}) ms\n` +
		`system calls +(\d+\.\d{3}) ms in (\d+) calls: (\d+\.\d\d) % of the lifetime\ncall +time +calls +% lifetime\n`)
	tableRow = regexp.MustCompile(`^([a-z0-9_]+) +(\d+\.\d{3}) ms +(\d+) +(\d+\.\d\d)$`)
)

// profileTables reads the tables, failing t on a line of no table.
func profileTables(t *testing.T, text string) []*threadTable {
	t.Helper()
	heads := tableHead.FindAllStringSubmatchIndex(text, -1)
	var threads []*threadTable
	for i, h := range heads {
		m := func(k int) string { return text[h[2*k]:h[2*k+1]] }
		th := &threadTable{tid: number(t, m(1)), start: micros(t, m(2)), end: micros(t, m(3)), lifetime: micros(t, m(4)),
			total: micros(t, m(5)), count: number(t, m(6)), share: percent(t, m(7)), calls: map[string]callRow{}}
		end := len(text)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		for _, line := range strings.Split(strings.TrimSuffix(text[h[1]:end], "\n"), "\n") {
			r := tableRow.FindStringSubmatch(line)
			if r == nil {
				t.Fatalf("TID %d: not a row: %q in\n%s", th.tid, line, text)
			}
			th.calls[r[1]] = callRow{micros(t, r[2]), number(t, r[3]), percent(t, r[4])}
			th.order = append(th.order, r[1])
		}
		threads = append(threads, th)
	}
	if len(heads) == 0 || heads[0][0] != 0 {
		t.Fatalf("not thread_profile.stp's tables:\n%s", text)
	}
	return threads
}

// check: the rows add up to the total (each row's time is cut to the
// µs: up to 1 µs a row less), shares are the time's part of the lifetime
// (to 0.01 %) and none is over 100 %, the lifetime is end - start.
func (th *threadTable) check(t *testing.T) {
	t.Helper()
	var us, count int64
	for _, name := range th.order {
		c := th.calls[name]
		us += c.us
		count += c.count
		th.checkShare(t, name, c.us, c.share)
	}
	th.checkShare(t, "system calls", th.total, th.share)
	if count != th.count || us > th.total || th.total-us > int64(len(th.order)) ||
		th.lifetime-(th.end-th.start) > 1 || th.end-th.start-th.lifetime > 1 {
		t.Errorf("TID %d: rows %d calls in %d µs, head %d in %d µs; lifetime %d µs from %d to %d", th.tid, count, us, th.count, th.total, th.lifetime, th.start, th.end)
	}
}

// checkShare checks that share is us's part of the lifetime: the script
// cuts it to hundredths of a percent from nanoseconds, the table's times
// are cut to microseconds, each cut moving the part by up to 100/lifetime
// percent.
func (th *threadTable) checkShare(t *testing.T, what string, us int64, share float64) {
	t.Helper()
	exact := 100 * float64(us) / float64(th.lifetime)
	slack := 0.01 + 100/float64(th.lifetime) + 1e-9
	if share > 100 || share-exact > slack || exact-share > slack {
		t.Errorf("TID %d: %s: %d µs is %.2f %% of the lifetime (%d µs), not %.4f", th.tid, what, us, share, th.lifetime, exact)
	}
}

// tauTimer is a line of a TAU profile: a timer's name, calls, calls it
// made (Subrs), exclusive and inclusive time in µs, group.
var tauTimer = regexp.MustCompile(`^"([^"]+)" (\d+) (\d+) (\d+) (\d+) 0 GROUP="([^"]+)"$`)

// checkTAU reads a TAU profile file as TAU's readers do (the number of
// timers and the metric, TIME; the column header with its metadata; the
// timers; the aggregates, none; no user events) and compares it with the
// table: .TAU application spans the lifetime and calls every system call,
// each call a timer of its own with the table's time and count.
func (th *threadTable) checkTAU(t *testing.T, prof string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(prof, "\n"), "\n")
	header := fmt.Sprintf("%d templated_functions_MULTI_TIME", len(th.order)+1)
	if len(lines) != len(th.order)+4 || lines[0] != header ||
		!regexp.MustCompile(`^# Name Calls Subrs Excl Incl ProfileCalls # <metadata>.*<attribute><name>TID</name><value>`+fmt.Sprint(th.tid)+`</value></attribute>.*</metadata>$`).MatchString(lines[1]) ||
		lines[len(lines)-1] != "0 aggregates" {
		t.Fatalf("TID %d: not TAU's profile of %d timers:\n%s", th.tid, len(th.order)+1, prof)
	}
	want := []string{fmt.Sprintf(`".TAU application" 1 %d %d %d 0 GROUP="TAU_DEFAULT"`, th.count, th.lifetime-th.total, th.lifetime)}
	for _, name := range th.order {
		c := th.calls[name]
		want = append(want, fmt.Sprintf(`"%s" %d 0 %d %d 0 GROUP="SYSCALL"`, name, c.count, c.us, c.us))
	}
	for i, w := range want {
		if got := lines[2+i]; got != w || !tauTimer.MatchString(got) {
			t.Errorf("TID %d: timer %d is %q, want %q", th.tid, i, got, w)
		}
	}
}

// checkFoldedThreads: "tid T;CALL NS" lines, two threads, each with its
// reads and its 50 ms sleep.
func checkFoldedThreads(t *testing.T, stacks []foldedStack) {
	t.Helper()
	sleeps := map[string]int64{}
	reads := map[string]bool{}
	for _, s := range stacks {
		thread, call, ok := strings.Cut(s.stack, ";")
		if !ok || !regexp.MustCompile(`^tid \d+$`).MatchString(thread) || strings.Contains(call, ";") {
			t.Fatalf("not a thread and a call: %q", s.stack)
		}
		switch call {
		case "clock_nanosleep":
			sleeps[thread] += s.weight
		case "read":
			reads[thread] = true
		}
	}
	if len(sleeps) != 2 || len(reads) != 2 {
		t.Errorf("threads that slept %v, that read %v: want omp's two", sleeps, reads)
	}
	for thread, ns := range sleeps {
		if ns < 50e6 {
			t.Errorf("%s slept %d ns, want 50 ms or more", thread, ns)
		}
	}
}

// micros is "12.345" ms in µs.
func micros(t *testing.T, ms string) int64 {
	whole, frac, _ := strings.Cut(ms, ".")
	return number(t, whole)*1000 + number(t, frac)
}

func number(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func percent(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
