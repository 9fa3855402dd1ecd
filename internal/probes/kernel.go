package probes

// Kernel and user-space instrumentation families that later issues implement as
// BPF programs. They are declared now so that points resolve (and typos get
// "similar" suggestions); the elaborator refuses them while Unsupported is set.
// To implement one, give it its Check and clear Unsupported.

func kernelFamilies() []*Family {
	k := func(name string, paths ...string) *Family {
		return &Family{Name: name, Paths: paths, Kernel: true, Unsupported: true}
	}
	return []*Family{
		k("kernel.trace", "kernel.trace(string)"),
		k("syscall_any", "syscall_any", "syscall_any.return"),
		k("kernel.function", "kernel.function(string)", "kernel.function(string).return",
			"kernel.function(string).call", "kernel.function(string).call.return",
			"module(string).function(string)", "module(string).function(string).return"),
		k("process.function", "process(string).function(string)",
			"process(string).function(string).return", "process(string).function(string).call",
			"process.function(string)", "process.function(string).return"),
		k("process.mark", "process(string).mark(string)", "process.mark(string)"),
		k("process.begin", "process(string).begin", "process(number).begin", "process.begin"),
		k("process.end", "process(string).end", "process(number).end", "process.end"),
		k("perf", perfPaths()...),
		k("timer.profile", "timer.profile", "timer.profile.tick"),
	}
}

// perfPaths lists the perf event points: software and hardware events by name
// and raw events by type and config, each optionally sampled every N events.
func perfPaths() []string {
	events := []string{"perf.type(number).config(number)"}
	for _, sw := range []string{"cpu_clock", "task_clock", "page_faults", "context_switches",
		"cpu_migrations", "page_faults_min", "page_faults_maj", "alignment_faults", "emulation_faults"} {
		events = append(events, "perf.sw."+sw)
	}
	for _, hw := range []string{"cpu_cycles", "instructions", "cache_references", "cache_misses",
		"branch_instructions", "branch_misses", "bus_cycles"} {
		events = append(events, "perf.hw."+hw)
	}
	var paths []string
	for _, e := range events {
		paths = append(paths, e, e+".sample(number)")
	}
	return paths
}
