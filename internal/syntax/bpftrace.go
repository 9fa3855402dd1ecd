package syntax

import (
	"fmt"
	"regexp"
	"strings"
)

// A bpftrace user's first script often starts with bpftrace's probe syntax
// (`tracepoint:raw_syscalls:sys_enter { ... }`, `BEGIN { ... }`), which
// stap's grammar rejects at its first word. bpftraceHint recognizes such a
// declaration from its source text and says how the same probes are
// written in SystemTap's language; the parse error carries it as a hint.

// bpftraceKinds maps bpftrace's probe types, and their one- and two-letter
// abbreviations, to a function writing the SystemTap probe point for the
// rest of the specification (the fields after the type, split at ':').
var bpftraceKinds = map[string]func(fields []string) string{
	"BEGIN": bareWord("begin"), "END": bareWord("end"),
	"tracepoint": tracepointPoint, "t": tracepointPoint,
	"rawtracepoint": rawTracepointPoint, "rt": rawTracepointPoint,
	"kprobe": kernelFunctionPoint(""), "k": kernelFunctionPoint(""),
	"fentry": kernelFunctionPoint(""), "f": kernelFunctionPoint(""),
	"kretprobe": kernelFunctionPoint(".return"), "kr": kernelFunctionPoint(".return"),
	"fexit": kernelFunctionPoint(".return"), "fr": kernelFunctionPoint(".return"),
	"uprobe": userFunctionPoint(""), "u": userFunctionPoint(""),
	"uretprobe": userFunctionPoint(".return"), "ur": userFunctionPoint(".return"),
	"usdt": markPoint, "U": markPoint,
	"interval": intervalPoint, "i": intervalPoint,
	"profile": profilePoint, "p": profilePoint,
	"software": perfPoint("sw"), "s": perfPoint("sw"),
	"hardware": perfPoint("hw"), "h": perfPoint("hw"),
}

// bpftracePredicate is a bpftrace filter between the probes and the action.
var bpftracePredicate = regexp.MustCompile(`\s/.*/\s*$`)

// bpftraceHint returns how the probes of a declaration written in
// bpftrace's syntax are written in SystemTap's, or "" when the text (the
// script from the declaration's first token on) does not read as
// bpftrace's probes.
func bpftraceHint(text string) string {
	spec, _, found := strings.Cut(text, "{")
	if !found {
		return ""
	}
	spec = bpftracePredicate.ReplaceAllString(spec, "")
	var points []string
	for _, probe := range strings.Split(spec, ",") {
		fields := strings.Split(strings.TrimSpace(probe), ":")
		point := bpftraceKinds[fields[0]]
		if point == nil {
			return ""
		}
		p := point(fields[1:])
		if p == "" {
			return ""
		}
		points = append(points, p)
	}
	return fmt.Sprintf("this is bpftrace's syntax; in SystemTap's it is `probe %s { ... }`", strings.Join(points, ", "))
}

// bareWord: BEGIN and END, which take no fields.
func bareWord(point string) func([]string) string {
	return func(fields []string) string {
		if len(fields) > 0 {
			return ""
		}
		return point
	}
}

// profilePoint: profile:UNIT:N samples every CPU; stap's timer.profile
// does at the kernel's tick rate.
func profilePoint([]string) string { return "timer.profile" }

func tracepointPoint(fields []string) string {
	if len(fields) != 2 {
		return ""
	}
	return fmt.Sprintf("kernel.trace(%q)", fields[0]+":"+fields[1])
}

func rawTracepointPoint(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return fmt.Sprintf("kernel.trace(%q)", fields[len(fields)-1])
}

func kernelFunctionPoint(suffix string) func([]string) string {
	return func(fields []string) string {
		switch len(fields) {
		case 1:
			return fmt.Sprintf("kernel.function(%q)%s", fields[0], suffix)
		case 2:
			return fmt.Sprintf("module(%q).function(%q)%s", fields[0], fields[1], suffix)
		}
		return ""
	}
}

func userFunctionPoint(suffix string) func([]string) string {
	return func(fields []string) string {
		if len(fields) != 2 {
			return ""
		}
		return fmt.Sprintf("process(%q).function(%q)%s", fields[0], fields[1], suffix)
	}
}

// markPoint: usdt:PATH:NAME or usdt:PATH:PROVIDER:NAME.
func markPoint(fields []string) string {
	if len(fields) < 2 || len(fields) > 3 {
		return ""
	}
	return fmt.Sprintf("process(%q).mark(%q)", fields[0], fields[len(fields)-1])
}

// intervalPoint: interval:UNIT:N, UNIT one of s, ms, us, hz.
func intervalPoint(fields []string) string {
	if len(fields) != 2 {
		return ""
	}
	switch fields[0] {
	case "s", "ms", "us", "hz":
		return fmt.Sprintf("timer.%s(%s)", fields[0], fields[1])
	}
	return ""
}

// perfEvents are stap's names of bpftrace's perf events, where they are not
// bpftrace's own with underscores for dashes.
var perfEvents = map[string]string{
	"cpu": "cpu_clock", "cs": "context_switches", "faults": "page_faults",
	"migrations": "cpu_migrations", "minor-faults": "page_faults_min",
	"major-faults": "page_faults_maj", "cycles": "cpu_cycles",
	"branches": "branch_instructions", "frontend-stalls": "stalled_cycles_frontend",
	"backend-stalls": "stalled_cycles_backend", "ref-cycles": "ref_cpu_cycles",
}

// perfPoint: software:EVENT[:PERIOD] and hardware:EVENT[:PERIOD].
func perfPoint(family string) func([]string) string {
	return func(fields []string) string {
		if len(fields) == 0 || len(fields) > 2 {
			return ""
		}
		event, ok := perfEvents[fields[0]]
		if !ok {
			event = strings.ReplaceAll(fields[0], "-", "_")
		}
		point := fmt.Sprintf("perf.%s.%s", family, event)
		if len(fields) == 2 {
			point += fmt.Sprintf(".sample(%s)", fields[1])
		}
		return point
	}
}
