package driver

import (
	"fmt"

	"github.com/bpftap/bpftap/internal/sema"
)

// list ends -l PROBE and -L PROBE after pass 2, as stap does: the points
// PROBE matched, one a line (sema.Program.Listing), each probe on a
// line of its own with -L -v. Why a point derived no probe is shown with
// -vv, as stap shows it, and also when nothing matched, where stap says
// nothing; the exit status is 1 then.
func (s *session) list(prog *sema.Program) int {
	text, n, err := prog.Listing(s.opts.ListVars, s.verbose(2) > 0)
	if err != nil {
		fmt.Fprintf(s.stderr, "ERROR: %v\n", err)
		return 1
	}
	fmt.Fprint(s.stdout, text)
	if n == 0 || s.verbose(2) > 1 {
		fmt.Fprint(s.stderr, prog.Unresolved)
	}
	if n == 0 {
		return 1
	}
	return 0
}
