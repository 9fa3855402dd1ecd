package sema

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/bpftap/bpftap/internal/syntax"
)

// Diagnostic is one semantic error or warning as stap prints it:
// "semantic error: MSG: TOKEN at FILE:LINE:COL" with the source line and a
// caret, followed by chained notes ("type was first inferred here").
type Diagnostic struct {
	Warning bool
	Msg     string
	// Tok describes the token blamed ("identifier 'x'"); empty when the message
	// has no location.
	Tok   string
	Pos   syntax.Pos
	Chain []*Diagnostic
	// origin identifies the check that raised the error: without -v stap prints
	// only the first error of each origin and counts the others as suppressed.
	origin string
}

// Errors is the failure of Elaborate: every diagnostic in the order stap
// prints them (warnings interleaved), and how many were suppressed.
type Errors struct {
	Diags              []*Diagnostic
	text               string
	SuppressedErrors   int
	SuppressedWarnings int
	// KernelProbes: the script has a point of a kernel probe family
	// (resolved or not), which no run can serve without the privileges
	// BPF needs.
	KernelProbes bool
}

func (e *Errors) Error() string {
	for _, d := range e.Diags {
		if !d.Warning {
			return "semantic error: " + d.Msg
		}
	}
	return "semantic error"
}

// Text is the rendering of all diagnostics, as stap prints them before
// "Pass 2: analysis failed.".
func (e *Errors) Text() string { return e.text }

// SuppressedText returns stap's trailer lines about suppressed messages, printed
// after "Pass 2: analysis failed.".
func (e *Errors) SuppressedText() string {
	return suppressedText(e.SuppressedErrors, e.SuppressedWarnings)
}

func suppressedText(errs, warns int) string {
	var b strings.Builder
	if errs > 0 {
		fmt.Fprintf(&b, "Number of similar error messages suppressed: %d.\n", errs)
	}
	if warns > 0 {
		fmt.Fprintf(&b, "Number of similar warning messages suppressed: %d.\n", warns)
	}
	if warns > 0 || errs > 0 {
		b.WriteString("Rerun with -v to see them.\n")
	}
	return b.String()
}

// reporter collects diagnostics, drops repetitions the way stap does and renders
// them. stap names a token's file only when it differs from the last one shown
// ("at :1:15"); bpftap always names it, so that every line stands alone for a
// reader and for an editor's FILE:LINE:COL parser (docs/options.md).
type reporter struct {
	verbose    bool
	noWarnings bool
	out        strings.Builder
	seen       map[string]bool
	diags      []*Diagnostic
	nerrors    int
	suppErrs   int
	suppWarns  int
	warnings   []string // each warning's rendering
	// quiet drops warnings without counting them (stap's later optimization
	// rounds, which repeat what the first one said).
	quiet bool
}

func newReporter(verbose, noWarnings bool) *reporter {
	return &reporter{verbose: verbose, noWarnings: noWarnings, seen: map[string]bool{}}
}

// errorAt reports an error blaming node n.
func (r *reporter) errorAt(origin string, n syntax.Node, msg string, chain ...*Diagnostic) {
	r.add(&Diagnostic{Msg: msg, Tok: describe(n), Pos: n.Position(), Chain: chain, origin: origin})
}

// errorf reports an error without location.
func (r *reporter) errorf(origin, format string, args ...any) {
	r.add(&Diagnostic{Msg: fmt.Sprintf(format, args...), origin: origin})
}

// warnAt reports a warning blaming node n.
func (r *reporter) warnAt(n syntax.Node, msg string) {
	r.add(&Diagnostic{Warning: true, Msg: msg, Tok: describe(n), Pos: n.Position()})
}

// note is a chained diagnostic: a message (possibly empty) and a token.
func note(n syntax.Node, msg string) *Diagnostic {
	return &Diagnostic{Msg: msg, Tok: describe(n), Pos: n.Position()}
}

// add records a diagnostic and prints it unless stap would drop it. Without -v
// stap prints one error per origin chain (the check that raised it and the
// checks of its chained notes) and one warning per message text, counting the
// others as suppressed; with -v it prints every error and warning, though a
// chained note whose origin was already shown is still left out.
func (r *reporter) add(d *Diagnostic) {
	if d.Warning {
		r.addWarning(d)
		return
	}
	r.nerrors++
	key := originChain(d, 0)
	if !r.verbose && r.seen[key] {
		r.suppErrs++
		return
	}
	r.seen[key] = true
	r.diags = append(r.diags, d)
	r.out.WriteString("semantic error: ")
	r.renderBody(d, "        source: ")
	for _, c := range d.Chain {
		if c.Msg == "" { // a second token of the same error
			r.renderBody(c, "        source: ")
		}
	}
	r.out.WriteString("\n")
	for i, c := range d.Chain {
		if k := originChain(d, i+1); c.Msg != "" && !r.seen[k] {
			r.seen[k] = true
			r.out.WriteString("semantic error: ")
			r.renderBody(c, "        source: ")
			r.out.WriteString("\n")
		}
	}
}

// originChain is the duplicate-elimination key of the error starting at chain
// element i (0 is d itself): its origin and those of the notes after it.
func originChain(d *Diagnostic, i int) string {
	key := d.origin
	if i > 0 {
		key = d.Chain[i-1].origin
	}
	for _, c := range d.Chain[max(i, 0):] {
		if c.Msg != "" {
			key += "|" + c.origin
		}
	}
	return "E" + key
}

func (r *reporter) addWarning(d *Diagnostic) {
	if r.noWarnings || r.quiet {
		return
	}
	key := "W" + d.Msg
	if !r.verbose && r.seen[key] {
		r.suppWarns++
		return
	}
	r.seen[key] = true
	r.diags = append(r.diags, d)
	start := r.out.Len()
	r.out.WriteString("WARNING: ")
	r.renderBody(d, " source: ")
	r.warnings = append(r.warnings, r.out.String()[start:])
}

// renderBody writes "MSG: TOKEN at FILE:L:C" and the source excerpt.
func (r *reporter) renderBody(d *Diagnostic, prefix string) {
	if d.Tok == "" {
		r.out.WriteString(d.Msg + "\n")
		return
	}
	if d.Msg != "" {
		r.out.WriteString(d.Msg + ": ")
	}
	fmt.Fprintf(&r.out, "%s at %s:%d:%d\n", d.Tok, d.Pos.File(), d.Pos.Line, d.Pos.Col)
	r.out.WriteString(d.Pos.SourceLine(prefix))
}

// warningTexts returns the rendering of each warning, in order.
func (r *reporter) warningTexts() []string { return r.warnings }

func (r *reporter) failed() bool { return r.nerrors > 0 }

// setAside returns the rendering of the errors reported so far and takes
// them out of the reckoning: a listing (-l, -L) lists the points that
// resolved, and says why the others did not only when asked, as stap.
func (r *reporter) setAside() string {
	text := r.out.String() + suppressedText(r.suppErrs, 0)
	r.out.Reset()
	r.diags, r.nerrors, r.suppErrs, r.seen = nil, 0, 0, map[string]bool{}
	return text
}

func (r *reporter) errors() *Errors {
	return &Errors{Diags: r.diags, text: r.out.String(), SuppressedErrors: r.suppErrs, SuppressedWarnings: r.suppWarns}
}

// describe names the token a node starts with, as stap's diagnostics show it.
func describe(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.Ident:
		return "identifier '" + n.Name + "'"
	case *syntax.Call:
		if op, ok := loweredOperators[n.Name]; ok {
			return "operator '" + op + "'"
		}
		return "identifier '" + n.Name + "'"
	case *syntax.PrintCall:
		return "identifier '" + n.Name + "'"
	case *syntax.TargetVar:
		return "identifier '" + n.Name + "'"
	case *syntax.Component:
		if strings.HasPrefix(n.Name, "*") { // stap's scanner reads it as an operator
			return "operator '" + n.Name + "'"
		}
		return "identifier '" + n.Name + "'"
	case *syntax.FuncDecl:
		return "identifier '" + n.Name + "'"
	case *syntax.Param:
		return "identifier '" + n.Name + "'"
	case *syntax.GlobalDecl:
		return "identifier '" + n.Name + "'"
	case *syntax.NumberLit:
		return "number '" + n.Text + "'"
	case *syntax.StringLit:
		return "string '" + cmp.Or(n.Raw, n.Value) + "'"
	case *syntax.Binary:
		return "operator '" + n.Op + "'"
	case *syntax.Assign:
		return "operator '" + n.Op + "'"
	case *syntax.Unary:
		return "operator '" + n.Op + "'"
	case *syntax.IncDec:
		return "operator '" + n.Op + "'"
	case *syntax.Ternary:
		return "operator '?'"
	case *syntax.StatOp:
		return "operator '@" + n.Op + "'"
	case *syntax.Hist:
		if n.Linear {
			return "operator '@hist_linear'"
		}
		return "operator '@hist_log'"
	case *syntax.Cast:
		return "operator '@cast'"
	case *syntax.TargetComponent:
		if n.Kind == syntax.ComponentIndex {
			return "operator '['"
		}
		return "operator '->'"
	case *syntax.AtVar:
		return "operator '@var'"
	case *syntax.Entry:
		return "operator '@entry'"
	case *syntax.Defined:
		return "operator '@defined'"
	case *syntax.AtOp:
		return "operator '@" + n.Name + "'"
	case *syntax.EmbeddedExpr, *syntax.EmbeddedCode:
		return "embedded-code"
	case *syntax.In:
		return "keyword"
	case *syntax.Index:
		return describe(n.Array)
	case *syntax.Autocast:
		if len(n.Components) > 0 && n.Components[0].Kind == syntax.ComponentIndex {
			return "operator '['"
		}
		return "operator '->'"
	}
	return "keyword"
}
