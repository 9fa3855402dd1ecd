package interp

import (
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
// they print goes to the session's output, as stap's do.
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
	// Reads tells whether it has a read probe (and no write probe).
	Reads  bool
	probes []*sema.Probe
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
			file = &ProcfsFile{ProcfsFile: f, Reads: !f.Write, Mode: f.Mode(!f.Write, f.Write)}
			byName[f.Name] = file
			files = append(files, file)
		}
		file.probes = append(file.probes, p)
	}
	return files
}

// ReadProcfs runs the read probe of f and returns its $value; ok is false
// when the session does not run (it has not begun, or it is ending).
func (in *Interp) ReadProcfs(f *ProcfsFile) (value string, ok bool) {
	return in.fireProcfs(f.probes[0], "")
}

// WriteProcfs runs the write probes of f with data as $value (cut to
// MAXSTRINGLEN-1 bytes); ok is false when the session does not run.
func (in *Interp) WriteProcfs(f *ProcfsFile, data string) (ok bool) {
	data = in.clip(data)
	for _, p := range f.probes {
		if _, ok = in.fireProcfs(p, data); !ok {
			return false
		}
	}
	return true
}

// fireProcfs runs procfs probe p with $value set to value and returns
// what it holds after the handler, as fire runs a probe.
func (in *Interp) fireProcfs(p *sema.Probe, value string) (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.state != stateRunning {
		return "", false
	}
	in.procfsValue = value
	in.valueRoom = valueRoom(p, in.maxStringLen())
	in.runHandler(p)
	value, in.procfsValue, in.valueBuf = in.procfsValue, "", nil
	if !probes.Procfs(p.Point.Components).Write {
		in.valueSize = len(value)
	}
	return value, true
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
