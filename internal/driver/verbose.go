package driver

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// passTimer measures each pass for -v, as stap reports it: memory in use after the
// pass and the user, system and real time the pass took.
type passTimer struct {
	wall      time.Time
	user, sys time.Duration
}

func (t *passTimer) start() {
	t.wall = time.Now()
	t.user, t.sys = cpuTimes()
}

// report prints "Pass N: WHAT using ...virt/...res/...shr/...data kb, in ...usr/...sys/...real ms."
// when -v is given, then restarts the clock for the next pass.
func (t *passTimer) report(s *session, pass int, what string) {
	if s.verbose(pass) > 0 {
		user, sys := cpuTimes()
		fmt.Fprintf(s.stderr, "Pass %d: %s using %s, in %dusr/%dsys/%dreal ms.\n", pass, what, memoryUse(),
			(user - t.user).Milliseconds(), (sys - t.sys).Milliseconds(), time.Since(t.wall).Milliseconds())
	}
	t.start()
}

// elapsed returns the user, system and real milliseconds since the clock started.
func (t *passTimer) elapsed() string {
	user, sys := cpuTimes()
	return fmt.Sprintf("%dusr/%dsys/%dreal ms", (user - t.user).Milliseconds(), (sys - t.sys).Milliseconds(),
		time.Since(t.wall).Milliseconds())
}

func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// memoryUse formats /proc/self/statm as stap does: "VIRTvirt/RESres/SHRshr/DATAdata kb".
func memoryUse() string {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return "0virt/0res/0shr/0data kb"
	}
	var size, res, shr, text, lib, data int64
	fmt.Sscan(strings.TrimSpace(string(b)), &size, &res, &shr, &text, &lib, &data)
	kb := int64(os.Getpagesize()) / 1024
	return fmt.Sprintf("%dvirt/%dres/%dshr/%ddata kb", size*kb, res*kb, shr*kb, data*kb)
}

// addVerbose is -v: one more unit of verbosity for every pass.
func addVerbose(o *Options, _ string) error {
	for i := range o.PassVerbose {
		o.PassVerbose[i]++
	}
	return nil
}

// addPassVerbose is --vp ABCDE: each digit adds to its pass's verbosity
// (--vp 002: two units to pass 3), as stap's.
func addPassVerbose(o *Options, a string) error {
	if len(a) < 1 || len(a) > len(o.PassVerbose) || strings.Trim(a, "0123456789") != "" {
		return errors.New("Invalid --vp argument: it takes 1 to 5 digits.")
	}
	for i := range len(a) {
		o.PassVerbose[i] += int(a[i] - '0')
	}
	return nil
}

// verbose is the verbosity of pass n (1 to 5).
func (s *session) verbose(n int) int { return s.opts.PassVerbose[n-1] }
