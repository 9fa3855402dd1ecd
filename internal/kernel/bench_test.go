package kernel

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// The cold-start costs a script pays, each iteration from scratch:
//
//	go test -run '^$' -bench . -benchtime 50x ./internal/kernel

// BenchmarkLoad maps the kernel's BTF and indexes its records.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		k := mustLoad(b)
		unix.Munmap(k.raw)
	}
}

// BenchmarkLoadLookup maps the kernel's BTF, indexes it and looks a name
// up (which reads the string table): what a script's first type costs.
func BenchmarkLoadLookup(b *testing.B) {
	for b.Loop() {
		k := mustLoad(b)
		if len(k.IDsByName("task_struct")) == 0 {
			b.Fatal("no task_struct")
		}
		unix.Munmap(k.raw)
	}
}

// BenchmarkTracepointDiscovery adds listing every tracepoint with its
// named, typed parameters (tracefs read once, outside the loop).
func BenchmarkTracepointDiscovery(b *testing.B) {
	kernelOrSkip(b)
	events, err := ReadTracefs("available_events")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		k := mustLoad(b)
		if _, err := k.Tracepoints(string(events)); err != nil {
			b.Fatal(err)
		}
		unix.Munmap(k.raw)
	}
}

// BenchmarkReadAvailableEvents reads tracefs's list of events (mounting
// tracefs for the call when it is not mounted).
func BenchmarkReadAvailableEvents(b *testing.B) {
	for b.Loop() {
		if _, err := ReadTracefs("available_events"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveComm is the path of one named tracepoint: load, find
// btf_trace_sched_process_exec, resolve $p->comm.
func BenchmarkResolveComm(b *testing.B) {
	kernelOrSkip(b)
	for b.Loop() {
		k := mustLoad(b)
		proto, err := k.TypeByName("btf_trace_sched_process_exec", KindTypedef)
		if err != nil {
			b.Fatal(err)
		}
		params, err := k.protoParams(proto.ID, KindTypedef)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := k.Resolve(params[0].Type, []Step{{Member: "comm"}}); err != nil {
			b.Fatal(err)
		}
		unix.Munmap(k.raw)
	}
}

// BenchmarkCiliumLoadAndLookup is the same lookup through cilium/ebpf's
// btf package, for comparison.
func BenchmarkCiliumLoadAndLookup(b *testing.B) {
	kernelOrSkip(b)
	for b.Loop() {
		spec, err := btf.LoadKernelSpec()
		if err != nil {
			b.Fatal(err)
		}
		var td *btf.Typedef
		if err := spec.TypeByName("btf_trace_sched_process_exec", &td); err != nil {
			b.Fatal(err)
		}
	}
}

func mustLoad(b *testing.B) *BTF {
	kernelOrSkip(b)
	k, err := loadKernel()
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// BenchmarkParseFilterFunctions parses a list shaped like a 6.12 kernel's
// available_filter_functions: 43,000 lines, a tenth of them a module's, a
// hundred names listed twice.
func BenchmarkParseFilterFunctions(b *testing.B) {
	var raw []byte
	for i := range 43000 {
		raw = fmt.Appendf(raw, "some_kernel_function_%d", i%42900)
		if i%10 == 0 {
			raw = append(raw, " [some_module]"...)
		}
		raw = append(raw, '\n')
	}
	for b.Loop() {
		ParseFilterFunctions(raw)
	}
}

// BenchmarkIndexRecords indexes the records of the running kernel's BTF,
// already in memory (what every run that reads the BTF pays after mapping it).
func BenchmarkIndexRecords(b *testing.B) {
	raw, err := os.ReadFile(VMLinuxPath)
	if err != nil {
		b.Skip(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := parse(raw, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIDsByName looks up names in the kernel's BTF afresh (no answer
// kept from the iteration before): a tracepoint's prototype, a struct, a
// function.
func BenchmarkIDsByName(b *testing.B) {
	k := mustLoad(b)
	names := []string{"btf_trace_sys_enter", "task_struct", "vfs_read"}
	for b.Loop() {
		k.named = map[string][]TypeID{}
		for _, name := range names {
			if len(k.IDsByName(name)) == 0 {
				b.Fatalf("no %s", name)
			}
		}
	}
}

// BenchmarkSyscallEntryFormats reads and parses the format of every
// system call's entry event, as pass 2 of syscall.* does (360 of them
// on x86_64 6.18).
func BenchmarkSyscallEntryFormats(b *testing.B) {
	names, err := eventsIn("syscalls")
	if err != nil {
		b.Skip(err)
	}
	var entries []string
	for _, n := range names {
		if strings.HasPrefix(n, "sys_enter_") {
			entries = append(entries, n)
		}
	}
	for b.Loop() {
		for _, n := range entries {
			if _, err := EventFields("syscalls", n); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(entries)), "ns/event")
}
