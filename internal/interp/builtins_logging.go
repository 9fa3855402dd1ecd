package interp

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/kernel"
)

// The kernel's logs: ftrace(msg) adds a line to the trace buffer (tracefs's
// trace_marker, which `cat trace` shows with the writer's pid and time),
// printk(level, msg) to the kernel's log (/dev/kmsg, at log level level,
// which dmesg shows). A kernel probe's call is made when its record
// arrives (tapset.Deferred). Each line is one write (one record of the
// file). A line that cannot be written is a warning, never silently lost
// (stap's ftrace drops it).
var loggingBuiltins = map[string]builtinFunc{
	"ftrace": func(cc *callContext, args []Value) Value {
		cc.logged(kernel.WriteTracefs("trace_marker", []byte(args[0].Str+"\n")))
		return Value{}
	},
	"printk": func(cc *callContext, args []Value) Value {
		cc.logged(kernel.WriteFile("/dev/kmsg", []byte(fmt.Sprintf("<%d>%s\n", args[0].Int&7, args[1].Str))))
		return Value{}
	},
}

// logged warns of err, the failure of a line's write.
func (cc *callContext) logged(err error) {
	if err != nil {
		cc.in.warn(fmt.Sprintf("%s: %v", cc.call.Name, err))
	}
}
