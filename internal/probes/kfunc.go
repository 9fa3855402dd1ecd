package probes

import (
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/target"
)

// kernel.function("NAME") and .call, .exported, .return; module("M")
// .function("NAME") likewise; kprobe.function("NAME"), .return and
// .return.maxactive(N), kprobe.module("M").function("NAME"): probes on
// kernel functions. NAME may hold wildcards; the point expands to one
// probe per traceable function it matches (kernel.Functions: what tracefs's
// available_filter_functions lists, so notrace and blacklisted functions
// are never offered), named as stap's pp() names it,
// kernel.function("vfs_read").
//
// stap reads a function's parameters from DWARF; bpftap reads them from
// the kernel's BTF, which every modern kernel publishes, so $file, $count
// and their member chains need nothing installed. The attach kind is
// chosen per point, the cheapest the kernel offers:
//
//   - fentry/fexit (a BPF trampoline): the arguments are the context's
//     words, typed by BTF, and fexit sees them beside the return value;
//
//   - kprobes/kretprobes otherwise: the arguments are registers of the
//     calling convention (package arch), the return value rax.
//
//   - a wildcard that matches more than multiFunctions functions takes
//     kprobe_multi links where the kernel has them (one program and one
//     link for them all, told apart by the attach cookie), as kprobes do.
//
// kprobe.* points are stap's dwarfless probes, whose scripts read
// registers (register(), int_arg(n)): they always take kprobes, and get
// the BTF parameters as well. Names and forms only DWARF knows
// ("vfs_read@fs/read_write.c", kernel.statement, .inline, .label) are
// refused with the reason.
func kernelFunctionFamily(k KernelInfo) *Family {
	var paths []string
	for _, base := range []string{"kernel.function(string)", "module(string).function(string)"} {
		paths = append(paths, base, base+".call", base+".return", base+".call.return",
			base+".return.maxactive(number)", base+".exported", base+".exported.return")
	}
	for _, base := range []string{"kprobe.function(string)", "kprobe.module(string).function(string)"} {
		paths = append(paths, base, base+".return", base+".return.maxactive(number)")
	}
	return &Family{Name: "kernel.function", Paths: paths, Kernel: true, Concurrent: true,
		Expand: func(p *Point) ([]*Point, error) { return expandKernelFunction(k, p) }}
}

// kernelFunctionCall is one probe point on a kernel function: which, and
// what the user's point asked of it.
type kernelFunctionCall struct {
	fn  *kernel.Function
	ret bool
	// kprobes says why the point takes kprobes where trampolines would
	// do ("": it need not): kprobe.* wants registers; a wide wildcard
	// without kprobe_multi detaches far faster from kprobes.
	kprobes   string
	maxActive int
	// set: the point's functions share a kprobe_multi link.
	set *attach.Set
}

// multiFunctions is the most functions a point probes with a program
// each: beyond, one kprobe_multi link serves them all (a BPF trampoline
// or a kprobe per function costs a program load and an attach each, many
// milliseconds for hundreds of functions).
const multiFunctions = 8

func expandKernelFunction(k KernelInfo, p *Point) ([]*Point, error) {
	pattern, _ := p.Arg("function").(*syntax.StringLit)
	if pattern == nil {
		return nil, errorf("%s needs a function name", p.Name())
	}
	name, file, inFile := strings.Cut(pattern.Value, "@")
	matched, err := matchFunctions(k, p, name, inFile)
	if err == nil && inFile {
		matched, err = kernelDeclaredIn(k, matched, file)
	}
	if err != nil {
		return nil, err
	}
	if hasComponent(p, "exported") {
		if matched, err = exportedOnly(k, matched, pattern.Value); err != nil {
			return nil, err
		}
	}
	matched, shared := unshared(matched)
	if len(matched) == 0 {
		return nil, errorf("every kernel function %q matches shares its name with another (static functions of different files): bpftap attaches by name and cannot tell them apart", pattern.Value)
	}
	call := kernelFunctionCall{ret: hasComponent(p, "return")}
	if p.Components[0].Name == "kprobe" {
		call.kprobes = "kprobe.function: registers wanted"
	}
	if n, ok := p.Number("maxactive"); ok {
		call.maxActive = int(n)
	}
	switch {
	case len(matched) <= multiFunctions:
	case call.maxActive == 0 && k.Attachable(&attach.Point{Kind: multiKprobeKind(call.ret), Symbols: []string{matched[0].Name}}) == nil:
		call.set = &attach.Set{}
	case call.kprobes == "":
		call.kprobes = fmt.Sprintf("%d functions and no kprobe_multi: a kprobe detaches in milliseconds, a trampoline waits for the kernel to rebuild it", len(matched))
	}
	// The entries a set's returns pair with share a link of their own.
	var entrySet *attach.Set
	if call.set != nil && call.ret {
		entrySet = &attach.Set{}
	}
	var out []*Point
	var plans []string
	for _, fn := range matched {
		call := call
		call.fn = fn
		if fn.Addr != 0 {
			call.set, call.kprobes = nil, "one of several functions of its name: a kprobe from _stext"
		}
		a, plan, err := kernelFunctionPoint(k, call)
		if err != nil {
			return nil, err
		}
		q := concretePoint(p, "function", fn.Name)
		if fn.Module != "" {
			q = concretePoint(q, "module", fn.Module)
		}
		q.Context = kernelFunctionContext(k, a, fn)
		if call.ret {
			entry := call
			entry.ret = false
			if call.set != nil {
				entry.set = entrySet
			}
			q.Context.entry = func() *Entry { return kernelFunctionEntry(k, q, entry) }
		}
		if len(plans) < 3 {
			plans = append(plans, plan)
		}
		out = append(out, q)
	}
	out[0].Plan = fmt.Sprintf("%s: %d function(s): %s", p.Name(), len(out), strings.Join(plans, "; "))
	if len(shared) > 0 {
		out[0].Plan += fmt.Sprintf("; left out %d whose names several functions share, which the kernel cannot attach by name: %s",
			len(shared), strings.Join(shared[:min(len(shared), 4)], ", "))
	}
	return out, nil
}

// kernelFunctionDebug is the DWARF of fn, a kernel function on a kprobe
// at a that the BTF does not describe (a compiler's copy, foo.part.0 or
// foo.isra.0, a function of a kernel without BTF): its $vars and $return,
// where the kernel's debug package is installed; nil for the others.
func kernelFunctionDebug(k KernelInfo, a *attach.Point, fn *kernel.Function) *debugFunc {
	if fn.Module != "" || a.Kind.BTFTyped() || fn.Addr == 0 && inBTF(k, fn.Name) {
		return nil
	}
	return &debugFunc{open: dwarfOf(k, ""), object: "the kernel", fn: elfsym.Func{Name: fn.Name, Addr: fn.Addr}, regs: arch.Host()}
}

// dwarfOf opens the DWARF of the kernel (module "") or of its module.
func dwarfOf(k KernelInfo, module string) func() (*debuginfo.File, error) {
	return func() (*debuginfo.File, error) { return k.Debuginfo(module) }
}

// inBTF tells whether the kernel's BTF describes the function name (a
// lookup, where prototype decodes the prototype).
func inBTF(k KernelInfo, name string) bool {
	b, err := k.BTF()
	if err != nil {
		return false
	}
	_, ok := b.FuncID(name)
	return ok
}

// kernelDeclaredIn keeps the functions of fns that the DWARF of the
// kernel, or of their module, declares in the source files file matches
// (FILE or FILE:LINE of kernel.function("F@FILE:LINE"), FILE a
// debuginfo.FilePattern), as stap chooses them. A compiler's copy of a
// function (name.isra.0, name.constprop.0) is declared as the function.
func kernelDeclaredIn(k KernelInfo, fns []*kernel.Function, file string) ([]*kernel.Function, error) {
	file, line, err := fileAndLine(file)
	if err != nil {
		return nil, err
	}
	byModule := map[string][]*kernel.Function{}
	for _, fn := range fns {
		byModule[fn.Module] = append(byModule[fn.Module], fn)
	}
	var declared []*kernel.Function
	var read []string
	for _, module := range slices.Sorted(maps.Keys(byModule)) {
		dbg, err := k.Debuginfo(module)
		if err != nil {
			return nil, errorf("cannot tell which functions %s defines: %v", file, err)
		}
		decls, err := dbg.Declared(file, line)
		if err != nil {
			return nil, errorf("cannot tell which functions %s defines: %v", file, err)
		}
		names := map[string]bool{}
		for _, d := range decls {
			names[d.Name] = true
		}
		in := slices.DeleteFunc(byModule[module], func(fn *kernel.Function) bool {
			base, _, _ := strings.Cut(fn.Name, ".")
			return !names[base]
		})
		declared = append(declared, placeShared(dbg, in, decls)...)
		read = append(read, fmt.Sprintf("%s's DWARF (%s)", dbg.Path, dbg.DebugPath))
	}
	if len(declared) == 0 {
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (%s declares no traceable function of those matched in a file matching %s%s)", strings.Join(read, ", "), file,
				atLine(line))
		}}
	}
	return declared, nil
}

// placeShared gives each function of fns whose name other functions of
// the kernel share (static functions of different files: the kernel's
// symbol table has several) the address of each declared one of decls
// named so: a kprobe by its name would reach another (before Linux 6.6
// and its backports, which refuse the name).
func placeShared(dbg *debuginfo.File, fns []*kernel.Function, decls map[uint64]debuginfo.Declaration) []*kernel.Function {
	var out []*kernel.Function
	text, hasText := dbg.DataSymbol("_stext")
	for _, fn := range fns {
		if len(dbg.FunctionSymbols(fn.Name)) < 2 || !hasText {
			out = append(out, fn)
			continue
		}
		for _, addr := range slices.Sorted(maps.Keys(decls)) {
			if name, start, _, ok := dbg.FunctionSymbolAt(addr); !ok || name != fn.Name || start != addr || addr < text {
				continue
			}
			out = append(out, &kernel.Function{Name: fn.Name, Addr: addr, FromText: addr - text})
		}
	}
	return out
}

// exportedOnly keeps the functions exported to modules (.exported: the
// kernel's symbol export table, kernel.Exported).
func exportedOnly(k KernelInfo, fns []*kernel.Function, pattern string) ([]*kernel.Function, error) {
	exported, err := k.Exported()
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot read the kernel's exported symbols: %v", err)}
	}
	var keep []*kernel.Function
	for _, fn := range fns {
		if exported[fn.Name] {
			keep = append(keep, fn)
		}
	}
	if len(keep) == 0 {
		if _, _, err := kernelFunctionPoint(k, kernelFunctionCall{fn: fns[0]}); err != nil {
			return nil, err // a kernel that probes no function says why first
		}
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (of the functions %q matches, the kernel exports none: its export table, __ksymtab_NAME in /proc/kallsyms, lists none of them)", pattern)
		}}
	}
	return keep, nil
}

// unshared splits a wildcard's functions into those a probe can attach to
// by name and the names of those it cannot (Function.Shared).
func unshared(fns []*kernel.Function) ([]*kernel.Function, []string) {
	var keep []*kernel.Function
	var shared []string
	for _, fn := range fns {
		if fn.Shared {
			shared = append(shared, fn.String())
		} else {
			keep = append(keep, fn)
		}
	}
	return keep, shared
}

// kernelFunctionEntry is the Entry the @entry of return point q pairs
// with: its function's entry, on the kind its own probe would take, named
// by q's components up to the function (kernel.function("vfs_read")).
func kernelFunctionEntry(k KernelInfo, q *Point, call kernelFunctionCall) *Entry {
	a, _, err := kernelFunctionPoint(k, call)
	if err != nil {
		return nil
	}
	comps := q.Components
	for i, c := range comps {
		if c.Name == "function" {
			comps = comps[:i+1]
			break
		}
	}
	return &Entry{Context: kernelFunctionContext(k, a, call.fn), Name: ComponentsString(comps)}
}

// kernelFunctionContext is the context of a probe on fn at a: its
// parameters typed by BTF, or by the kernel's DWARF where the BTF does not
// describe fn (kernelFunctionDebug).
func kernelFunctionContext(k KernelInfo, a *attach.Point, fn *kernel.Function) *Context {
	c := &Context{kernel: k, Attach: a, user: kernelFunctionDebug(k, a, fn)}
	refuseByValue(c)
	return c
}

func hasComponent(p *Point, name string) bool {
	for _, c := range p.Components {
		if c.Name == name {
			return true
		}
	}
	return false
}

// matchFunctions returns the kernel's traceable functions that pattern
// matches, of the module p names (module("M"), a glob too) or of the
// kernel itself. A plain name the kernel's BTF describes is taken as it
// is, without reading the list of traceable functions (tens of thousands
// of lines that the kernel makes up when they are read): a function that
// cannot be traced fails when its probe attaches, with the kernel's
// reason. With clones, a compiler's copy (name.part.0, name.isra.0) is
// matched by its name's base too: the DWARF names it so (F@FILE).
func matchFunctions(k KernelInfo, p *Point, pattern string, clones bool) ([]*kernel.Function, error) {
	if p.Arg("module") == nil && !clones && !strings.ContainsAny(pattern, "*?[") && inBTF(k, pattern) {
		return []*kernel.Function{{Name: pattern}}, nil
	}
	fns, err := k.Functions()
	if err != nil {
		return nil, &Error{Msg: fmt.Sprintf("cannot list the kernel's functions: %v", err)}
	}
	module := ""
	if m, ok := p.Arg("module").(*syntax.StringLit); ok {
		module = m.Value
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, errorf("bad function pattern %q: %v", pattern, err)
	}
	inModule := func(fn *kernel.Function) bool {
		ok, _ := path.Match(module, fn.Module)
		return ok || module == "" && fn.Module == ""
	}
	var matched []*kernel.Function
	for _, fn := range fns {
		ok, _ := path.Match(pattern, fn.Name)
		if base, _, cloned := strings.Cut(fn.Name, "."); !ok && clones && cloned {
			ok, _ = path.Match(pattern, base)
		}
		if ok && inModule(fn) {
			matched = append(matched, fn)
		}
	}
	if len(matched) == 0 && module != "" && !strings.ContainsAny(pattern, "*?[") {
		// A module not loaded has no functions: a kernel that probes no
		// function says so first.
		if _, _, err := kernelFunctionPoint(k, kernelFunctionCall{fn: &kernel.Function{Name: pattern, Module: module}}); err != nil {
			return nil, err
		}
	}
	if len(matched) == 0 {
		cause, absence := functionAbsence(fns, module, pattern)
		return nil, &Error{Msg: "no match", Cause: cause, Absence: absence, detail: func() string {
			var names []string
			for _, fn := range fns {
				if inModule(fn) {
					names = append(names, fn.Name)
				}
			}
			return similarNames("functions", pattern, names)
		}}
	}
	return matched, nil
}

// functionAbsence says why the kernel's functions fns have none that
// pattern names in module (a pattern; "" for the kernel's own): module is
// not loaded (the setup's cause, shown with the error), or it or the
// kernel has no such function (the absence).
func functionAbsence(fns []*kernel.Function, module, pattern string) (cause, absence string) {
	what := named("function", pattern)
	if module == "" {
		return "", "this kernel has no " + what
	}
	for _, fn := range fns {
		if ok, _ := path.Match(module, fn.Module); ok {
			return "", fmt.Sprintf("module %s has no %s", module, what)
		}
	}
	return fmt.Sprintf("module %s is not loaded", module), ""
}

// named is "KIND PATTERN", or "KIND matching PATTERN" where it has a
// wildcard: what an absence says is missing.
func named(kind, pattern string) string {
	if strings.ContainsAny(pattern, "*?[") {
		return kind + " matching " + pattern
	}
	return kind + " " + pattern
}

// programAbsence is what a program lacks when none of its KIND (function,
// marker) matches pattern: an Error.Absence.
func programAbsence(file, kind, pattern string) string {
	return file + " has no " + named(kind, pattern)
}

// kernelFunctionPoint is the attach point of a probe on call.fn, on the
// cheapest kind the kernel offers, and a line for -v saying which.
func kernelFunctionPoint(k KernelInfo, call kernelFunctionCall) (*attach.Point, string, error) {
	proto := prototype(k, call.fn)
	if call.set != nil {
		a, err := kprobePoint(call, proto)
		return a, fmt.Sprintf("%s on %s and the point's other functions (one link: more than %d functions)", a.Kind, call.fn, multiFunctions), err
	}
	var refusals []string
	if call.kprobes == "" && call.maxActive == 0 && proto != nil && trampolineTakes(k, proto) {
		a := trampolinePoint(call, proto)
		err := k.Attachable(a)
		if err == nil {
			return a, fmt.Sprintf("%s on %s (a BPF trampoline: arguments typed by BTF)", a.Kind, call.fn), nil
		}
		refusals = append(refusals, err.Error())
	}
	a, err := kprobePoint(call, proto)
	if err != nil {
		return nil, "", err
	}
	if err := k.Attachable(a); err != nil {
		refusals = append(refusals, err.Error())
		return nil, "", &Error{Msg: fmt.Sprintf("cannot probe kernel function %s", call.fn),
			Cause: strings.Join(refusals, "; ")}
	}
	why := call.kprobes
	switch {
	case why != "":
	case len(refusals) > 0:
		why = refusals[0]
	case proto == nil:
		why = "no BTF prototype for a trampoline"
	case call.maxActive != 0:
		why = "maxactive bounds a kretprobe"
	default:
		why = "a struct or union passed by value, or more than 6 arguments: no trampoline"
	}
	return a, fmt.Sprintf("%s on %s (%s)", a.Kind, call.fn, why), nil
}

// signature is a function's prototype with the BTF that describes its
// types: the kernel's, or its module's (whose type IDs continue the
// kernel's).
type signature struct {
	*kernel.Prototype
	btf *kernel.BTF
}

// prototype is fn's prototype, from its module's BTF for a module's
// function; nil when the BTF does not describe it.
func prototype(k KernelInfo, fn *kernel.Function) *signature {
	if fn.Addr != 0 { // its name is others' too: which the BTF's is is not known
		return nil
	}
	b, err := k.BTF()
	if fn.Module != "" {
		b, err = k.ModuleBTF(fn.Module)
	}
	if err != nil {
		return nil
	}
	proto, err := b.Prototype(fn.Name)
	if err != nil {
		return nil
	}
	return &signature{proto, b}
}

// trampolineTakes tells whether a BPF trampoline can call a program on a
// function of prototype proto: at most trampolineArgs arguments, none of
// them, nor the value returned, a struct or union passed by value (the
// verifier refuses those on the kernels bpftap is tested on, 6.1 and
// 6.12), nor, before Linux 5.17, a pointer to a scalar (those verifiers
// refuse a program that reads it), nor a pointer the verifier does not let
// a program read at all (unreadablePointer). A function it cannot take
// gets a kprobe.
func trampolineTakes(k KernelInfo, proto *signature) bool {
	if len(proto.Params) > trampolineArgs {
		return false
	}
	scalarPointers := k.Has(target.TracingScalarPointers)
	for _, id := range append([]kernel.TypeID{proto.Return}, paramTypes(proto.Params)...) {
		u, err := proto.btf.Underlying(id)
		if err != nil {
			continue
		}
		if u.Kind == kernel.KindStruct || u.Kind == kernel.KindUnion || !scalarPointers && pointsToScalar(proto.btf, u) ||
			unreadablePointer(proto.btf, u) {
			return false
		}
	}
	return true
}

// pointsToScalar tells whether t is a pointer to an integer, an enum or
// a float (through typedefs and qualifiers).
func pointsToScalar(b *kernel.BTF, t *kernel.Type) bool {
	if t.Kind != kernel.KindPtr {
		return false
	}
	to, err := b.Underlying(t.Target)
	return err == nil && (to.Kind == kernel.KindInt || to.Kind == kernel.KindEnum || to.Kind == kernel.KindFloat)
}

// unreadablePointer tells whether t is a pointer that a trampoline's
// program may not read: the verifier takes a pointer to void, to an
// integer or to a struct or union, and refuses one to anything else, a
// function (generic_block_bmap's get_block_t *), a pointer, an enum
// ("arg type is not a struct").
func unreadablePointer(b *kernel.BTF, t *kernel.Type) bool {
	if t.Kind != kernel.KindPtr || t.Target == 0 {
		return false
	}
	to, err := b.Underlying(t.Target)
	if err != nil {
		return false
	}
	switch to.Kind {
	case kernel.KindVoid, kernel.KindInt, kernel.KindStruct, kernel.KindUnion:
		return false
	}
	return true
}

// trampolineArgs is the most arguments an x86-64 BPF trampoline passes
// on Linux 6.1 (later kernels take up to 12).
const trampolineArgs = 6

func paramTypes(params []kernel.Param) []kernel.TypeID {
	ids := make([]kernel.TypeID, len(params))
	for i, p := range params {
		ids[i] = p.Type
	}
	return ids
}

// paramLocal prefixes the -p2 names of a kernel function's parameters.
const paramLocal = "__param_"

// trampolinePoint is the fentry (fexit for a return) point of call: the
// arguments are args[] words, the return value the word after them.
func trampolinePoint(call kernelFunctionCall, proto *signature) *attach.Point {
	a := &attach.Point{Kind: attach.Fentry, Event: call.fn.Name, Module: call.fn.Module, BTFID: proto.Func,
		Func: &attach.Func{Name: call.fn.Name, Words: len(proto.Params)}}
	a.Args = attach.Words(proto.Params, paramLocal)
	typeWords(proto.btf, a.Args)
	if call.ret {
		a.Kind = attach.Fexit
		a.Func.Return = &attach.Loc{Offset: 8 * len(proto.Params), Size: 8}
		a.Args = append(a.Args, returnArg(proto, a.Func)...)
	}
	return a
}

// multiKprobeKind is the kind of a point whose functions share a link.
func multiKprobeKind(ret bool) attach.Kind {
	if ret {
		return attach.KretprobeMulti
	}
	return attach.KprobeMulti
}

// kprobePoint is the kprobe (kretprobe for a return) point of call, or
// of its call.set's kprobe_multi link: the
// arguments in the registers of the calling convention (those past the
// registers, on the stack, are not offered), at entry only; the return
// value in the return register.
func kprobePoint(call kernelFunctionCall, proto *signature) (*attach.Point, error) {
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	a := &attach.Point{Kind: attach.Kprobe, Event: call.fn.Name, Module: call.fn.Module, Regs: true,
		Func: &attach.Func{Name: call.fn.Name}}
	if call.fn.Addr != 0 { // one of several functions of the name (placeShared)
		a.Event, a.Offset, a.Func.FromEvent = "_stext", call.fn.FromText, true
	}
	if call.ret {
		a.Kind, a.MaxActive = attach.Kretprobe, call.maxActive
		a.Func.Return = &attach.Loc{Offset: regs.Return, Size: 8}
	}
	if call.set != nil {
		a.Kind, a.Set = multiKprobeKind(call.ret), call.set
	}
	switch {
	case proto == nil && call.ret: // the register, typed by the DWARF if any
		a.Args = []attach.Arg{{Name: "return", Local: "__return", Loc: *a.Func.Return}}
		return a, nil
	case proto == nil:
		return a, nil
	case call.ret:
		a.Args = returnArg(proto, a.Func)
		return a, nil
	}
	a.Args = placeParams(proto, regs)
	typeWords(proto.btf, a.Args)
	return a, nil
}

// placeParams gives each parameter of proto that the calling convention
// of regs passes in one register that register. A structure or union
// passed by value, or a 16-byte integer, is Unavailable (its registers,
// or the stack, hold it whole, which a kprobe does not read as one
// value), but takes the registers it takes, so that the parameters after
// it are placed; those the stack holds are left out.
func placeParams(proto *signature, regs *arch.Regs) []attach.Arg {
	var args []attach.Arg
	next := 0 // the next argument register
	for _, param := range proto.Params {
		words, aggregate := paramWords(proto.btf, param.Type)
		if words == 1 {
			if next == len(regs.FuncArgs) {
				break
			}
			args = append(args, attach.Arg{Name: param.Name, Type: param.Type, Local: paramLocal + param.Name,
				Loc: attach.Loc{Offset: regs.FuncArgs[next], Size: 8}})
			next++
			continue
		}
		if !aggregate && regs.StackEndsRegisters { // AAPCS64: a 16-byte integer starts at an even register
			next += next % 2
		}
		switch {
		case words > 2 && regs.AggregateByReference:
			next = min(next+1, len(regs.FuncArgs))
		case words > 2: // on the stack
		case next+words <= len(regs.FuncArgs):
			next += words
		case regs.StackEndsRegisters:
			next = len(regs.FuncArgs)
		}
		args = append(args, attach.Arg{Name: param.Name, Unavailable: true})
	}
	return args
}

// paramWords is how many 8-byte words a parameter of type t takes, and
// whether t is a structure or union. (A 16-byte aligned structure, whose
// registers AAPCS64 starts at an even number, is not in the kernel's
// interfaces.)
func paramWords(b *kernel.BTF, t kernel.TypeID) (int, bool) {
	u, err := b.Underlying(t)
	if err != nil {
		return 1, false
	}
	switch u.Kind {
	case kernel.KindStruct, kernel.KindUnion:
		return (int(u.Size) + 7) / 8, true
	case kernel.KindInt:
		return max(1, (int(u.Size)+7)/8), false
	}
	return 1, false
}

// refuseByValue says why a kprobe's context has no $param where kprobePoint
// could not place it.
func refuseByValue(c *Context) {
	for _, arg := range c.Attach.Args {
		if arg.Unavailable {
			c.refusedVar("$"+arg.Name, fmt.Sprintf("cannot read '$%s' of %s: it is a structure, a union or a 16-byte integer passed by value, "+
				"which bpftap does not read from a kprobe's registers", arg.Name, c.Attach.Func.Name))
		}
	}
}

// returnArg is $return of fn, typed by the prototype, where fn.Return
// holds it; none for a void function, which it marks so.
func returnArg(proto *signature, fn *attach.Func) []attach.Arg {
	if proto.Return == 0 {
		fn.Void = true
		return nil
	}
	ret := []attach.Arg{{Name: "return", Type: proto.Return, Local: "__return", Loc: *fn.Return}}
	typeWords(proto.btf, ret)
	return ret
}
