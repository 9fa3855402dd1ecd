package interp

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/output"
)

// The kernel's logs: ftrace(msg) adds a line to the trace buffer (tracefs's
// trace_marker, which `cat trace` shows with the writer's pid and time),
// printk(level, msg) to the kernel's log (/dev/kmsg, at log level level,
// the default level for one outside 0..7, which dmesg shows). A kernel probe's call is made when its record
// arrives (tapset.Deferred). Each line is one write (one record of the
// file). A line that cannot be written is a warning, never silently lost
// (stap's ftrace drops it).
var loggingBuiltins = map[string]builtinFunc{
	"ftrace": func(cc *callContext, args []Value) Value {
		cc.logged(kernel.WriteTracefs("trace_marker", []byte(args[0].Str+"\n")))
		return Value{}
	},
	"printk": func(cc *callContext, args []Value) Value {
		level := ""
		if l := args[0].Int; l >= 0 && l <= 7 {
			level = fmt.Sprintf("<%d>", l)
		}
		cc.logged(kernel.WriteFile("/dev/kmsg", []byte(level+args[1].Str+"\n")))
		return Value{}
	},
}

// logged warns of err, the failure of a line's write.
func (cc *callContext) logged(err error) {
	if err != nil {
		cc.in.warn(output.KindOutput, fmt.Sprintf("%s: %v", cc.call.Name, err))
	}
}

// The load averages, as the kernel shows them in /proc/loadavg (its
// avenrun, rounded as stap's tapset rounds it): sprint_loadavg() is the
// three with a newline, get_loadavg_index(i) the whole part of the 1-, 5-
// or 15-minute one. A kernel probe's call is computed when its record
// arrives (tapset.Captured): the kernel updates them every 5 seconds.
var loadavgBuiltins = map[string]builtinFunc{
	"sprint_loadavg": func(cc *callContext, _ []Value) Value {
		return str(strings.Join(cc.loadavg(), " ") + "\n")
	},
	"get_loadavg_index": func(cc *callContext, args []Value) Value {
		i := args[0].Int
		if i < 0 || i > 2 {
			cc.fail(fmt.Sprintf("Invalid loadavg index %d specified.", i))
		}
		whole, _, _ := strings.Cut(cc.loadavg()[i], ".")
		n, _ := strconv.ParseInt(whole, 10, 64)
		return long(n)
	},
}

// loadavg returns the 1-, 5- and 15-minute load averages of
// /proc/loadavg ("0.42"), failing the call where it cannot be read.
func (cc *callContext) loadavg() []string {
	data, err := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(data))
	if err != nil || len(fields) < 3 {
		cc.fail(fmt.Sprintf("cannot read the load averages: /proc/loadavg: %v", err))
	}
	return fields[:3]
}
