package driver

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/sys/unix"
)

// rlimit is one --rlimit-NAME=NUM setting. stap applies them to itself,
// the translator, before its passes; bpftap, whose passes run in one
// process, applies them to itself (and so to the run: pass 5 is bpftap
// too, and a -c command inherits them).
type rlimit struct {
	name     string // "as", "cpu", ...
	resource int
	value    uint64
}

var rlimitResources = map[string]int{
	"as": unix.RLIMIT_AS, "cpu": unix.RLIMIT_CPU, "nproc": unix.RLIMIT_NPROC,
	"stack": unix.RLIMIT_STACK, "fsize": unix.RLIMIT_FSIZE,
}

// minAddressSpace is the least --rlimit-as bpftap takes: below about 1 GiB
// Go's runtime cannot start its threads (it aborts with a stack dump).
const minAddressSpace = 4 << 30

// addRlimit returns the setter of --rlimit-NAME: a number as C's strtoul
// reads it (0x.. hexadecimal, 0.. octal), with stap's messages.
func addRlimit(name string) func(o *Options, a string) error {
	return func(o *Options, a string) error {
		if a == "" {
			return fmt.Errorf("An --rlimit-%s option value must be specified.", name)
		}
		n, err := strconv.ParseUint(a, 0, 64)
		if err != nil {
			if name == "as" {
				return fmt.Errorf("Unable to convert rlimit-as resource limit '%s'.", a)
			}
			return fmt.Errorf("Unable to convert resource limit '%s' for rlimit-%s", a, name)
		}
		if name == "as" && n < minAddressSpace {
			return fmt.Errorf("--rlimit-as=%s is below the %d bytes (4 GiB) of address space bpftap needs: it is a Go "+
				"program, whose runtime reserves address space it does not use (stap's limit bounds its translator)", a, uint64(minAddressSpace))
		}
		o.Rlimits = append(o.Rlimits, rlimit{name, rlimitResources[name], n})
		// stap turns core dumps off with these two: running out of
		// either kills the process.
		if name == "as" || name == "stack" {
			o.Rlimits = append(o.Rlimits, rlimit{"core", unix.RLIMIT_CORE, 0})
		}
		return nil
	}
}

// applyRlimits sets the --rlimit-* limits, soft and hard, as stap does: a
// limit bpftap may not raise (EPERM) is a message and the run goes on,
// any other failure ends it.
func applyRlimits(limits []rlimit, stderr io.Writer) error {
	for _, l := range limits {
		err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.value, Max: l.value})
		if err == nil {
			continue
		}
		fmt.Fprintf(stderr, "Unable to set resource limits for rlimit-%s: %v\n", l.name, err)
		if !errors.Is(err, unix.EPERM) {
			return err
		}
	}
	return nil
}
