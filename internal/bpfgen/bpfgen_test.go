package bpfgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"golang.org/x/sys/unix"
)

// The tests compile the body of a script's `probe begin` as if it were a
// kernel probe, attach it to raw_syscalls:sys_enter filtered (by the target
// map) to a child process, let the child run, and compare the ring's
// records, formatted as the driver will, with the expected output. Scripts
// that must run once guard themselves with a global.
//
// With BPFGEN_GETPPID=N the test binary is the child: it waits for a byte
// on stdin, makes N getppid calls and exits.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("BPFGEN_GETPPID")); err == nil {
		io.ReadFull(os.Stdin, make([]byte, 1))
		for range n {
			unix.Getppid()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type testCase struct {
	name, script, stdout string
}

// readCases reads `=== name`, the script, `--- stdout`, the output.
func readCases(t *testing.T, file string) []testCase {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	for _, chunk := range strings.Split(string(data), "=== ")[1:] {
		name, rest, _ := strings.Cut(chunk, "\n")
		script, out, _ := strings.Cut(rest, "--- stdout\n")
		cases = append(cases, testCase{name, script, out})
	}
	return cases
}

func TestScripts(t *testing.T) {
	requireBPF(t)
	before := openFDs(t)
	defer func() {
		if after := openFDs(t); after != before {
			t.Errorf("%d file descriptors open before the scripts ran, %d after", before, after)
		}
	}()
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		for _, c := range readCases(t, file) {
			t.Run(filepath.Base(file)+"/"+c.name, func(t *testing.T) {
				got := runScript(t, c.script, newChild(t, "sh", "-c", "read x"))
				if got != c.stdout {
					t.Errorf("output:\n%s\nwant:\n%s", got, c.stdout)
				}
			})
		}
	}
}

// TestCount checks a shared and a per-CPU ++ against a known number of
// system calls.
func TestCount(t *testing.T) {
	requireBPF(t)
	for _, perCPU := range []bool{false, true} {
		t.Run(fmt.Sprint("percpu=", perCPU), func(t *testing.T) {
			const calls = 3000
			prog := elaborate(t, `global n, by; probe begin { n++; by[execname()] += 2 } probe end { println(n, by["x"]) }`)
			for _, v := range prog.Globals {
				v.PerCPU = perCPU
			}
			m := New(prog, Config{Target: true})
			child := newChild(t, os.Args[0])
			child.cmd.Env = append(os.Environ(), fmt.Sprintf("BPFGEN_GETPPID=%d", calls))
			ms := attachRun(t, m, prog, child)
			defer ms.Close()
			n := sumGlobal(t, m, ms, "n", uint32(0))
			comm := make([]byte, 16)
			copy(comm, filepath.Base(os.Args[0]))
			by := sumGlobal(t, m, ms, "by", comm)
			if n < calls || by != 2*n {
				t.Errorf("n = %d, by[comm] = %d after %d getppid calls", n, by, calls)
			}
		})
	}
}

// sumGlobal sums a long global's element over its per-CPU values and the
// values pending in its last-key cache (a []byte key) if it has one.
func sumGlobal(t *testing.T, m *Module, ms *Maps, name string, key any) int64 {
	for _, gl := range m.Globals() {
		if gl.Var.Name != name {
			continue
		}
		var sum int64
		vs, err := bpfrt.LookupValues(ms.Globals[gl], key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if gl.Cache != nil {
			cache, err := bpfrt.LookupValues(ms.Caches[gl], uint32(0))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, c := range cache {
				if c[0] != 0 && bytes.Equal(c[CacheKey:CacheKey+len(key.([]byte))], key.([]byte)) {
					vs = append(vs, c[gl.CacheValue():])
				}
			}
		}
		for _, v := range vs {
			sum += int64(binary.NativeEndian.Uint64(v))
		}
		return sum
	}
	t.Fatalf("no global %s", name)
	return 0
}

func requireBPF(t *testing.T) {
	t.Helper()
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
}

func elaborate(t *testing.T, script string) *sema.Program {
	t.Helper()
	f, err := syntax.Parse(syntax.NewSource("<input>", script), syntax.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := sema.Elaborate([]*syntax.File{f}, sema.Options{NoWarnings: true})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// child is a process stopped until release.
type child struct {
	cmd   *exec.Cmd
	start io.WriteCloser
}

func newChild(t *testing.T, name string, args ...string) *child {
	cmd := exec.Command(name, args...)
	start, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	return &child{cmd, start}
}

var sysEnter *kernel.Tracepoint

func tracepoint(t *testing.T) *kernel.Tracepoint {
	if sysEnter != nil {
		return sysEnter
	}
	tps, err := kernel.Tracepoints()
	if err != nil {
		t.Fatal(err)
	}
	m, err := kernel.MatchTracepoints(tps, "raw_syscalls:sys_enter")
	if err != nil || len(m) != 1 {
		t.Fatalf("raw_syscalls:sys_enter: %v %v", m, err)
	}
	sysEnter = m[0]
	return sysEnter
}

// attachRun compiles the begin probe, attaches it for the child, runs the
// child to its end and detaches. The caller closes the maps.
func attachRun(t *testing.T, m *Module, prog *sema.Program, c *child) *Maps {
	t.Helper()
	var probe *sema.Probe
	for _, p := range prog.Probes {
		if p.Family == "begin" {
			probe = p
		}
	}
	p, err := m.Compile(probe, bpfrt.TPBTF)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := m.CreateMaps()
	if err != nil {
		t.Fatal(err)
	}
	loaded := load(t, p, ms, tracepoint(t))
	defer loaded.Close()
	if err := loaded.Attach(); err != nil {
		ms.Close()
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		ms.Close()
		t.Fatal(err)
	}
	if err := ms.ByName[TargetMap].Put(uint32(c.cmd.Process.Pid), uint8(1)); err != nil {
		t.Fatal(err)
	}
	c.start.Write([]byte("\n"))
	c.start.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return ms
}

// load loads p, failing with the verifier's log on a rejection.
func load(t *testing.T, p *Program, ms *Maps, tp *kernel.Tracepoint) *bpfrt.Program {
	t.Helper()
	loaded, err := p.Load(ms, tp, 0)
	if err != nil {
		ms.Close()
		var le *LoadError
		if errors.As(err, &le) {
			t.Fatalf("%v\n%s", err, le.Err.Log)
		}
		t.Fatal(err)
	}
	return loaded
}

// runScript runs the script's begin probe in the kernel for c and returns
// its output as the driver would print it.
func runScript(t *testing.T, script string, c *child) string {
	prog := elaborate(t, script)
	m := New(prog, Config{Target: true})
	ms := attachRun(t, m, prog, c)
	defer ms.Close()
	rd, err := bpfrt.NewRingReader(ms.Ring, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []byte
	var decodeErr error
	done := make(chan error)
	go func() { time.Sleep(20 * time.Millisecond); rd.Stop(); close(done) }()
	err = rd.Run(func(rec []byte) {
		r, err := m.Decode(rec)
		switch {
		case err != nil:
			decodeErr = err
		case r.Kind == RecordPrint:
			out = r.Output.Format.Append(out, r.Args)
		case r.Kind == RecordError:
			out = fmt.Appendf(out, "ERROR: %s near %s\n", r.Error.Text(r.Arg), r.Error.Pos)
		case r.Kind == RecordExit:
			out = append(out, "EXIT\n"...)
		}
	}, nil)
	<-done
	if err != nil || decodeErr != nil {
		t.Fatal(err, decodeErr)
	}
	return string(out)
}

func openFDs(t *testing.T) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
