package tapset

// System call names by number, the facts behind syscall_name() and the
// syscall_any probes. The table of each architecture is generated from the
// kernel's uapi headers (syscalls_x86_64.go); architectures without a table
// name no system call.

// SyscallName returns the name of system call nr on arch (stap's names:
// "x86_64", "arm64", ...), or "" when nr is unknown, as stap's syscall_name
// returns for a number missing from its table.
func SyscallName(arch string, nr int64) string {
	return syscallTables[arch][nr]
}

// SyscallNames returns arch's table as a slice indexed by number, "" in the
// gaps, for a BPF array map; nil when bpftap has no table for arch.
func SyscallNames(arch string) []string {
	table := syscallTables[arch]
	if table == nil {
		return nil
	}
	var top int64
	for nr := range table {
		top = max(top, nr)
	}
	names := make([]string, top+1)
	for nr, name := range table {
		names[nr] = name
	}
	return names
}

var syscallTables = map[string]map[int64]string{
	"x86_64": syscallsX8664,
}
