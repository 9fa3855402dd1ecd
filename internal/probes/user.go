package probes

// The user-side probes that run in bpftap's interpreter: begin, end and error
// (each with an optional sequence number ordering probes of the same kind),
// never, which is resolved and type-checked but never runs, and the procfs
// files (procfs.go).

func userFamilies() []*Family {
	var list []*Family
	for _, name := range []string{"begin", "end", "error"} {
		list = append(list, &Family{Name: name, Paths: []string{name, name + "(number)"}})
	}
	return append(list,
		&Family{Name: "never", Paths: []string{"never"}},
		procfsFamily())
}

// Sequence returns the sequence number of a begin/end/error point (0 if none).
func Sequence(p *Point) int64 {
	n, _ := p.Number(p.Family.Name)
	return n
}
