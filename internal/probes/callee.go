package probes

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/syntax"
)

// .callee("G"), .callee("G").call, .callee("G").return, .callees and
// .callees(1) on kernel.function("F"), module("M").function("F") and
// process("P").function("F"): a probe on each function G (a wildcard;
// .callees is .callee("*")) that a function F calls, which runs only when
// G was called from F, as stap's. The calls are those F's DWARF describes
// (DW_TAG_call_site: GCC 4.7 and later at -O1 and up; no call through a
// pointer, no tail call); a copy of G the compiler inlined into F is
// probed where it starts, as .inline probes it (it runs in F alone; no
// .return). For a call, the probe is on G itself, its $vars G's, and its
// prologue lets it through only when G returns to one of F's calls of it:
// in the kernel, when caller_addr() is such a call's return address in
// the running kernel (the debug file's plus where the kernel or module
// was loaded); in a program, when the return address (on the stack at
// x86-64's entry, in arm64's link register) lies as far from G's entry as
// the DWARF says (the two move together when a program is loaded
// elsewhere), and at the return when the address returned to does. stap's
// deeper .callees(N) (N callers each checked) is refused. The concrete
// point names F and G: kernel.function("ksys_read").callee("vfs_read").

// calleePaths are the callee forms on the function point base.
func calleePaths(base string) []string {
	callee := base + ".callee(string)"
	return []string{callee, callee + ".call", callee + ".return", base + ".callees", base + ".callees(number)"}
}

func kernelCalleeFamily(k KernelInfo) *Family {
	var paths []string
	for _, base := range []string{"kernel.function(string)", "module(string).function(string)"} {
		paths = append(paths, calleePaths(base)...)
	}
	return &Family{Name: "kernel.function.callee", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return kernelCallees(k, p) }}
}

func processCalleeFamily(k KernelInfo, cfg Config, objects *objectCache) *Family {
	var paths []string
	for _, process := range []string{"process(string)", "process", "process(string).library(string)", "process.library(string)"} {
		paths = append(paths, calleePaths(process+".function(string)")...)
	}
	return &Family{Name: "process.function.callee", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) {
			return eachFile(p, cfg, objects, func(path string, prologue *syntax.Block) ([]*Point, error) {
				return userCallees(k, objects, p, path, prologue)
			})
		}}
}

// calleeQuery is what a callee point asks: the callers' pattern, the
// callees', whether the callee's return is probed, and whether only its
// calls are (.call and .return: no inlined copy, as stap's .call).
type calleeQuery struct {
	callers, callees string
	ret, callsOnly   bool
}

// calleeQueryOf reads point p's callee query.
func calleeQueryOf(p *Point) (calleeQuery, error) {
	q := calleeQuery{callers: p.Arg("function").(*syntax.StringLit).Value, callees: "*", ret: hasComponent(p, "return")}
	q.callsOnly = q.ret || hasComponent(p, "call")
	if lit, ok := p.Arg("callee").(*syntax.StringLit); ok {
		q.callees = lit.Value
	}
	if n, ok := p.Number("callees"); ok && n != 1 {
		return q, errorf("cannot probe %s: bpftap probes a function's own callees (.callees, .callees(1)), not theirs in turn", p.Name())
	}
	if strings.Contains(q.callers, "@") || strings.Contains(q.callees, "@") {
		return q, errorf("cannot probe %s: bpftap takes the caller and the callee by name (function(\"F\").callee(\"G\")), without a file", p.Name())
	}
	return q, nil
}

// matches tells whether the callee name is one the query asks for.
func (q calleeQuery) matches(name string) bool {
	ok, _ := filepath.Match(q.callees, name)
	return ok
}

// calls are the call sites of a caller by callee (inlined copies apart).
type calls struct {
	returns map[callee][]uint64
	inlined []calleeSite
}

// callee is a function called: its DWARF name, and its entry where the
// DWARF defines it (CallSite.Entry).
type callee struct {
	name  string
	entry uint64
}

// callees are the keys of returns, by name and entry.
func (c calls) callees() []callee {
	return slices.SortedFunc(maps.Keys(c.returns), func(a, b callee) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.entry, b.entry))
	})
}

// calleeSite is a callee's inlined copy in a caller.
type calleeSite struct {
	caller elfsym.Func
	inline *debuginfo.Function
}

// collect reads the call sites of the caller fn (its DWARF entry) that
// the query asks for. A caller the DWARF does not describe (an assembler
// function) has none when a wildcard matched it.
func (q calleeQuery) collect(p *Point, dbg *debuginfo.File, fn elfsym.Func) (calls, error) {
	var c calls
	sites, err := dbg.CallSites(fn.Addr, q.matches)
	switch {
	case errors.Is(err, debuginfo.ErrNoFunction) && strings.ContainsAny(q.callers, "*?["):
		return c, nil
	case err != nil:
		return c, errorf("cannot probe %s: the calls of %s: %v", p.Name(), fn.Name, err)
	}
	for _, s := range sites {
		switch {
		case s.Inline != nil && !q.callsOnly:
			c.inlined = append(c.inlined, calleeSite{fn, s.Inline})
		case s.Inline == nil:
			if c.returns == nil {
				c.returns = map[callee][]uint64{}
			}
			key := callee{s.Callee, s.Entry}
			c.returns[key] = append(c.returns[key], s.Return)
		}
	}
	return c, nil
}

// none says why a callee point has no probe.
func (q calleeQuery) none(where string) error {
	return &Error{Msg: "no match", detail: func() string {
		what := "call"
		if !q.callsOnly {
			what = "call or inlined copy"
		}
		return fmt.Sprintf(" (the DWARF of %s describes no %s of a function matching %s in a function matching %s)", where, what, q.callees, q.callers)
	}}
}

// calleeName is the point's name for the callee of caller: its
// function and callee components those names (.callees becomes
// .callee("G")).
func calleeName(p *Point, caller, callee string) []*syntax.Component {
	q := concretePoint(p, "function", caller)
	var comps []*syntax.Component
	for _, c := range q.Components {
		if c.Name == "callees" {
			c = &syntax.Component{Pos: c.Pos, Name: "callee"}
		}
		if c.Name == "callee" {
			c = &syntax.Component{Pos: c.Pos, Name: "callee", Arg: &syntax.StringLit{Typed: syntax.Typed{Pos: c.Pos}, Value: callee, Raw: callee}}
		}
		comps = append(comps, c)
	}
	return comps
}

// guarded is the prologue that lets a callee's probe through when cond
// holds, after the file's prologue (nil: none).
func guarded(file *syntax.Block, cond string) (*syntax.Block, error) {
	guard, err := parsePrologue("callee's caller check", fmt.Sprintf("if (!(%s)) next\n", cond))
	if err != nil || file == nil {
		return guard, err
	}
	return &syntax.Block{Pos: guard.Pos, Stmts: []syntax.Stmt{file, guard}}, nil
}

// anyOf is the condition that expr is one of values (hex constants).
func anyOf(expr string, values []uint64) string {
	var terms []string
	for _, v := range slices.Compact(slices.Sorted(slices.Values(values))) {
		terms = append(terms, fmt.Sprintf("%s == %#x", expr, v))
	}
	return strings.Join(terms, " || ")
}

// kernelCallees expands a kernel callee point.
func kernelCallees(k KernelInfo, p *Point) ([]*Point, error) {
	q, err := calleeQueryOf(p)
	if err != nil {
		return nil, err
	}
	module, err := dwarfModule(p)
	if err != nil {
		return nil, err
	}
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	file, err := k.Debuginfo(module)
	if err != nil {
		return nil, errorf("cannot probe %s: %v", p.Name(), err)
	}
	dbg := kernelDwarf{file, module}
	callers, err := matchFunctions(k, p, q.callers, false)
	if err != nil {
		return nil, err
	}
	var out []*Point
	var skipped error // a callee of many that cannot be probed (a notrace function)
	for _, caller := range callers {
		for _, entry := range dbg.FunctionSymbols(caller.Name) {
			fn := elfsym.Func{Name: caller.Name, Addr: entry}
			c, err := q.collect(p, dbg.File, fn)
			if err != nil {
				return nil, err
			}
			points, err := kernelCalleeProbes(k, p, q, dbg, regs, fn, c, &skipped)
			if err != nil {
				return nil, err
			}
			out = append(out, points...)
		}
	}
	if len(out) == 0 {
		return nil, cmp.Or(skipped, q.none(fmt.Sprintf("%s (%s)", dbg.Path, dbg.DebugPath)))
	}
	return out, nil
}

// kernelCalleeProbes are the probes of point p on the callees c of the
// kernel function caller. A callee a wildcard matched that cannot be
// probed is left out, the first such error in skipped.
func kernelCalleeProbes(k KernelInfo, p *Point, q calleeQuery, dbg kernelDwarf, regs *arch.Regs, caller elfsym.Func, c calls, skipped *error) ([]*Point, error) {
	var out []*Point
	for _, s := range c.inlined {
		site := kernelSite{addr: s.inline.Entry, fn: caller, inline: s.inline}
		point, why, err := site.probe(k, concretePoint(p, "", ""), dbg, regs, len(out) == 0)
		switch {
		case err != nil:
			return nil, err
		case why != "":
			continue
		}
		point.Components = calleeName(p, caller.Name, s.inline.Name)
		out = append(out, point)
	}
	for _, callee := range c.callees() {
		var loaded []uint64
		for _, ret := range c.returns[callee] {
			// a call that ends its section returns to the section's end
			addr, err := dbg.Loaded(ret - 1)
			if err != nil {
				return nil, errorf("cannot probe %s: where the kernel holds %s's call of %s: %v", p.Name(), caller.Name, callee.name, err)
			}
			loaded = append(loaded, addr+1)
		}
		guard, err := guarded(nil, anyOf("caller_addr()", loaded))
		if err != nil {
			return nil, err
		}
		points, err := kernelCalleeFunction(k, p, dbg, callee)
		switch {
		case err != nil && strings.ContainsAny(q.callees, "*?["):
			*skipped = cmp.Or(*skipped, err)
			continue
		case err != nil:
			return nil, err
		}
		for _, point := range points {
			point.Components, point.Prologue = calleeName(p, caller.Name, callee.name), guard
			out = append(out, point)
		}
	}
	return out, nil
}

// kernelCalleeFunction is the probe of the function point on the
// callee, its .call or .return as p asks: the function the DWARF of dbg
// defines at the callee's entry, by its symbol's name (a compiler's copy,
// foo.isra.0, has its own), in dbg's module; where the call names the
// callee's abstract entry (a function inlined elsewhere too) or a
// declaration, the module's one function of its name, else the kernel's
// (a module calls the kernel's).
func kernelCalleeFunction(k KernelInfo, p *Point, dbg kernelDwarf, c callee) ([]*Point, error) {
	name, module, entry := c.name, "", c.entry
	if addrs := dbg.FunctionSymbols(c.name); entry == 0 && dbg.module != "" && len(addrs) == 1 {
		entry = addrs[0]
	}
	if entry != 0 {
		symbol, start, shared, ok := dbg.FunctionSymbolAt(entry)
		if !ok || shared || start != entry {
			return nil, errorf("cannot probe %s's call of %s: %s", p.Name(), c.name, unreachable(symbol, ok && start == entry))
		}
		name, module = symbol, dbg.module
	}
	at := p.Components[0].Pos
	fn := &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: name, Raw: name}
	comps := []*syntax.Component{{Pos: at, Name: "kernel"}, {Pos: at, Name: "function", Arg: fn}}
	if module != "" {
		comps[0] = &syntax.Component{Pos: at, Name: "module", Arg: &syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: module, Raw: module}}
	}
	for _, c := range p.Components {
		if c.Name == "call" || c.Name == "return" {
			comps = append(comps, c)
		}
	}
	q := *p
	q.Components = comps
	return expandKernelFunction(k, &q)
}

// userCallees expands a program's callee point on the file at path.
func userCallees(k KernelInfo, objects *objectCache, p *Point, path string, prologue *syntax.Block) ([]*Point, error) {
	q, err := calleeQueryOf(p)
	if err != nil {
		return nil, err
	}
	obj, err := objects.open(path)
	if err != nil {
		return nil, err
	}
	regs, err := debugRegisters(obj)
	if err != nil {
		return nil, err
	}
	dbg, err := objects.debug.open(path)
	if err != nil {
		return nil, errorf("cannot probe %s: %v", p.Name(), err)
	}
	direct, _ := splitIndirect(obj.Funcs)
	callers, err := elfsym.Match(direct, q.callers)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	var out []*Point
	for _, caller := range callers {
		c, err := q.collect(p, dbg, caller)
		if err != nil {
			return nil, err
		}
		points, err := userCalleeProbes(k, objects, p, prologue, obj, regs, caller, c)
		if err != nil {
			return nil, err
		}
		out = append(out, points...)
	}
	if len(out) == 0 {
		return nil, q.none(path)
	}
	return out, nil
}

// userCalleeProbes are the probes of point p on the callees c of the
// function caller of obj; a callee of another file (a library's) has
// none.
func userCalleeProbes(k KernelInfo, objects *objectCache, p *Point, prologue *syntax.Block, obj *elfsym.Object, regs *arch.Regs, caller elfsym.Func, c calls) ([]*Point, error) {
	var out []*Point
	for _, s := range c.inlined {
		site := userSite{objects: objects, obj: obj, regs: regs, fn: caller, addr: s.inline.Entry, event: s.inline.Name}
		q, err := site.probe(k, p, prologue, "function", caller.Name, len(out) == 0)
		if err != nil {
			return nil, err
		}
		q.Context.user.inline = s.inline
		q.Components = calleeName(q, caller.Name, s.inline.Name)
		out = append(out, q)
	}
	ret := hasComponent(p, "return")
	for _, callee := range c.callees() {
		// the function the DWARF defines there, else (declared only) the
		// file's of that name: a library's has none here
		i := slices.IndexFunc(obj.Funcs, func(fn elfsym.Func) bool {
			return !fn.Indirect && (fn.Addr == callee.entry || callee.entry == 0 && fn.Name == callee.name)
		})
		if i < 0 {
			continue
		}
		fn := obj.Funcs[i]
		var distances []uint64
		for _, r := range c.returns[callee] {
			distances = append(distances, r-fn.Addr)
		}
		// at the entry, the return address lies that far from the
		// entry; a return asks what its entry found
		cond := anyOf(fmt.Sprintf("%s - uaddr()", userReturnAddress(regs)), distances)
		if ret {
			cond = fmt.Sprintf("@entry(%s)", cond)
		}
		guard, err := guarded(prologue, cond)
		if err != nil {
			return nil, err
		}
		points, err := functionProbes(k, objects, p, guard, obj, "function", []elfsym.Func{fn})
		if err != nil {
			return nil, err
		}
		for _, q := range points {
			q.Components = calleeName(q, caller.Name, callee.name)
			if entry := q.Context.entry; entry != nil { // which runs the file's prologue alone
				q.Context.entry = func() *Entry {
					e := entry()
					if e != nil {
						e.Guard = syntax.Clone(prologue)
					}
					return e
				}
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// userReturnAddress reads, at a function's entry, the address it will
// return to: on the stack where the call pushed it (x86-64), else in the
// link register (arm64's x30).
func userReturnAddress(regs *arch.Regs) string {
	if regs.CallPush > 0 {
		return fmt.Sprintf("user_long(register(%q))", regs.SPName)
	}
	return `register("x30")`
}
