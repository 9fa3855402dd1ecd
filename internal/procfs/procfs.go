// Package procfs serves the files of a script's procfs probes while it
// runs, where SystemTap's BPF runtime (stapbpf) serves them: FIFOs in
// /var/tmp/systemtap-USER/MODULE, one per file, with the mode the probes'
// umask gives. A reader of a read probe's file gets what the probe left in
// $value; what a writer writes, up to its close, is the $value of the
// file's write probes. With an HTTP address the same files are served over
// HTTP too: GET runs a read probe, PUT and POST a write probe.
//
// # FIFOs
//
// Each file has a goroutine. For a read file it opens the FIFO for
// writing, which blocks until a reader opens it, runs the read probe,
// writes the value (nothing if the probe failed: the reader sees an empty
// file), closes, and waits for the reader to close before it
// opens the FIFO again (readers.go): the reader sees the end of the file
// when it reads with no writer left, and a writer back too soon would
// give it a second value. (A new reader meanwhile just waits in its open;
// probing for the old reader with an open that does not block would end
// the new one's read empty.) For a
// write file it opens the FIFO for reading, which blocks until a writer
// opens it, reads to the end (at most MaxWrite bytes are kept), and runs
// the write probes. Stop wakes every goroutine by opening its FIFO for
// reading and writing (which never blocks and counts as both ends), waits
// for them, and removes the FIFOs and the module's directory.
//
// A run holds an exclusive lock (flock) on the module's directory while it
// serves it: a second run of the same module is refused, as stap refuses
// to load a module twice, and a FIFO left by a run that died (nobody holds
// the lock) is replaced.
package procfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bpftap/bpftap/internal/interp"
	"golang.org/x/sys/unix"
)

// Session is the running script whose probes the files run (its errors
// are interp's: ErrNotRunning, ErrProbeFailed).
type Session interface {
	ReadProcfs(f *interp.ProcfsFile) (string, error)
	WriteProcfs(f *interp.ProcfsFile, data string) error
}

// MaxWrite is the most bytes of one write kept for a write probe (stap
// gives it MAXSTRINGLEN-1 of them; the rest is read and dropped).
const MaxWrite = 1 << 16

// readerPause is how long a read file waits after a read before it
// serves the next one when it cannot watch its readers (readers.go).
const readerPause = 20 * time.Millisecond

// moduleName is what a module name (-m) may be, as stap requires.
var moduleName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// CheckModule tells whether name is a valid module name.
func CheckModule(name string) error {
	if !moduleName.MatchString(name) || len(name) > 55 {
		return fmt.Errorf("invalid module name %q: letters, digits and underscores, at most 55 of them", name)
	}
	return nil
}

// Dir is the directory of module's files: /var/tmp/systemtap-USER/MODULE.
func Dir(module string) string {
	name := strconv.Itoa(os.Geteuid())
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return filepath.Join("/var/tmp", "systemtap-"+name, module)
}

// Server serves files as FIFOs.
type Server struct {
	dir     string
	lock    *os.File // the directory, flocked
	files   []*interp.ProcfsFile
	session Session
	stopped atomic.Bool
	wg      sync.WaitGroup
}

// Serve makes the FIFOs of files in dir and serves them until Stop.
func Serve(dir string, files []*interp.ProcfsFile, s Session) (*Server, error) {
	srv := &Server{dir: dir, files: files, session: s}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("module %s is in use by another run (%s is locked)", filepath.Base(dir), dir)
	}
	srv.lock = lock
	for _, f := range files {
		path := srv.path(f)
		if err := makeFIFO(path, f.Mode); err != nil {
			srv.remove()
			return nil, err
		}
	}
	for _, f := range files {
		srv.wg.Add(1)
		go srv.serve(f)
	}
	return srv, nil
}

// makeFIFO makes a FIFO at path with mode, replacing a FIFO a run that
// ended without cleaning up left.
func makeFIFO(path string, mode uint32) error {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeNamedPipe == 0 {
			return fmt.Errorf("cannot serve procfs file %s: something else is there", path)
		}
		os.Remove(path)
	}
	if err := unix.Mkfifo(path, mode); err != nil {
		return fmt.Errorf("cannot make procfs file %s: %v", path, err)
	}
	return os.Chmod(path, os.FileMode(mode)) // not the process's umask
}

func (srv *Server) path(f *interp.ProcfsFile) string { return filepath.Join(srv.dir, f.Name) }

func (srv *Server) serve(f *interp.ProcfsFile) {
	defer srv.wg.Done()
	if !f.Reads {
		for !srv.stopped.Load() {
			srv.serveWrite(f)
		}
		return
	}
	r := watchReaders(srv.path(f))
	defer r.close()
	for !srv.stopped.Load() {
		srv.serveRead(f, r)
	}
}

// serveRead answers one reader of f.
func (srv *Server) serveRead(f *interp.ProcfsFile, r *readers) {
	r.reset()
	fd, err := unix.Open(srv.path(f), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		srv.pause(err)
		return
	}
	if !srv.stopped.Load() {
		if value, err := srv.session.ReadProcfs(f); err == nil {
			writeAll(fd, value)
		}
	}
	unix.Close(fd)
	r.waitGone(srv.stopped.Load)
}

// serveWrite takes one write of f.
func (srv *Server) serveWrite(f *interp.ProcfsFile) {
	file, err := os.OpenFile(srv.path(f), os.O_RDONLY, 0)
	if err != nil {
		srv.pause(err)
		return
	}
	data, _ := io.ReadAll(io.LimitReader(file, MaxWrite))
	io.Copy(io.Discard, file)
	file.Close()
	if !srv.stopped.Load() {
		srv.session.WriteProcfs(f, string(data))
	}
}

// pause waits a little after a failed open (the FIFO removed under us),
// so that a failing file does not spin.
func (srv *Server) pause(err error) {
	if !srv.stopped.Load() && !errors.Is(err, unix.EINTR) {
		time.Sleep(100 * time.Millisecond)
	}
}

func writeAll(fd int, s string) {
	b := []byte(s)
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return // the reader left (EPIPE)
		}
		b = b[max(n, 0):]
	}
}

// Stop ends the serving and removes the files.
func (srv *Server) Stop() {
	srv.stopped.Store(true)
	done := make(chan struct{})
	go func() { srv.wg.Wait(); close(done) }()
	for {
		for _, f := range srv.files { // wake whoever blocks in open
			if fd, err := unix.Open(srv.path(f), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		}
		select {
		case <-done:
			srv.remove()
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// remove removes the FIFOs, then the module's directory if it is empty,
// and lets the directory go.
func (srv *Server) remove() {
	for _, f := range srv.files {
		os.Remove(srv.path(f))
	}
	os.Remove(srv.dir)
	srv.lock.Close()
}
