package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
	"github.com/bpftap/bpftap/internal/usym"
)

// privilegeFirst is what a failed pass 2 reports: when the script has
// kernel probes, bpftap is to run them (not -p1..3, not a listing) and
// lacks the privileges BPF needs, the one line that says so, as pass 4
// says it for any script that gets that far (kernelside.Load); the
// script's other errors wait until it can run. Without it, families that
// ask the kernel while resolving failed each in its own words (perf
// events "permission denied" at a tapset line, the syscall tapset "mount
// tracefs", kernel functions "refuses trampolines").
func (s *session) privilegeFirst(err error) error {
	var semErrs *sema.Errors
	if s.opts.LastPass < 4 || s.opts.List != nil || !errors.As(err, &semErrs) || !semErrs.KernelProbes {
		return err
	}
	if perr := bpfrt.CheckPrivileges(); perr != nil {
		return kernelside.PrivilegeError(perr)
	}
	return err
}

// translate runs pass 3: every kernel probe compiled to a BPF program.
func (s *session) translate(prog *sema.Program, limits tapset.Limits, targetPID int) (*kernelside.Session, error) {
	sema.DeferPrinted(prog)
	ks, err := kernelside.Compile(prog, kernelside.Config{
		Kernel:    s.kernel,
		Limits:    tapset.Limits(limits),
		RingSize:  s.opts.BufferMB << 20,
		TargetPID: targetPID,
		Timing:    s.timed(),
		LogLevel:  verifierLogLevel(s.verbose(4)),
		Progress:  s.progress,
		Loads:     s.opts.LastPass >= 4,
		// attach-time warnings (warning::pass5), which -W leaves alone
		// as stap's does: staprun prints them
		Warn: func(msg string) { fmt.Fprintf(s.stderr, "WARNING: %s\n", msg) },
	})
	if err != nil {
		return nil, err
	}
	s.timer.report(s, 3, fmt.Sprintf("translated to BPF: %s", output.Plural(ks.Programs(), "program")))
	for _, note := range ks.Notes() {
		s.note(3, note)
	}
	return ks, nil
}

// progress prints, with -v, what a slow step of pass 4 is doing.
func (s *session) progress(what string) { s.note(4, what) }

// note prints, with -v, a line of pass n.
func (s *session) note(n int, what string) {
	if s.verbose(n) > 0 {
		fmt.Fprintf(s.stderr, "Pass %d: %s\n", n, what)
	}
}

// load runs pass 4: maps created and every program verified and loaded. On
// a verifier rejection -v adds the verifier's log.
func (s *session) load(ks *kernelside.Session) error {
	if err := ks.Load(); err != nil {
		var ke *kernelside.Error
		if s.verbose(4) > 0 && errors.As(err, &ke) && ke.Log != "" {
			fmt.Fprintf(s.stderr, "verifier log:\n%s", ensureNewline(ke.Log))
		}
		return err
	}
	if s.verbose(4) >= 3 {
		ks.FprintVerifierLogs(s.stderr)
	}
	if ks.UserStacks() {
		s.indexSymbols()
	}
	s.timer.report(s, 4, fmt.Sprintf("loaded %s into the kernel", output.Plural(ks.Programs(), "BPF program")))
	return nil
}

// indexSymbols makes the files whose frames user stacks may show known
// by build id before the target runs (and after it exited, when its
// stacks are printed): the target's executable and its libraries, and
// the -d objects (with their libraries under --ldd).
func (s *session) indexSymbols() {
	if exe, _ := s.targetExecutable(); exe != "" {
		usym.Default().AddExecutable(exe)
	}
	for _, name := range s.opts.SymbolObjects {
		path, err := elfsym.Resolve(name)
		switch {
		case err != nil && kernelModule(name):
			// its symbols are in /proc/kallsyms already
		case err != nil:
			s.warn(fmt.Sprintf("cannot find -d object '%s' for user-space symbols: %v", name, err))
		case s.opts.SymbolLibraries:
			usym.Default().AddExecutable(path)
		default:
			usym.Default().AddFile(path)
		}
	}
}

// kernelModule tells whether name is a loaded kernel module, which stap's
// -d also takes.
func kernelModule(name string) bool {
	if strings.Contains(name, "/") {
		return false
	}
	_, err := os.Stat(filepath.Join("/sys/module", strings.ReplaceAll(name, "-", "_")))
	return err == nil
}

// verifierLogLevel keeps the verifier's logs of accepted programs with -vvv.
func verifierLogLevel(verbose int) uint32 {
	if verbose >= 3 {
		return 1
	}
	return 0
}

// attach attaches the kernel programs and starts delivering their records
// to the interpreter.
func (s *session) attach(ks *kernelside.Session, in *interp.Interp, out output.Writer) error {
	if ks.Programs() == 0 {
		return nil
	}
	if err := ks.Start(in); err != nil {
		return err
	}
	if err := ks.Attach(); err != nil {
		return err
	}
	out.Attached(&output.Attached{Programs: ks.Attached(), Elapsed: s.timer.elapsed()})
	return nil
}

// stopKernel detaches the kernel programs and delivers what they left in
// the ring, so the end probes print after it; records the full ring had
// no room for are reported as stap reports transport failures (the ring's
// size in MiB, which -s sets), and stacks the kernel could not keep the
// same way (the stack maps' size, which -D MAXSTACKS sets), and strings in
// user memory the programs printed as their address with a warning (bpftap's
// own, which -w suppresses).
func (s *session) stopKernel(ks *kernelside.Session, in *interp.Interp, out output.Writer) {
	lost, err := ks.Stop()
	in.Flush()
	if err != nil {
		out.Diagnostic(errorDiagnostic(err))
	}
	if lost > 0 {
		out.Loss(&output.Loss{What: "transport", Count: int64(lost), Option: "-s", Limit: "buffer size", Size: int64(ks.RingSize() >> 20)})
	}
	if n := ks.UnreadUserStrings(); n > 0 && !s.opts.NoWarnings {
		out.Diagnostic(&output.Diagnostic{Severity: output.Warning, Kind: output.KindKernel, Msg: unreadWarning(n)})
	}
	lostStacks, lostBuildIDs := ks.StackFailures()
	for _, f := range []struct {
		n    int64
		what string
	}{{lostStacks, "stack"}, {lostBuildIDs, "user stack build-id"}} {
		if f.n > 0 {
			out.Loss(&output.Loss{What: f.what, Count: f.n, Option: "-D MAXSTACKS", Limit: "stack map size", Size: int64(ks.MaxStacks())})
		}
	}
}

// unreadWarning tells, in the words of stap's closing counts, that n
// strings in user memory printed as their address, and why
// (docs/syscalls.md says more).
func unreadWarning(n int64) string {
	return fmt.Sprintf("%s: %d (unreadable: a page not in memory yet, which a BPF program cannot fault in, "+
		"or a bad address)", output.UnreadStrings, n)
}

// hitReport is -t's report: a line per probe that ran, with its run time
// in ns (kernel probes measure themselves with the BPF clock, user-side
// probes are timed by the interpreter; see docs/bpf-backend.md).
func hitReport(prog *sema.Program, ks *kernelside.Session, in *interp.Interp) []output.Hit {
	return slices.DeleteFunc(probeHits(prog, ks, in), func(h output.Hit) bool { return h.Hits == 0 })
}

// probeHits is every probe's line of the hit report so far, with no
// hits for a probe that has not run (--monitor shows them all).
func probeHits(prog *sema.Program, ks *kernelside.Session, in *interp.Interp) []output.Hit {
	hits := make([]output.Hit, len(prog.Probes))
	for i, p := range prog.Probes {
		hits[i] = output.Hit{Probe: p.Name, At: p.Point.Position(), From: syntax.ProbePointString(p.User), Index: i}
		st := in.Timing(p)
		if p.Kernel {
			st = ks.Timing(p)
		}
		if st == nil {
			continue
		}
		get := func(op string) int64 { v, _ := st.Get(op); return v }
		h := &hits[i]
		h.Hits, h.Min, h.Avg, h.Max, h.Variance = st.Count, get(format.OpMin), get(format.OpAvg), get(format.OpMax), get(format.OpVariance)
	}
	return hits
}
