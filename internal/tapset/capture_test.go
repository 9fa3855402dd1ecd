package tapset_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/syntax"
)

// TestUserGlobalsDoNotCaptureTapset declares every name the library's code
// uses (its locals, parameters and globals) as a global array of the user's,
// used with one key, and elaborates with it a call of every library function
// and a probe on every alias the library defines, syscall.* included: were
// any tapset name to resolve to the user's global, its scalar use would
// disagree with the user's arity ("inconsistent arity" at the tapset's line).
func TestUserGlobalsDoNotCaptureTapset(t *testing.T) {
	names, aliases := libraryNames(t)
	var script strings.Builder
	fmt.Fprintf(&script, "global %s\n", strings.Join(names, ", "))
	script.WriteString("probe never {\n")
	for _, n := range names {
		fmt.Fprintf(&script, "\t%s[1] = 1\n", n)
	}
	script.WriteString("}\n")
	var user, kernel strings.Builder
	for _, sig := range signatures {
		name, result, params := splitSignature(sig)
		if missingModule(name) != "" {
			continue
		}
		call := &user
		if kernelProbeOnly[name] {
			call = &kernel
		}
		fmt.Fprintf(call, "\t%s%s\n", companions[name], callOf(name, result, params))
	}
	fmt.Fprintf(&script, "probe begin {\n%s}\n", user.String())
	fmt.Fprintf(&script, "probe kernel.trace(\"raw_syscalls:sys_enter\") {\n%s}\n", kernel.String())
	for _, a := range aliases {
		if a == "prometheus" { // livepatch.stp's, reached by the cve_* calls, is the one a script may have
			continue
		}
		fmt.Fprintf(&script, "probe %s ? { println(pp()) }\n", a)
	}
	script.WriteString("probe syscall.* { print(argstr) }\nprobe nd_syscall.*.return { print(retstr) }\n")
	prog, err := elaborate(t, script.String())
	if err != nil {
		t.Fatalf("%d user globals named as the library's names:\n%v", len(names), err)
	}
	t.Logf("%d probes, %d functions", len(prog.Probes), len(prog.Funcs))
	if len(prog.Probes) < len(aliases)/2 {
		t.Errorf("only %d probes derived from %d aliases", len(prog.Probes), len(aliases))
	}
}

// libraryNames returns every identifier of the library's functions, probes
// and aliases, and the library's alias names without wildcards.
func libraryNames(t *testing.T) (names, aliases []string) {
	t.Helper()
	stp, macros := libraryWithMacros(t)
	seen := map[string]bool{}
	add := func(n syntax.Node) {
		syntax.Walk(n, func(n syntax.Node) bool {
			if id, ok := n.(*syntax.Ident); ok {
				seen[id.Name] = true
			}
			return true
		})
	}
	for _, src := range stp {
		f, err := syntax.Parse(src, &syntax.Config{Tapset: true, Arch: "x86_64", Macros: macros})
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *syntax.FuncDecl:
				for _, p := range d.Params {
					seen[p.Name] = true
				}
				add(d.Body)
			case *syntax.AliasDecl:
				add(d.Body)
				for _, n := range d.Names {
					if pp := syntax.ProbePointString(n); !strings.Contains(pp, "*") {
						aliases = append(aliases, pp)
					}
				}
			case *syntax.ProbeDecl:
				add(d.Body)
			case *syntax.GlobalDecl:
				seen[d.Name] = true
			}
		}
	}
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 100 || len(aliases) < 100 {
		t.Fatalf("only %d names and %d aliases in the library", len(names), len(aliases))
	}
	return names, aliases
}
