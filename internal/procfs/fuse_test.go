package procfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/probes"
)

// bothFile has a read probe and a write probe; everyone may read it, only
// root write it (0644).
var bothFile = &interp.ProcfsFile{ProcfsFile: probes.ProcfsFile{Name: "both"}, Mode: 0o644, Reads: true, Writes: true}

// serveBoth serves bothFile in a fresh /var/tmp.
func serveBoth(t *testing.T, s *session) (*Server, string) {
	t.Helper()
	dir := filepath.Join(varTmp(t), "systemtap-root", "MOD")
	srv, err := Serve(dir, []*interp.ProcfsFile{bothFile}, s)
	if err != nil {
		t.Fatal(err)
	}
	return srv, filepath.Join(dir, bothFile.Name)
}

// TestReadWriteFile reads and writes a file with both probes: a read
// gives the read probe's value, a write reaches the write probe; it is a
// regular file of root's with the probes' mode, which nobody reads but
// neither writes, nor changes, nor renames; root cannot rename it or
// change its mode either. Stop unmounts it and removes the placeholder.
func TestReadWriteFile(t *testing.T) {
	s := newSession("value\n")
	srv, path := serveBoth(t, s)
	if got, err := os.ReadFile(path); err != nil || string(got) != "value\n" {
		t.Errorf("root reads %q, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("root wrote\n"), 0); err != nil {
		t.Errorf("root writes: %v", err)
	}
	if got := <-s.writes; got != "root wrote\n" {
		t.Errorf("the write probe got %q", got)
	}
	if st, err := os.Lstat(path); err != nil || st.Mode() != 0o644 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("%s: %v %v, want root's -rw-r--r--", path, st.Mode(), err)
	}
	if out, err := asNobody(t, "cat "+path); err != nil || out != "value\n" {
		t.Errorf("nobody reads: %q, %v", out, err)
	}
	for _, cmd := range []string{"echo x > ", "chmod 666 ", "mv -f /dev/null "} {
		if out, err := asNobody(t, cmd+path); err == nil {
			t.Errorf("nobody could %s%s: %s", cmd, path, out)
		}
	}
	if err := os.Chmod(path, 0o666); err == nil {
		t.Errorf("root changed the mode of %s", path)
	}
	if err := os.Rename(path, path+".old"); err == nil {
		t.Errorf("root renamed %s", path)
	}
	noWrite(t, s)
	stopWithin(t, srv, 2*time.Second)
	if _, err := os.Lstat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Stop: %v", filepath.Dir(path), err)
	}
}

// noWrite fails the test if s's write probe ran.
func noWrite(t *testing.T, s *session) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	if len(s.writes) > 0 {
		t.Errorf("the write probe ran with %q", <-s.writes)
	}
}

// TestReadWriteFileHeld holds the file open as a local user could, for
// reading and for writing: Stop still ends the serving at once, and the
// held opens fail from then on.
func TestReadWriteFileHeld(t *testing.T) {
	srv, path := serveBoth(t, newSession(strings.Repeat("x", 1<<20)))
	read, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	write, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer write.Close()
	read.Read(make([]byte, 10))
	stopWithin(t, srv, 2*time.Second)
	if _, err := read.Read(make([]byte, 10)); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("a read after Stop: %v, want ENOTCONN", err)
	}
	if _, err := write.WriteString("late"); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("a write after Stop: %v, want ENOTCONN", err)
	}
}
