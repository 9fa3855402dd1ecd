package kernelside

import (
	"os/exec"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// perCall records are printed for every system call of the target: each
// run of the probe counts itself in n, so the records sent are exactly
// perCall·n, whatever the number of calls the workload makes; each
// prints a number greater than every number printed before it.
const perCall = 100

const ringScript = `global n
probe kernel.trace("raw_syscalls:sys_enter") {
  if (pid() != target()) next
  n++
  for (i = 0; i < 100; i++) printf("%d\n", n * 100 + i)
}`

// workload is dd copying 5000 bytes one at a time (about 10,000 system
// calls), exec'd in place by a shell that first waits for a line.
const workload = "read x; exec dd if=/dev/zero of=/dev/null bs=1 count=5000 status=none"

// TestRingCarriesEveryRecord carries about a million records (100 per
// system call, as fast as the kernel makes them) and checks that every one
// arrives, in order, or is counted lost. (On a quiet machine none is lost;
// on a busy one the reader may not keep up, and the count is what the run
// reports: bench/ measures the rate.)
func TestRingCarriesEveryRecord(t *testing.T) {
	var sink counter
	n, lost := runRing(t, Config{}, &sink)
	if sink.records+lost != perCall*n || sink.records == 0 || sink.disorder != 0 || sink.other != 0 {
		t.Errorf("received %d records (%d out of order, %d unexpected), lost %d; sent %d",
			sink.records, sink.disorder, sink.other, lost, perCall*n)
	}
	t.Logf("%d records received, %d lost", sink.records, lost)
}

// TestRingCountsDrops fills a one-page ring that nobody reads and checks
// that every record that did not fit is counted.
func TestRingCountsDrops(t *testing.T) {
	n, lost := runRing(t, Config{RingSize: 4096}, nil)
	// records of 8-byte ring header + 16-byte record header + a long; the
	// first run's 100 and its end (bpfgen's together.go), the second's
	// first 27 (its end, no output, is dropped uncounted)
	const fit = 4096/32 - 1
	if lost != perCall*n-fit {
		t.Errorf("lost %d, want %d (%d records sent)", lost, perCall*n-fit, perCall*n)
	}
}

// runRing runs ringScript for the workload and returns the runs of the
// probe and the records lost; with a nil sink the ring is never read.
func runRing(t *testing.T, cfg Config, sink Sink) (n, lost int64) {
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
	prog := elaborate(t, ringScript)
	child := exec.Command("sh", "-c", workload)
	release, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	cfg.TargetPID = child.Process.Pid
	s, err := Compile(prog, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if sink != nil {
		if err := s.Start(sink); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Attach(); err != nil {
		t.Fatal(err)
	}
	release.Write([]byte("\n"))
	release.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	lost64, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	n = s.Storage(interp.Global{Var: prog.Globals[0]}).Scalar.Load().Int
	if n < 5000 {
		t.Fatalf("the probe ran %d times for dd's 10,000 system calls", n)
	}
	return n, int64(lost64)
}

func elaborate(t *testing.T, script string) *sema.Program {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true, KernelProbes: true,
		Registry: probes.BuiltinFor(probes.RunningKernel{CanAttach: bpfrt.CanAttach})})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// counter is a Sink that counts records and checks that the numbers the
// probe prints come in order.
type counter struct {
	records, disorder, other int64
	last                     int64
}

func (c *counter) KernelPrint(call *syntax.PrintCall, args []format.Arg) {
	if len(args) != 1 {
		c.other++
		return
	}
	if args[0].Int <= c.last {
		c.disorder++
	}
	c.last = args[0].Int
	c.records++
}

func (c *counter) KernelCall(*syntax.Call, []format.Arg) { c.other++ }
func (c *counter) KernelError(msg string, at syntax.Pos) { c.other++ }
func (c *counter) KernelExit()                           { c.other++ }
func (c *counter) Flush()                                {}
