// Package procfs serves the files of a script's procfs probes while it
// runs, where SystemTap's BPF runtime (stapbpf) serves them: FIFOs in
// /var/tmp/systemtap-USER/MODULE, one per file, with the mode the probes'
// umask gives. A reader of a read probe's file gets what the probe left in
// $value; what a writer writes, up to its close, is the $value of the
// file's write probes. A file with both a read probe and write probes is
// a regular file, served through FUSE (fuse.go). With an HTTP address the same files are served over
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
// the write probes. Stop wakes every goroutine blocked in an open by
// opening its FIFO for reading and writing (which never blocks and counts
// as both ends), interrupts every read or write under way (a deadline on
// the open file), waits for them, and removes the FIFOs and the module's
// directory. So a reader that never reads, or a writer that never closes,
// delays the next reader or writer of its file (the file's mode says who
// may), never the end of the run.
//
// # Trust
//
// The directories are bpftap's own, checked and held open (dir.go), and
// the FIFOs are opened through descriptors, never by name (fifo.go): a
// local user can neither make bpftap serve in a directory they prepared
// nor swap a FIFO for a symbolic link to one of root's files.
//
// A run holds an exclusive lock (flock) on the module's directory while it
// serves it: a second run of the same module is refused, as stap refuses
// to load a module twice, and a FIFO left by a run that died (nobody holds
// the lock) is replaced.
package procfs

import (
	"context"
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
// ctx ends the wait for a probe's turn: the probe then does not run and
// the error is ctx's.
type Session interface {
	ReadProcfs(ctx context.Context, f *interp.ProcfsFile) (string, error)
	WriteProcfs(ctx context.Context, f *interp.ProcfsFile, data string) error
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

// Server serves files as FIFOs, and those with read and write probes as
// FUSE mounts (fuse.go).
type Server struct {
	user, dir ownDir // dir is flocked
	files     []*served
	mounts    []*mount // the files with read and write probes (fuse.go)
	session   Session
	stopped   atomic.Bool
	mu        sync.Mutex // guards served.open
	wg        sync.WaitGroup
}

// served is a file and its FIFO.
type served struct {
	*interp.ProcfsFile
	fifo *fifo
	open *os.File // the FIFO open for a reader or writer, nil between them
}

// Serve makes the FIFOs of files in dir, /var/tmp/systemtap-USER/MODULE
// (Dir), and serves them until Stop.
func Serve(dir string, files []*interp.ProcfsFile, s Session) (*Server, error) {
	user, module, err := openDirs(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(module.fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		module.close()
		user.close()
		return nil, fmt.Errorf("module %s is in use by another run (%s is locked)", filepath.Base(dir), dir)
	}
	srv := &Server{user: user, dir: module, session: s}
	if err := srv.makeFiles(files); err != nil {
		srv.remove()
		return nil, err
	}
	for _, f := range srv.files {
		srv.wg.Add(1)
		go srv.serve(f)
	}
	for _, m := range srv.mounts {
		m.detachAll = srv.Detach
		srv.wg.Go(m.serve)
	}
	return srv, nil
}

// Detach detaches the mounts of the files with read and write probes and
// does nothing else: what a process about to die at once (a forced exit,
// a panic) can still do, so that no dead mount (ENOTCONN) stays behind.
// It may be called at any time, from any goroutine, more than once.
func (srv *Server) Detach() {
	for _, m := range srv.mounts {
		unix.Unmount(srv.dir.inside(m.Name), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
}

// makeFiles makes the files: a FIFO for a file with read or write probes, a
// mount for one with both.
func (srv *Server) makeFiles(files []*interp.ProcfsFile) error {
	for _, f := range files {
		if f.Reads && f.Writes {
			m, err := mountFile(srv.dir, f, srv.session)
			if err != nil {
				return err
			}
			srv.mounts = append(srv.mounts, m)
			continue
		}
		fifo, err := makeFIFO(srv.dir, f.Name, f.Mode)
		if err != nil {
			return err
		}
		srv.files = append(srv.files, &served{ProcfsFile: f, fifo: fifo})
	}
	return nil
}

func (srv *Server) serve(f *served) {
	defer srv.wg.Done()
	if !f.Reads {
		for !srv.stopped.Load() {
			srv.serveWrite(f)
		}
		return
	}
	r := watchReaders(f.fifo.path())
	defer r.close()
	for !srv.stopped.Load() {
		srv.serveRead(f, r)
	}
}

// serveRead answers one reader of f.
func (srv *Server) serveRead(f *served, r *readers) {
	r.reset()
	file := srv.openFIFO(f, os.O_WRONLY)
	if file == nil {
		return
	}
	if value, err := srv.session.ReadProcfs(context.Background(), f.ProcfsFile); err == nil {
		io.WriteString(file, value) // an error: the reader left, or Stop
	}
	srv.closeFIFO(f)
	r.waitGone(srv.stopped.Load)
}

// serveWrite takes one write of f.
func (srv *Server) serveWrite(f *served) {
	file := srv.openFIFO(f, os.O_RDONLY)
	if file == nil {
		return
	}
	data, _ := io.ReadAll(io.LimitReader(file, MaxWrite))
	io.Copy(io.Discard, file)
	srv.closeFIFO(f)
	if !srv.stopped.Load() {
		srv.session.WriteProcfs(context.Background(), f.ProcfsFile, string(data))
	}
}

// openFIFO opens f's FIFO for the next reader or writer and notes it for
// Stop; nil once stopped.
func (srv *Server) openFIFO(f *served, flag int) *os.File {
	file, err := f.fifo.open(flag)
	if err != nil {
		srv.pause(err)
		return nil
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.stopped.Load() {
		file.Close()
		return nil
	}
	f.open = file
	return file
}

func (srv *Server) closeFIFO(f *served) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	f.open.Close()
	f.open = nil
}

// pause waits a little after a failed open, so that a failing file does
// not spin.
func (srv *Server) pause(err error) {
	if !srv.stopped.Load() && !errors.Is(err, unix.EINTR) {
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the serving and removes the files.
func (srv *Server) Stop() {
	srv.stopped.Store(true)
	for _, m := range srv.mounts {
		m.unmount(srv.dir)
	}
	done := make(chan struct{})
	go func() { srv.wg.Wait(); close(done) }()
	for {
		srv.interrupt()
		select {
		case <-done:
			srv.remove()
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// interrupt wakes whoever blocks in an open of a FIFO, and ends the reads
// and writes under way.
func (srv *Server) interrupt() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, f := range srv.files {
		f.fifo.wake()
		if f.open != nil {
			f.open.SetDeadline(time.Now())
		}
	}
}

// remove removes the FIFOs, then the module's directory if it is empty,
// and lets the directories go.
func (srv *Server) remove() {
	for _, f := range srv.files {
		f.fifo.remove(srv.dir)
	}
	for _, m := range srv.mounts {
		m.unmount(srv.dir)
		m.close()
		m.place.remove(srv.dir)
	}
	unix.Unlinkat(srv.user.fd, filepath.Base(srv.dir.path), unix.AT_REMOVEDIR)
	srv.dir.close()
	srv.user.close()
}
