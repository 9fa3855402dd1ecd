package interp

import (
	"context"
	"errors"
	"unsafe"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// procfs files. A script's procfs probes (probes/procfs.go) serve files
// the driver makes (package procfs): reading one runs its read probe and
// gives what the handler left in $value, writing one runs its write
// probes with the bytes written in $value. They run as every user-side
// handler runs (fire: one at a time, while the session runs), and what
// they print goes to the session's output, as stap's do. A handler that
// a run-time error or abort() ends serves nothing (ErrProbeFailed): the
// $value it had built so far is a file cut short, which a reader would
// take for the whole (a Prometheus scrape would record it as the truth).
//
// $value is the probe's first local (sema/procfs.go). A read probe may
// build a large file with `$value .= ...` (a Prometheus scrape of 10,000
// series does): appending to it does not copy what it holds. The bytes of
// the last string made are kept with spare capacity, and an append to
// exactly that string writes past its end, where no string made before
// can see; any other string starts a new buffer, as large as the last
// $value a read probe made (the next scrape's is about as large).
// `$value .= a . b . ...` appends the operands one by one, without
// making their concatenation first. $value holds at most .maxsize(N)
// bytes (MAXSTRINGLEN-1 without it).

// ProcfsFile is a file the script's procfs probes serve.
type ProcfsFile struct {
	probes.ProcfsFile
	// Mode is the file's permission bits (the umask of its probes applied).
	Mode uint32
	// Reads and Writes tell whether it has a read probe, write probes.
	Reads, Writes bool
	read          *sema.Probe
	writes        []*sema.Probe
	// readPoint and firstWrite are the points of read and writes[0].
	readPoint, firstWrite *probes.ProcfsFile
}

// ProcfsFiles lists the files of the script's procfs probes but the
// input probes' (procfs("__stdin")), in the order of their first probe.
func (in *Interp) ProcfsFiles() []*ProcfsFile {
	var files []*ProcfsFile
	byName := map[string]*ProcfsFile{}
	for _, p := range in.prog.Probes {
		if p.Kernel || p.Family != probes.ProcfsFamily {
			continue
		}
		f := probes.Procfs(p.Point.Components)
		if f.Name == probes.StdinFile {
			continue
		}
		file := byName[f.Name]
		if file == nil {
			file = &ProcfsFile{ProcfsFile: f}
			byName[f.Name] = file
			files = append(files, file)
		}
		file.add(p, f)
	}
	return files
}

// add gives the file procfs probe p, whose point is pf, and sets the
// file's mode from its read probe's point and its first write probe's.
func (f *ProcfsFile) add(p *sema.Probe, pf probes.ProcfsFile) {
	if pf.Write {
		if len(f.writes) == 0 {
			f.firstWrite = &pf
		}
		f.writes = append(f.writes, p)
	} else {
		f.read, f.readPoint = p, &pf
	}
	f.Reads, f.Writes = f.read != nil, len(f.writes) > 0
	f.Mode = probes.FileMode(f.readPoint, f.firstWrite)
}

// The errors of ReadProcfs and WriteProcfs.
var (
	// ErrNotRunning: the session has not begun, or it is ending.
	ErrNotRunning = errors.New("the script is not running")
	// ErrProbeFailed: a run-time error or abort() ended the handler (the
	// error is reported on the script's output as every handler's is);
	// what $value held then is no file's content.
	ErrProbeFailed = errors.New("the probe's handler failed")
)

// ReadProcfs runs the read probe of f and returns its $value. ctx ends
// the wait for the handler's turn (another handler may run for long, or
// wait, in system(), for a command that reads this very file): then the
// probe does not run and the error is ctx's. A handler that began runs
// to its end.
func (in *Interp) ReadProcfs(ctx context.Context, f *ProcfsFile) (string, error) {
	return in.fireProcfs(ctx, f.read, "")
}

// WriteProcfs runs the write probes of f with data as $value (cut to
// MAXSTRINGLEN-1 bytes), up to the first that fails; ctx ends the wait
// for their turn, as ReadProcfs's.
func (in *Interp) WriteProcfs(ctx context.Context, f *ProcfsFile, data string) error {
	data = in.clip(data)
	for _, p := range f.writes {
		if _, err := in.fireProcfs(ctx, p, data); err != nil {
			return err
		}
	}
	return nil
}

// fireProcfs runs procfs probe p with $value set to value and returns
// what it holds after the handler, as fire runs a probe.
func (in *Interp) fireProcfs(ctx context.Context, p *sema.Probe, value string) (string, error) {
	if err := in.lock(ctx); err != nil {
		return "", err
	}
	defer in.mu.Unlock()
	if in.state != stateRunning {
		return "", ErrNotRunning
	}
	in.procfsValue = value
	in.valueRoom = valueRoom(p, in.maxStringLen())
	completed := in.runHandler(p)
	value, in.procfsValue, in.valueBuf = in.procfsValue, "", nil
	if !completed {
		return "", ErrProbeFailed
	}
	if !probes.Procfs(p.Point.Components).Write {
		in.valueSize = len(value)
	}
	return value, nil
}

// lock takes the session's lock (in.mu), or gives up when ctx ends
// first (ctx's error): the lock, should it come later, is let go at once.
func (in *Interp) lock(ctx context.Context) error {
	if in.mu.TryLock() {
		return nil
	}
	got := make(chan struct{})
	go func() {
		in.mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		go func() {
			<-got
			in.mu.Unlock()
		}()
		return ctx.Err()
	}
}

// valueRoom is the most bytes procfs probe p's $value holds.
func valueRoom(p *sema.Probe, maxStringLen int) int {
	if n := probes.Procfs(p.Point.Components).MaxSize; n > 0 {
		return int(n)
	}
	return maxStringLen - 1
}

// isValue tells whether v is the running probe's $value.
func (in *Interp) isValue(v *syntax.Var) bool {
	return in.act.probe != nil && in.act.probe.Value == v
}

// appendValue is `$value .= s` on old, the value $value holds, with s
// given in parts.
func (in *Interp) appendValue(old string, parts []string) string {
	room := in.valueRoom - len(old)
	if room <= 0 {
		return old
	}
	n := 0
	for _, s := range parts {
		n += len(s)
	}
	n = min(n, room)
	buf := in.valueBuf
	if len(buf) == 0 || len(old) != len(buf) || unsafe.StringData(old) != &buf[0] {
		buf = append(make([]byte, 0, max(2*(len(old)+n), in.valueSize)), old...)
	}
	for _, s := range parts {
		buf = append(buf, s[:min(len(s), room)]...)
		room -= min(len(s), room)
	}
	if len(buf) == 0 {
		return old
	}
	in.valueBuf = buf
	return unsafe.String(&buf[0], len(buf))
}
