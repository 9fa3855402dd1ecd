package kernelside

import (
	"fmt"
	"testing"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/sema"
	"golang.org/x/sys/unix"
)

// pauseScript counts this process's system calls; a getpgid() calls
// exit().
var pauseScript = fmt.Sprintf(`global n
probe kernel.trace("raw_syscalls:sys_enter") {
  if (pid() != target()) next
  if ($id == %d) exit()
  n++
}`, unix.SYS_GETPGID)

// loadedForThisProcess compiles script with this process as its target
// and loads it; the session is closed when the test ends.
func loadedForThisProcess(t *testing.T, script string) (*sema.Program, *Session) {
	t.Helper()
	if err := bpfrt.CheckPrivileges(); err != nil {
		t.Fatal(err)
	}
	prog := elaborate(t, script)
	s, err := Compile(prog, Config{TargetPID: unix.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return prog, s
}

// TestPause: paused programs count nothing, resumed they count again;
// after exit() neither pausing nor resuming runs them again.
func TestPause(t *testing.T) {
	prog, s := loadedForThisProcess(t, pauseScript)
	if err := s.Attach(); err != nil {
		t.Fatal(err)
	}
	n := s.Storage(interp.Global{Var: prog.Globals[0]}).Scalar
	count := func() int64 { s.HandlerStart(); return n.Load().Int }
	calls := func() {
		for range 1000 {
			unix.Getppid()
		}
	}
	steps := []struct {
		what    string
		pause   bool
		counted bool
	}{
		{"paused", true, false},
		{"resumed", false, true},
		{"paused after exit()", true, false},
		{"resumed after exit()", false, false},
	}
	for i, st := range steps {
		if i == 2 {
			unix.Getpgid(0)
		}
		if err := s.Pause(st.pause); err != nil {
			t.Fatal(err)
		}
		before := count()
		calls()
		after := count()
		if counted := after >= before+1000; counted != st.counted || !counted && after != before {
			t.Errorf("%s: %d system calls counted, want %v", st.what, after-before, map[bool]string{true: "1000 or more", false: "none"}[st.counted])
		}
	}
}
