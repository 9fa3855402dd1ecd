// Package sema is bpftap's elaborator, SystemTap's pass 2. It turns the parsed
// user script and tapset library into a Program, in stap's order:
//
//  1. derive probes: every probe point is matched against the probe-point
//     namespace (internal/probes) extended with the probe aliases of the script
//     and the library; alias prologues and epilogues are merged into a deep copy
//     of the body of every derived probe, deciding their @probewrite
//     (derive.go, atops.go), less the tapset's assignments that no code
//     of the probe needs (prune.go); the points whose families' expansions read
//     kernel facts alone are expanded beforehand, concurrently (ahead.go);
//  2. merge the probes of many system calls' entries into one that
//     dispatches on the call's number (syscalls.go), and give every return
//     probe that uses @entry a companion probe on its entries (entry.go);
//  3. resolve symbols: identifiers become locals, parameters or globals, calls
//     become script functions, library functions (pulling in their file) or
//     builtins; functions reached from the probes are resolved transitively
//     (resolve.go); before a body resolves, its rarer @ operators (@enum,
//     @enumname, @kderef, ...) become literals and calls (atops.go);
//  4. elide code without effect and probes left empty, warning as stap does
//     (elide.go);
//  5. infer types by iterating over every probe and function until nothing
//     changes, then report what stayed unresolved (types.go, and
//     types_stmt.go, types_expr.go, types_call.go, types_errors.go);
//  6. compile the patterns of =~ and !~ as stap does, with its messages
//     (regex.go); add the end probes that display globals (globals.go);
//     refuse writes to an array inside a foreach over it (foreach.go);
//     check the histogram shapes of statistics (stats.go);
//  7. check what kernel probes (BPF programs) may run and mark the globals
//     they only update as per-CPU candidates (kernelctx.go); take the
//     context task of the probes that run for another task than the
//     current one (contexttask.go).
//
// A listing (-l, -L: Options.Listing) goes up to step 5, keeping the
// probes whatever errors it meets, and lists them (listing.go).
//
// Context expressions of kernel probes ($var, @cast) are resolved with the
// symbols (context.go) and recorded in Program.Targets; before that, their
// @defined are decided and the branches those rule out dropped (defined.go),
// and the variables an alias defines for points that lack them replaced by
// their values (contextvars.go).
//
// Diagnostics are rendered exactly as stap renders them (diag.go); print.go is
// the -p2 printer.
//
// Where results live: a result in the syntax package's own terms (a binding,
// a syntax.Type, a flag or a count) is written on the AST node, or on the
// syntax.Var or syntax.Func the node binds to (Ident.Var, Call.Func,
// Typed.T, Var.PerCPU); a result only a package above syntax can name (a
// probes.Access, a sema StatShape) lives in a side table of Program keyed by
// the node or the Var (Targets, StatShape), since syntax cannot import those
// packages; a fact about a derived probe lives on Probe
// (Attach, Params, Display). docs/elaboration.md says more.
package sema

import (
	"regexp"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// Options configures Elaborate.
type Options struct {
	// Library holds the parsed tapset files (the embedded library, then -I
	// directories); only the files whose functions, aliases or globals the
	// script uses end up in the Program.
	Library []*syntax.File
	// Overrides are the -G NAME=VALUE settings, applied when the script starts.
	Overrides []string
	// NoWarnings is -w; Verbose (-v) shows every error instead of one per kind.
	NoWarnings bool
	Verbose    bool
	// Guru is -g: a netfilter probe may assign $verdict.
	Guru bool
	// SkipBadVars is --skip-badvars: a context variable that does not
	// resolve is 0, with a warning (badvars.go).
	SkipBadVars bool
	// Timing is -t, which times each probe's runs: the merged entry of
	// many system calls then stays one program (splitMerged).
	Timing bool
	// Unoptimized is -u: keep code without effect.
	Unoptimized bool
	// NoGlobalDisplay is --no-global-var-display: no end probes print the
	// globals that are written but never read.
	NoGlobalDisplay bool
	// Registry is the probe-point namespace; nil means probes.Builtin().
	Registry *probes.Registry
	// KernelProbes enables the kernel families implemented so far
	// (kernel.trace, and syscall_any through it); without it they are
	// refused as not yet supported, as every kernel family was before the
	// BPF back end. The driver sets it once it can run kernel probes.
	KernelProbes bool
	// Listing is -l and -L: the probes are listed (Program.Listing), not
	// run. As in stap, errors do not fail the elaboration
	// (Program.Unresolved renders them): a point that does not resolve
	// derives nothing, the others are listed; a probe left empty is kept;
	// what only a run needs is skipped: the merge of many system calls'
	// entries into one probe, the checks of what a probe may call where it
	// runs, everything after type inference, and warnings (stap lists
	// without them). The registry should be
	// made with probes.Config.Listing.
	Listing bool
	// typeVisits, if set, counts the bodies the type passes visit: the
	// package's tests check that they grow linearly with a script.
	typeVisits *int
	// pruning, if set, turns the pruning of the tapset's alias prologues
	// off or records what it drops (prune_test.go).
	pruning *pruneRecord
}

// maxArrayKeys is how many keys an array may have.
const maxArrayKeys = 9

type elab struct {
	opts Options
	rep  *reporter
	reg  *probes.Registry
	prog *Program
	// kernelPoints: a point of a kernel probe family was resolved, or
	// tried (Errors.KernelProbes).
	kernelPoints bool
	// merges are the merged entries of system calls (syscalls.go).
	merges []mergedEntry

	fileOf    map[syntax.Decl]*syntax.File
	userFuncs map[string][]*syntax.FuncDecl
	libFuncs  map[string][]*syntax.FuncDecl
	globals   map[string][]*syntax.GlobalDecl // user globals first, then library ones
	aliases   map[string]*probes.Family
	// funcNames are the names an unresolved function is compared with,
	// sorted: every script, library and builtin function's, made once.
	funcNames []string

	funcs     map[*syntax.FuncDecl]*syntax.Func
	builtins  map[string]*syntax.Func
	globalVar map[*syntax.GlobalDecl]*syntax.Var
	arityAt   map[*syntax.Var]syntax.Node // where each global's arity was set
	usedFiles map[*syntax.File]bool
	userFiles int            // Program.Files starts with them
	pending   []*syntax.Func // functions whose bodies still need resolving
	loops     int            // alias loops reported (they do not stop a probe's derivation)
	// kernel is the kernel of the script's kernel probes, which @cast in
	// functions resolves against (nil without kernel probes); contextErrs
	// holds the errors of the context expressions that did not resolve
	// (context.go), reported if they survive elision.
	kernel      probes.KernelInfo
	contextErrs map[syntax.Expr]*probes.ContextError
	// enumFuncs name the functions made for @enumname, by enum type (atops.go).
	enumFuncs map[enumKey]string
	// ahead are the expansions under way ahead of the derivation (ahead.go).
	ahead map[string]*aheadExpansion
	// effectlessFuncs caches effectlessCall's verdicts (prune.go).
	effectlessFuncs map[*syntax.FuncDecl]bool
}

// Elaborate runs pass 2 over the user's files. On failure the error is an
// *Errors holding stap's rendering of every diagnostic.
func Elaborate(user []*syntax.File, opts Options) (*Program, error) {
	e := &elab{
		opts:      opts,
		rep:       newReporter(opts.Verbose, opts.NoWarnings || opts.Listing),
		reg:       opts.Registry,
		prog:      &Program{Files: append([]*syntax.File(nil), user...)},
		fileOf:    map[syntax.Decl]*syntax.File{},
		userFuncs: map[string][]*syntax.FuncDecl{},
		libFuncs:  map[string][]*syntax.FuncDecl{},
		globals:   map[string][]*syntax.GlobalDecl{},
		aliases:   map[string]*probes.Family{},
		funcs:     map[*syntax.FuncDecl]*syntax.Func{},
		builtins:  map[string]*syntax.Func{},
		globalVar: map[*syntax.GlobalDecl]*syntax.Var{},
		arityAt:   map[*syntax.Var]syntax.Node{},
		usedFiles: map[*syntax.File]bool{},
		userFiles: len(user),

		contextErrs: map[syntax.Expr]*probes.ContextError{},
		ahead:       map[string]*aheadExpansion{},

		effectlessFuncs: map[*syntax.FuncDecl]bool{},
	}
	if e.reg == nil {
		e.reg = probes.Builtin()
	}
	e.collect(user, opts.Library)
	e.deriveAll(user)
	e.collectPerfCounters()
	if opts.Listing {
		e.prog.Unresolved = e.rep.setAside()
	} else {
		e.mergeSyscallEntries()
		e.compatTwins()
	}
	e.entryParams()
	e.pairEntries()
	e.resolveAll()
	e.resolveAutocasts()
	e.checkCastWrites()
	if opts.SkipBadVars {
		e.skipBadVars()
	}
	if !e.rep.failed() {
		e.inlineConditions()
	}
	if !e.rep.failed() {
		e.elide()
		if !opts.Listing {
			e.checkUserSide()
			e.checkProcfsFiles()
		}
	}
	if !e.rep.failed() {
		e.inferTypes()
	}
	if opts.Listing {
		return e.listing(), nil
	}
	if !e.rep.failed() {
		e.checkRegexps()
	}
	if !e.rep.failed() {
		e.finish()
		e.checkForeachWrites()
	}
	if !e.rep.failed() {
		e.checkStats()
		e.warnHWBreakpoints()
		e.checkKernel()
		e.checkTokens()
		e.checkContextTasks()
		e.checkTaskLookups()
	}
	if !e.rep.failed() {
		e.promotePerCPU()
		e.promoteByThread()
		e.takeSelectors()
		e.settleSets()
		e.callDispatches()
		e.splitMerged()
		e.tightenDispatches()
	}
	if e.rep.failed() {
		errs := e.rep.errors()
		errs.KernelProbes = e.kernelPoints
		return nil, errs
	}
	e.prog.Warnings = e.rep.warningTexts()
	e.prog.SuppressedWarnings = e.rep.suppWarns
	return e.prog, nil
}

// listing ends the elaboration of a listing after type inference: as
// stap, it lists what derived whatever errors came after (a type that was
// not inferred is unknown); they join Program.Unresolved.
func (e *elab) listing() *Program {
	e.prog.Unresolved += e.rep.setAside()
	return e.prog
}

// collect indexes the declarations of the user's files and the library.
func (e *elab) collect(user, lib []*syntax.File) {
	for _, f := range user {
		e.collectFile(f, e.userFuncs)
	}
	for _, f := range lib {
		e.collectFile(f, e.libFuncs)
	}
}

func (e *elab) collectFile(f *syntax.File, funcs map[string][]*syntax.FuncDecl) {
	for _, d := range f.Decls {
		e.fileOf[d] = f
		switch d := d.(type) {
		case *syntax.FuncDecl:
			funcs[d.Name] = append(funcs[d.Name], d)
		case *syntax.GlobalDecl:
			e.globals[d.Name] = append(e.globals[d.Name], d)
		case *syntax.AliasDecl:
			e.addAlias(d)
		case *syntax.EmbeddedCode:
			if !f.Tapset {
				e.rep.errorAt("embedded", d, embeddedMsg)
			}
		}
	}
}

const embeddedMsg = "embedded C code is not supported by bpftap (a BPF runtime has no guru mode)"

// visible reports whether a private declaration of file from may be used by
// code of source at (a probe alias's body included, wherever the alias is
// used); public declarations are visible everywhere.
func visible(private bool, from *syntax.File, at *syntax.Source) bool {
	return !private || from != nil && from.Src == at
}

// builtin returns the Func of a native tapset function, or nil.
func (e *elab) builtin(name string) *syntax.Func {
	if f := e.builtins[name]; f != nil {
		return f
	}
	b := tapset.Builtins[name]
	if b == nil {
		return nil
	}
	f := builtinFunc(b)
	e.builtins[name] = f
	e.prog.builtinsUsed = append(e.prog.builtinsUsed, f)
	return f
}

// builtinFunc is the Func of the native tapset function b.
func builtinFunc(b *tapset.Builtin) *syntax.Func {
	f := &syntax.Func{Name: b.Name, Result: b.Result, Builtin: b.Name}
	for i, t := range b.Params {
		f.Params = append(f.Params, &syntax.Var{Name: b.ParamNames[i], Kind: syntax.VarParam, Type: t, Index: i})
	}
	return f
}

var overridePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*=[a-z0-9_.-]+$`)

// CheckOverride validates a -G argument as stap does before running any pass;
// the error is the text stap prints after "ERROR: ".
func CheckOverride(arg string) error {
	if !overridePattern.MatchString(arg) {
		return &overrideError{arg}
	}
	return nil
}

type overrideError struct{ arg string }

func (o *overrideError) Error() string {
	return "Safety pattern mismatch for -G parameter ('" + o.arg + "' vs. '" + overridePattern.String() + "') rc=1"
}
