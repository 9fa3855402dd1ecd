package interp

import (
	"syscall"
	"unsafe"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/kernel"
)

var timeBuiltins = map[string]builtinFunc{
	"gettimeofday_s":  wallClock(1e9),
	"gettimeofday_ms": wallClock(1e6),
	"gettimeofday_us": wallClock(1e3),
	"gettimeofday_ns": wallClock(1),
	"local_clock_s":   monoClock(1e9),
	"local_clock_ms":  monoClock(1e6),
	"local_clock_us":  monoClock(1e3),
	"local_clock_ns":  monoClock(1),
	"cpu_clock_s":     monoClock(1e9),
	"cpu_clock_ms":    monoClock(1e6),
	"cpu_clock_us":    monoClock(1e3),
	"cpu_clock_ns":    monoClock(1),
	"get_cycles":      monoClock(1),
	"HZ":              func(*callContext, []Value) Value { return long(int64(kernel.HZ())) },
	"jiffies": func(*callContext, []Value) Value {
		hz := int64(kernel.HZ())
		return long(1<<32 - 300*hz + monotonicNanos()*hz/1e9)
	},
	"tz_ctime": func(cc *callContext, a []Value) Value {
		name, offset := cc.in.now().Zone()
		s, err := format.Ctime(a[0].Int + int64(offset))
		if err != nil {
			cc.fail(err.Error())
		}
		return str(s + " " + name)
	},
	"tz_gmtoff": func(cc *callContext, _ []Value) Value {
		_, offset := cc.in.now().Zone()
		return long(int64(-offset))
	},
	"tz_name": func(cc *callContext, _ []Value) Value {
		name, _ := cc.in.now().Zone()
		return str(name)
	},
}

func wallClock(unit int64) builtinFunc {
	return func(cc *callContext, _ []Value) Value { return long(cc.in.now().UnixNano() / unit) }
}

func monoClock(unit int64) builtinFunc {
	return func(*callContext, []Value) Value { return long(monotonicNanos() / unit) }
}

// monotonicNanos is CLOCK_MONOTONIC, what the kernel's local_clock follows.
func monotonicNanos() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
