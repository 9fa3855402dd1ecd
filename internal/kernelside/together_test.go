package kernelside

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
)

// togetherScript prints a line in two pieces for each getppid() of this
// process, the thread and the clock at the start, the thread and the
// clock at the end, with a loop between them that makes each run long
// enough for another CPU's run to print in between; a getpgid() calls
// exit() after its print, which must still be handed on, before the exit.
var togetherScript = fmt.Sprintf(`global spin
probe kernel.trace("raw_syscalls:sys_enter") {
  if (pid() != target()) next
  if ($id == %d) { printf("last\n"); exit() }
  if ($id != %d) next
  printf("%%d %%d ", tid(), local_clock_ns())
  for (i = 0; i < 200; i++) spin += i
  printf("%%d %%d\n", tid(), local_clock_ns())
}`, unix.SYS_GETPGID, unix.SYS_GETPPID)

// TestRunsKeptTogether: two threads on two CPUs print lines in two
// pieces at once, until 100 runs of one ran while one of the other did
// (a busy machine may run the two threads by turns for a while); each
// line reaches the sink whole (before, up to a third of such lines had
// the other thread's piece in them), and the print before exit() comes
// before it.
func TestRunsKeptTogether(t *testing.T) {
	_, s := loadedForThisProcess(t, togetherScript)
	sink := pieces{runs: map[int64][][2]int64{}}
	if err := s.Start(&sink); err != nil {
		t.Fatal(err)
	}
	if err := s.Attach(); err != nil {
		t.Fatal(err)
	}
	const round = 5000
	calls := 0
	for deadline := time.Now().Add(20 * time.Second); sink.overlaps() < 100 && time.Now().Before(deadline); calls += round {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for range round {
					unix.Getppid()
				}
			})
		}
		wg.Wait()
		time.Sleep(60 * time.Millisecond) // the reader polls every 50 ms
	}
	unix.Getpgid(0)
	lost, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// a lost piece breaks one line
	if sink.lines+int(lost) < 2*calls || sink.broken > int(lost) || sink.order != "last exit" {
		t.Errorf("%d lines, %d broken (first: %s), %d records lost, then %q; want %d whole lines, then \"last exit\"",
			sink.lines, sink.broken, sink.firstBroken, lost, sink.order, 2*calls)
	}
	if n := sink.overlaps(); n == 0 {
		t.Errorf("of %d runs, none ran while another did: nothing was tested", 2*calls)
	}
}

// pieces is a Sink that checks that the two prints of each line come
// one after the other, from the same thread, and keeps each thread's runs.
type pieces struct {
	mu            sync.Mutex
	open          []int64 // the first piece's thread and clock, waiting for the second
	runs          map[int64][][2]int64
	lines, broken int
	firstBroken   string
	order         string // what came after the lines
}

func (p *pieces) KernelPrint(call *syntax.PrintCall, args []format.Arg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(args) == 0 {
		p.order += "last"
		return
	}
	tid, clock := args[0].Int, args[1].Int
	switch {
	case call.Format.Value == "%d %d " && p.open == nil:
		p.open = []int64{tid, clock}
	case call.Format.Value == "%d %d\n" && p.open != nil && p.open[0] == tid:
		p.lines++
		p.runs[tid] = append(p.runs[tid], [2]int64{p.open[1], clock})
		p.open = nil
	default:
		p.broken++
		if p.firstBroken == "" {
			p.firstBroken = fmt.Sprintf("%q after %v", call.Format.Value, p.open)
		}
		p.open = nil
	}
}

// overlaps counts the runs of a thread that ran while a run of another
// did.
func (p *pieces) overlaps() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all [][3]int64 // start, end, thread
	for tid, runs := range p.runs {
		for _, r := range runs {
			all = append(all, [3]int64{r[0], r[1], tid})
		}
	}
	slices.SortFunc(all, func(a, b [3]int64) int { return cmp.Compare(a[0], b[0]) })
	n := 0
	for i := 1; i < len(all); i++ {
		if all[i][2] != all[i-1][2] && all[i][0] < all[i-1][1] {
			n++
		}
	}
	return n
}

func (p *pieces) KernelCall(*syntax.Call, []format.Arg) {}
func (p *pieces) KernelError(msg string, at syntax.Pos) { p.broken++ }
func (p *pieces) KernelExit()                           { p.order += " exit" }
func (p *pieces) Flush()                                {}
