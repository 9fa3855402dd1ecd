package driver

import (
	"fmt"
	"io"

	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/kernelside"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
)

// analyze runs pass 2. If it fails on the part of the library pass 1
// parsed, both passes run again over the whole library, so that every
// diagnostic is the one the whole library gives (an unresolved name's
// "similar:" suggestions draw on every name of the library).
func (s *session) analyze(user, libs []*syntax.File) (*sema.Program, error) {
	prog, err := s.elaborate(user, libs)
	if err == nil || !s.partialLibrary {
		return prog, err
	}
	// Pass 2 wrote its results on the first parse's trees: parse again.
	if user, libs, err = s.parse(true); err != nil {
		return nil, err
	}
	return s.elaborate(user, libs)
}

// elaborate runs pass 2 and prints its warnings.
func (s *session) elaborate(user, libs []*syntax.File) (*sema.Program, error) {
	for _, g := range s.opts.Globals {
		if err := sema.CheckOverride(g); err != nil {
			return nil, output.Failf("%w", err)
		}
	}
	listing := s.opts.List != nil
	prog, err := sema.Elaborate(user, sema.Options{
		Library:   libs,
		Overrides: s.opts.Globals,
		// -L lists the locals optimization would remove
		NoWarnings:      s.opts.NoWarnings,
		Verbose:         s.verbose(2) > 0,
		Unoptimized:     s.opts.Unoptimize || s.opts.ListVars,
		NoGlobalDisplay: s.opts.NoGlobalDisplay,
		Guru:            s.opts.Guru,
		SkipBadVars:     s.opts.SkipBadVars,
		Timing:          s.timed(),
		Listing:         listing,
		Registry: probes.BuiltinWith(probes.RunningKernel{CanAttach: func(a *attach.Point) error { return bpfrt.CanAttachOn(s.kernel, a) },
			CanFindTasks: func(a *attach.Point) error { return kernelside.CanFindTasks(s.kernel, a) }, Kernel: s.kernel,
			Events: s.events}, probes.Config{
			ClassicTracepoints: s.opts.Compatible != "" && syntax.CompareVersions(s.opts.Compatible, "4.1") <= 0,
			Target:             s.opts.Command != "" || s.opts.TargetPID != 0,
			TargetExecutable:   commandExecutable(s.opts.Command),
			TargetBinary:       s.targetExecutable,
			Guru:               s.opts.Guru,
			Listing:            listing,
		}),
		KernelProbes: true,
	})
	if err != nil {
		return nil, err
	}
	printWarnings(s.stderr, prog)
	return prog, nil
}

// printWarnings prints pass 2's warnings.
func printWarnings(w io.Writer, prog *sema.Program) {
	for _, warning := range prog.Warnings {
		fmt.Fprint(w, ensureNewline(warning))
	}
}

// programSummary is the middle of stap's pass-2 line: "1 probe, 3 functions, 0 embeds, 0 globals".
func programSummary(p *sema.Program) string {
	return fmt.Sprintf("%s, %s, 0 embeds, %s", output.Plural(len(p.Probes), "probe"),
		output.Plural(p.FunctionCount(), "function"), output.Plural(len(p.Globals), "global"))
}

func printElaborated(w io.Writer, p *sema.Program) { p.Fprint(w) }
