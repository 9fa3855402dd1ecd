package probes

import "github.com/bpftap/bpftap/internal/syntax"

// The user-side probes that run in bpftap's interpreter: begin, end and error
// (each with an optional sequence number ordering probes of the same kind),
// never, which is resolved and type-checked but never runs, and
// procfs("__stdin").write, which runs for each byte of bpftap's standard
// input (the input tapset's input.char and input.line stand on it; stap
// feeds its module the same way, one byte a write). Other procfs files
// would be files a BPF runtime cannot create: they are refused.

func userFamilies() []*Family {
	var list []*Family
	for _, name := range []string{"begin", "end", "error"} {
		list = append(list, &Family{Name: name, Paths: []string{name, name + "(number)"}})
	}
	return append(list,
		&Family{Name: "never", Paths: []string{"never"}},
		&Family{Name: StdinFamily, Paths: []string{"procfs(string).write"}, Check: checkStdin})
}

// StdinFamily is the family of procfs("__stdin").write.
const StdinFamily = "procfs"

func checkStdin(p *Point) error {
	if path, ok := p.Arg("procfs").(*syntax.StringLit); !ok || path.Value != "__stdin" {
		return errorf("procfs probes are not supported by bpftap but for procfs(\"__stdin\").write, which input.char and input.line use")
	}
	return nil
}

// Sequence returns the sequence number of a begin/end/error point (0 if none).
func Sequence(p *Point) int64 {
	n, _ := p.Number(p.Family.Name)
	return n
}
