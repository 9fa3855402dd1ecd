package procfs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/probes"
)

// The tests serve files as root in a directory of their own that stands
// for /var/tmp (sticky, everyone may write in it), and play the attacker
// as the user nobody: their shell commands run with nobody's credentials.

// nobody is the attacker's uid and gid.
const nobody = 65534

// asNobody runs the shell script as nobody and returns its output.
func asNobody(t *testing.T, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// varTmp makes the test's /var/tmp: a sticky directory everyone may write
// in, which nobody can reach.
func varTmp(t *testing.T) string {
	if os.Geteuid() != 0 {
		t.Skip("serving as root and attacking as nobody needs root")
	}
	dir, err := os.MkdirTemp("", "bpftap-vartmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// session serves the test's files: a read gives value, a write is sent
// on writes.
type session struct {
	value  string
	err    error // what a read gives with value
	writes chan string
}

func (s *session) ReadProcfs(context.Context, *interp.ProcfsFile) (string, error) {
	return s.value, s.err
}

func (s *session) WriteProcfs(_ context.Context, _ *interp.ProcfsFile, data string) error {
	select {
	case s.writes <- data:
	default: // nobody listens: dropped
	}
	return nil
}

func newSession(value string) *session { return &session{value: value, writes: make(chan string, 64)} }

// Files: state is read by everyone (0444), set written by everyone (0222).
var (
	stateFile = &interp.ProcfsFile{ProcfsFile: probes.ProcfsFile{Name: "state"}, Mode: 0o444, Reads: true}
	setFile   = &interp.ProcfsFile{ProcfsFile: probes.ProcfsFile{Name: "set", Write: true}, Mode: 0o222, Writes: true}
	files     = []*interp.ProcfsFile{stateFile, setFile}
)

// stopWithin stops srv and fails the test if that takes longer than d.
func stopWithin(t *testing.T, srv *Server, d time.Duration) {
	t.Helper()
	stopped := make(chan struct{})
	go func() { srv.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(d):
		t.Errorf("Stop has not returned after %v", d)
	}
}

// canary makes a file of root's alone with text in it.
func canary(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantContent(t *testing.T, path, want string) {
	t.Helper()
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
}

// TestPreparedDirectory plays issue 34's attack: nobody makes
// systemtap-root/MOD, writable by all, before root serves MOD's files,
// then swaps a FIFO for a symbolic link to a file of root's. For the read
// file, root's server would write the probe's value into that file; for
// the write file, it would read root's secret into the write probe. The
// server must refuse the directory, and the files stay as they were.
func TestPreparedDirectory(t *testing.T) {
	for _, f := range files {
		t.Run(f.Name, func(t *testing.T) {
			base := varTmp(t)
			dir := filepath.Join(base, "systemtap-root", "MOD")
			if out, err := asNobody(t, "mkdir -p -m 777 "+dir); err != nil {
				t.Fatalf("nobody: %v: %s", err, out)
			}
			target := canary(t, "root's secret\n")
			s := newSession("INJECTED\n")
			srv, err := Serve(dir, files, s)
			var de *DirError
			if errors.As(err, &de) && strings.Contains(err.Error(), "it belongs to uid 65534") {
				wantContent(t, target, "root's secret\n")
				return
			}
			if err != nil {
				t.Fatalf("Serve: %v, want a DirError for the user's directory nobody made", err)
			}
			t.Errorf("Serve accepted %s, which nobody made", dir)
			defer stopWithin(t, srv, 2*time.Second)
			swap(t, dir, f, target)
			time.Sleep(500 * time.Millisecond)
			wantContent(t, target, "root's secret\n")
			noSecret(t, s)
		})
	}
}

// swap is the attacker's move on file f in dir: use the FIFO once, rename
// it, put a link to target in its place, use the renamed FIFO again (its
// server is waiting there), so that the server opens the name next.
func swap(t *testing.T, dir string, f *interp.ProcfsFile, target string) {
	use := "cat %s >/dev/null"
	if f.Writes {
		use = "echo x > %s"
	}
	fifo := filepath.Join(dir, f.Name)
	old := fifo + ".old"
	script := strings.Join([]string{
		strings.ReplaceAll(use, "%s", fifo),
		"mv " + fifo + " " + old,
		"ln -s " + target + " " + fifo,
		strings.ReplaceAll(use, "%s", old),
	}, " && ")
	if out, err := asNobody(t, script); err != nil {
		t.Logf("nobody: %v: %s", err, out)
	}
}

// TestForeignDirectory checks each way the user's or the module's
// directory may be someone else's: made by nobody, a symbolic link to a
// directory of root's, writable by others, or the module's directory
// nobody's in root's own. Serve refuses each in one line that says what
// is wrong and makes nothing.
func TestForeignDirectory(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, user, module, elsewhere string)
		want    string
	}{
		{"user directory made by nobody", func(t *testing.T, user, _, _ string) {
			if out, err := asNobody(t, "mkdir -m 755 "+user); err != nil {
				t.Fatalf("nobody: %v: %s", err, out)
			}
		}, "systemtap-root: it belongs to uid 65534, not to uid 0, who runs bpftap: remove it"},
		{"user directory a link", func(t *testing.T, user, _, elsewhere string) {
			if out, err := asNobody(t, "ln -s "+elsewhere+" "+user); err != nil {
				t.Fatalf("nobody: %v: %s", err, out)
			}
		}, "systemtap-root: it is not a directory (a symbolic link or another file is there): remove it"},
		{"user directory writable by others", func(t *testing.T, user, _, _ string) {
			mkdir(t, user, 0o777)
		}, "systemtap-root: others may write in it (mode 0777): remove it"},
		{"module directory nobody's", func(t *testing.T, user, module, _ string) {
			mkdir(t, user, 0o755)
			mkdir(t, module, 0o755)
			if err := os.Chown(module, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, "systemtap-root/MOD: it belongs to uid 65534, not to uid 0, who runs bpftap: remove it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := varTmp(t)
			elsewhere := t.TempDir() // root's: nobody cannot even look in it
			user := filepath.Join(base, "systemtap-root")
			module := filepath.Join(user, "MOD")
			c.prepare(t, user, module, elsewhere)
			srv, err := Serve(module, files, newSession("x"))
			if err == nil {
				srv.Stop()
				t.Fatalf("Serve accepted the directory, want %q", c.want)
			}
			var de *DirError
			if !errors.As(err, &de) || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Serve: %v, want a DirError ending in %q", err, c.want)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
				t.Errorf("Serve made %s in the directory the link leads to", entries[0].Name())
			}
		})
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestOwnDirectories serves in a fresh /var/tmp: the directories bpftap
// makes are root's, mode 0755 whatever the umask, and nobody may read the
// read file but neither rename it nor put a link in the directory. Stop
// removes the module's directory and the FIFOs.
func TestOwnDirectories(t *testing.T) {
	base := varTmp(t)
	dir := filepath.Join(base, "systemtap-root", "MOD")
	old := syscall.Umask(0o077)
	srv, err := Serve(dir, files, newSession("value\n"))
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if st, err := os.Lstat(d); err != nil || st.Mode() != os.ModeDir|0o755 || st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: %v %v, want root's, drwxr-xr-x", d, st.Mode(), err)
		}
	}
	target := canary(t, "root's secret\n")
	out, err := asNobody(t, "cat "+dir+"/state")
	if err != nil || out != "value\n" {
		t.Errorf("nobody reads state: %q, %v", out, err)
	}
	for _, move := range []string{"mv " + dir + "/state " + dir + "/old", "ln -s " + target + " " + dir + "/link"} {
		if out, err := asNobody(t, move); err == nil {
			t.Errorf("nobody could %s: %s", move, out)
		}
	}
	stopWithin(t, srv, 2*time.Second)
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Stop: %v", dir, err)
	}
}

// TestServingFollowsTheFIFO swaps the FIFOs for links to root's files as
// root, as if the directory were not bpftap's own: the server goes on
// serving the FIFOs it made (now under their new names), never what the
// names lead to, and Stop still ends it.
func TestServingFollowsTheFIFO(t *testing.T) {
	base := varTmp(t)
	dir := filepath.Join(base, "systemtap-root", "MOD")
	s := newSession("INJECTED\n")
	srv, err := Serve(dir, files, s)
	if err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, srv, 2*time.Second)
	readTarget := canary(t, "root's file\n")
	writeTarget := canary(t, "root's secret\n")
	rootSwap(t, dir, "state", readTarget, func(fifo string) { fifoIO(t, fifo, "") })
	rootSwap(t, dir, "set", writeTarget, func(fifo string) { fifoIO(t, fifo, "x\n") })
	time.Sleep(500 * time.Millisecond)
	wantContent(t, readTarget, "root's file\n")
	if got := fifoIO(t, dir+"/state.old", ""); got != "INJECTED\n" {
		t.Errorf("the renamed FIFO gives %q, want its value", got)
	}
	noSecret(t, s)
}

// noSecret fails the test if s's write probe got root's secret.
func noSecret(t *testing.T, s *session) {
	t.Helper()
	for len(s.writes) > 0 {
		if data := <-s.writes; strings.Contains(data, "secret") {
			t.Errorf("the write probe got %q", data)
		}
	}
}

// rootSwap renames the FIFO name in dir, puts a link to target in its
// place, and uses the renamed FIFO before and after with use.
func rootSwap(t *testing.T, dir, name, target string, use func(string)) {
	fifo := filepath.Join(dir, name)
	use(fifo)
	if err := os.Rename(fifo, fifo+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, fifo); err != nil {
		t.Fatal(err)
	}
	use(fifo + ".old")
}

// fifoIO reads the FIFO at path, or writes data to it, and fails the test
// if no server answers in 2 s.
func fifoIO(t *testing.T, path, data string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		if data != "" {
			os.WriteFile(path, []byte(data), 0)
			done <- data
			return
		}
		got, _ := os.ReadFile(path)
		done <- string(got)
	}()
	select {
	case got := <-done:
		return got
	case <-time.After(2 * time.Second):
		t.Errorf("no server answered at %s in 2 s", path)
		return ""
	}
}

// TestStopInterrupts holds both files as a local user could: the read
// file open without reading a value larger than a pipe holds, the write
// file open without closing it. Stop still ends the serving at once.
func TestStopInterrupts(t *testing.T) {
	base := varTmp(t)
	dir := filepath.Join(base, "systemtap-root", "MOD")
	srv, err := Serve(dir, files, newSession(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		flag int
	}{{"state", os.O_RDONLY}, {"set", os.O_WRONLY}} {
		file, err := os.OpenFile(filepath.Join(dir, f.name), f.flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if f.flag == os.O_WRONLY {
			file.WriteString("part of a write")
		}
	}
	time.Sleep(200 * time.Millisecond) // the server writes into the full pipe, reads the open one
	stopWithin(t, srv, 2*time.Second)
}

// bothFile has a read probe and a write probe; everyone may read it, only
// root write it (0644).
var bothFile = &interp.ProcfsFile{ProcfsFile: probes.ProcfsFile{Name: "both"}, Mode: 0o644, Reads: true, Writes: true}

// The tests open bothFile from other processes only (asRoot, asNobody):
// Go adds a file it opens to its poller, and epoll asks a FUSE file's
// server (FUSE_POLL) from within the runtime, where a test's own server
// may not get to answer.

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

// asRoot runs the shell script as root and returns its output.
func asRoot(script string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	return string(out), err
}

// TestReadWriteFile reads and writes a file with both probes: a read
// gives the read probe's value, a write reaches the write probe; it is a
// regular file of root's with the probes' mode, which nobody reads but
// neither writes, nor changes, nor renames; root cannot rename it or
// change its mode either. Stop unmounts it and removes the placeholder.
func TestReadWriteFile(t *testing.T) {
	s := newSession("value\n")
	srv, path := serveBoth(t, s)
	defer stopWithin(t, srv, 2*time.Second)
	if out, err := asRoot("cat " + path + " && printf 'root wrote' > " + path); err != nil || out != "value\n" {
		t.Errorf("root reads %q, %v", out, err)
	}
	select {
	case got := <-s.writes:
		if got != "root wrote" {
			t.Errorf("the write probe got %q", got)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("the write probe did not run")
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
}

// TestReadWriteFileStop: Stop unmounts the file and removes it and the
// module's directory.
func TestReadWriteFileStop(t *testing.T) {
	srv, path := serveBoth(t, newSession("value\n"))
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
// reading (one byte read of a large value) and for writing: Stop still
// ends the serving at once, and the held opens fail from then on.
func TestReadWriteFileHeld(t *testing.T) {
	srv, path := serveBoth(t, newSession(strings.Repeat("x", 1<<20)))
	holder := exec.Command("/bin/sh", "-c", "exec 3<"+path+" 4>"+path+"; head -c 1 <&3; echo; read go; head -c 1 <&3 2>&1; echo x 2>&1 >&4")
	stdin, _ := holder.StdinPipe()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	holder.Stdout, holder.Stderr = out, out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	for deadline := time.Now().Add(2 * time.Second); !strings.Contains(output(), "x\n") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stopWithin(t, srv, 2*time.Second)
	stdin.Write([]byte("go\n"))
	holder.Wait()
	if n := strings.Count(output(), "Transport endpoint is not connected"); n != 2 {
		t.Errorf("the holder's read and write after Stop: %q, want both to fail", output())
	}
}

// TestReadWriteFileFailedRead: a read probe that fails serves nothing, as
// a FIFO's does: the reader gets an empty file, not the $value cut short.
func TestReadWriteFileFailedRead(t *testing.T) {
	s := newSession("partial")
	s.err = interp.ErrProbeFailed
	srv, path := serveBoth(t, s)
	defer stopWithin(t, srv, 2*time.Second)
	if out, err := asRoot("wc -c < " + path); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("a read of a failing probe's file: %q bytes, %v; want an empty file", out, err)
	}
}

// TestFsopenMissing: a failed fsopen says what is missing, per errno.
func TestFsopenMissing(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENODEV: "CONFIG_FUSE_FS", syscall.ENOSYS: "Linux 5.2", syscall.EPERM: "CAP_SYS_ADMIN", syscall.EIO: "unexpected",
	} {
		if got := fsopenMissing(errno); !strings.Contains(got, want) {
			t.Errorf("%v: %q, want it to say %q", errno, got, want)
		}
	}
}
