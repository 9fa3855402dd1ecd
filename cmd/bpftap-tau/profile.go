package main

import (
	"fmt"
	"io"
)

// The groups of the timers: TAU's own for its top-level timer, one of
// ours for the system calls (ParaProf filters and colours by group).
const (
	applicationGroup = "TAU_DEFAULT"
	syscallGroup     = "SYSCALL"
)

// writeProfile writes th as TAU's text profile of the metric TIME,
// microseconds (the package comment shows the lines).
func writeProfile(w io.Writer, th thread) {
	fmt.Fprintf(w, "%d templated_functions_MULTI_TIME\n", len(th.syscalls)+1)
	fmt.Fprintf(w, "# Name Calls Subrs Excl Incl ProfileCalls # %s\n", metadata(th))
	outside := max(th.lifetime-th.inCalls, 0)
	writeTimer(w, ".TAU application", 1, th.calls, outside, th.lifetime, applicationGroup)
	for _, s := range th.syscalls {
		writeTimer(w, s.name, s.count, 0, s.time, s.time, syscallGroup)
	}
	fmt.Fprintf(w, "0 aggregates\n")
}

// writeTimer writes a timer's line: its quoted name, calls, calls of
// other timers from it (Subrs), exclusive and inclusive time, 0 calls
// recorded one by one (ProfileCalls), its group.
func writeTimer(w io.Writer, name string, calls, subrs, excl, incl int64, group string) {
	fmt.Fprintf(w, "\"%s\" %d %d %d %d 0 GROUP=\"%s\"\n", name, calls, subrs, excl, incl, group)
}

// metadata is the XML block of the thread's metadata, which ParaProf
// shows: its TID and its lifetime, in ms from the command's first system
// call. (Its values are numbers: nothing to escape.)
func metadata(th thread) string {
	block := "<metadata>"
	for _, a := range []struct{ name, value string }{
		{"TID", fmt.Sprint(th.tid)},
		{"Lifetime start (ms from the first system call)", milliseconds(th.start)},
		{"Lifetime end (ms from the first system call)", milliseconds(th.end)},
		{"Source", "bpftap examples/thread_profile.stp"},
	} {
		block += "<attribute><name>" + a.name + "</name><value>" + a.value + "</value></attribute>"
	}
	return block + "</metadata>"
}

// milliseconds is a number of microseconds as ms with three decimals.
func milliseconds(us int64) string {
	return fmt.Sprintf("%d.%03d", us/1000, us%1000)
}
