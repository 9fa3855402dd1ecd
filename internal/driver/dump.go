package driver

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// dump answers --dump-functions, --dump-probe-aliases and
// --dump-probe-types in stap's formats, from bpftap's library (the
// embedded tapset, the -I directories, the native functions) and its
// probe families, and ends bpftap. Names that start with "_" (the
// library's internals) are shown with -v only, as stap shows them.
func (s *session) dump() int {
	if s.opts.Dump == "probe-types" {
		dumpProbeTypes(s.stdout, probes.Families(probes.RunningKernel{Kernel: s.kernel}, probes.Config{}))
		return 0
	}
	libs, err := s.parseLibrary()
	if err != nil {
		return s.fail(1, err)
	}
	if s.opts.Dump == "functions" {
		dumpFunctions(s.stdout, libs, tapset.Builtins, s.verbose(2) > 0)
	} else {
		dumpAliases(s.stdout, libs, s.verbose(1) > 0)
	}
	return 0
}

// parseLibrary parses the whole library: the embedded tapset and the -I
// directories' files.
func (s *session) parseLibrary() ([]*syntax.File, error) {
	stp, stpm, err := s.librarySources(nil, nil, true)
	if err != nil {
		return nil, err
	}
	macros, errs := syntax.LoadMacros(stpm...)
	if len(errs) > 0 {
		return nil, errs
	}
	cfg := s.parseConfig(nil)
	cfg.Macros, cfg.Tapset = macros, true
	libs, err := syntax.ParseFiles(stp, cfg)
	if err != nil { // an -I file that does not parse is skipped, as in a run
		libs, err = s.skipBadTapsets(stp, cfg)
	}
	return libs, err
}

// dumpFunctions prints each public function as stap does,
// "name:type (param:type, ...)", sorted, with the types its declaration
// gives: every function of the embedded library declares them ("unknown"
// is a function that returns nothing); an -I tapset's undeclared type is
// "unknown" too, where stap shows the type its elaboration infers. Native functions
// (stap's embedded-C ones) are listed with their types; those no probe
// can run are left out.
func dumpFunctions(w io.Writer, libs []*syntax.File, builtins map[string]*tapset.Builtin, all bool) {
	seen := map[string]bool{}
	var lines []string
	add := func(name string, line string) {
		if (all || !strings.HasPrefix(name, "_")) && !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	for _, f := range libs {
		for _, d := range f.Decls {
			if fd, ok := d.(*syntax.FuncDecl); ok && !fd.Private {
				var params []string
				for _, p := range fd.Params {
					params = append(params, p.Name+":"+p.Type.String())
				}
				add(fd.Name, signature(fd.Name, fd.Result, params))
			}
		}
	}
	for name, b := range builtins {
		if b.Unsupported != "" {
			continue
		}
		var params []string
		for i, t := range b.Params {
			params = append(params, b.ParamNames[i]+":"+t.String())
		}
		add(name, signature(name, b.Result, params))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

func signature(name string, result syntax.Type, params []string) string {
	return fmt.Sprintf("%s:%s (%s)", name, result, strings.Join(params, ", "))
}

// dumpAliases prints each probe alias of the library as stap does, its
// names, " = " (" += " for an epilogue alias) and the points it stands
// for, sorted.
func dumpAliases(w io.Writer, libs []*syntax.File, all bool) {
	seen := map[string]bool{}
	var lines []string
	for _, f := range libs {
		for _, d := range f.Decls {
			a, ok := d.(*syntax.AliasDecl)
			if !ok || a.Private {
				continue
			}
			var names, points []string
			for _, n := range a.Names {
				names = append(names, syntax.ProbePointString(n))
			}
			for _, p := range a.Points {
				points = append(points, syntax.ProbePointString(p))
			}
			op := " = "
			if a.Epilogue {
				op = " += "
			}
			line := strings.Join(names, " = ") + op + strings.Join(points, ", ")
			if (all || !strings.HasPrefix(line, "_")) && !seen[line] {
				seen[line] = true
				lines = append(lines, line)
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// dumpProbeTypes prints the probe points bpftap's families answer to, one
// pattern a line ("timer.ms(number)"), in stap's order: its tree's, each
// component by name, then without an argument before with a number before
// with a string. Families that only name what bpftap refuses are left
// out, and so are patterns of a component listed at run time
// ("syscall.*": stap's tapset makes those aliases, which it leaves out).
func dumpProbeTypes(w io.Writer, families []*probes.Family) {
	seen := map[string]bool{}
	var paths [][]string
	for _, f := range families {
		if f.Unsupported {
			continue
		}
		for _, p := range f.Paths {
			if !seen[p] && !strings.Contains(p, "*") {
				seen[p] = true
				paths = append(paths, strings.Split(p, "."))
			}
		}
	}
	slices.SortFunc(paths, func(a, b []string) int {
		return slices.CompareFunc(a, b, func(x, y string) int {
			xn, xa, _ := strings.Cut(x, "(")
			yn, ya, _ := strings.Cut(y, "(")
			return cmp.Or(strings.Compare(xn, yn), cmp.Compare(argOrder(xa), argOrder(ya)))
		})
	})
	for _, p := range paths {
		fmt.Fprintln(w, strings.Join(p, "."))
	}
}

// argOrder orders a component's argument as stap's match keys: none,
// then a number, then a string.
func argOrder(arg string) int {
	switch arg {
	case "":
		return 0
	case "number)":
		return 1
	}
	return 2
}

// semanticCatalog is --semantic-keep-going's catalog of pass 2's errors,
// stap's lines for tools: "SEMANTIC_ERROR\tFILE\tLINE\tCOLUMN\tTOKEN\tMESSAGE",
// each chained note a line of its own, "-" for what an error lacks. It
// lists the errors pass 2 printed: the option does not make pass 2 go
// further than it always does (every error of the stage that found one).
func semanticCatalog(diags []*sema.Diagnostic) string {
	var b strings.Builder
	n := 0
	for _, d := range diags {
		if d.Warning {
			continue
		}
		n++
		for _, e := range append([]*sema.Diagnostic{d}, d.Chain...) {
			file, token, line, col := "-", "-", 0, 0
			if e.Tok != "" {
				file, line, col = e.Pos.File(), e.Pos.Line, e.Pos.Col
				if i, j := strings.IndexByte(e.Tok, '\''), strings.LastIndexByte(e.Tok, '\''); i >= 0 && j > i {
					token = e.Tok[i+1 : j]
				}
			}
			fmt.Fprintf(&b, "SEMANTIC_ERROR\t%s\t%d\t%d\t%s\t%s\n", file, line, col, flatten(token), flatten(e.Msg))
		}
	}
	return fmt.Sprintf("SEMANTIC_ERRORS: %d\n%sSEMANTIC_ERRORS_END\n", n, b.String())
}

// flatten turns tabs and line breaks into spaces, as stap's catalog does.
func flatten(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
