package probes

import (
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// procfs probes: files a script serves. `procfs("NAME").read` runs when
// the file is read, and what the handler leaves in $value is what the
// reader gets (at most .maxsize(N) bytes, MAXSTRINGLEN by default);
// `procfs("NAME").write` runs when the file is written, with the bytes
// written in $value. `procfs.read` and `procfs.write` name the file
// "command", as stap's do. `.umask(N)` masks the file's mode: read probes
// make 0444, write probes 0222, both 0666, less N; without a umask the
// file is its owner's alone (0400, 0200, 0600). The driver serves the
// files as SystemTap's BPF runtime does, as FIFOs (see package procfs);
// procfs("__stdin").write is the input tapset's: it runs for each byte
// of bpftap's standard input.

// ProcfsFamily is the family of the procfs probes, procfs("__stdin").write
// (the input probes) among them.
const ProcfsFamily = "procfs"

// StdinFile is the procfs file of the input probes.
const StdinFile = "__stdin"

// procfsDefault is the file of a procfs point without a name.
const procfsDefault = "command"

func procfsFamily() *Family {
	var paths []string
	for _, file := range []string{"procfs", "procfs(string)"} {
		for _, mode := range []string{"", ".umask(number)"} {
			paths = append(paths, file+mode+".read", file+mode+".read.maxsize(number)", file+mode+".write")
		}
	}
	return &Family{Name: ProcfsFamily, Paths: paths, Check: checkProcfs, Expand: nameProcfs}
}

// ProcfsFile is what a procfs probe point says of its file.
type ProcfsFile struct {
	Name  string
	Write bool  // a write probe; else a read probe
	Umask int64 // -1 without .umask
	// MaxSize is the most bytes a read probe's $value holds, 0 without
	// .maxsize (MAXSTRINGLEN).
	MaxSize int64
}

// Procfs returns what the components of a procfs point say of its file.
func Procfs(comps []*syntax.Component) ProcfsFile {
	p := &Point{Components: comps}
	f := ProcfsFile{Name: procfsDefault, Write: hasComponent(p, "write"), Umask: -1}
	if s, ok := p.Arg("procfs").(*syntax.StringLit); ok {
		f.Name = s.Value
	}
	if n, ok := p.Number("umask"); ok {
		f.Umask = n
	}
	f.MaxSize, _ = p.Number("maxsize")
	return f
}

func checkProcfs(p *Point) error {
	f := Procfs(p.Components)
	switch {
	case f.Name == StdinFile && (!f.Write || f.Umask >= 0):
		return errorf("procfs(\"__stdin\") is the input probes' file: only procfs(\"__stdin\").write probes it")
	case f.Name == "" || f.Name == "." || f.Name == ".." || strings.Contains(f.Name, "/"):
		return errorf("invalid procfs file name %q: one file of the module's directory is named", f.Name)
	case f.Umask > 0777 || f.Umask < -1:
		return errorf("umask %#o out of range (0 to 0777)", f.Umask)
	case p.Arg("maxsize") != nil && f.MaxSize <= 0:
		return errorf("maxsize must be positive")
	}
	return nil
}

// nameProcfs gives procfs.read and procfs.write their file, "command".
func nameProcfs(p *Point) ([]*Point, error) {
	if p.Components[0].Arg != nil {
		return []*Point{p}, nil
	}
	named := *p
	first := *p.Components[0]
	first.Arg = &syntax.StringLit{Typed: syntax.Typed{Pos: first.Pos, T: syntax.TypeString}, Value: procfsDefault}
	named.Components = append([]*syntax.Component{&first}, p.Components[1:]...)
	return []*Point{&named}, nil
}

// FileMode is the permission bits of a file whose read probe is read and
// whose first write probe is write (either nil), as stap computes them:
// 0444 for reading, 0222 for writing, less both probes' umasks.
func FileMode(read, write *ProcfsFile) uint32 {
	var mode, umask uint32
	if read != nil {
		mode, umask = mode|0444, umask|read.umask()
	}
	if write != nil {
		mode, umask = mode|0222, umask|write.umask()
	}
	return mode &^ umask
}

// umask is the probe's .umask(N), else stap's default, which leaves the
// owner's bits: 0044 for a read probe, 0022 for a write probe.
func (f ProcfsFile) umask() uint32 {
	switch {
	case f.Umask >= 0:
		return uint32(f.Umask)
	case f.Write:
		return 0o022
	}
	return 0o044
}
