package probes

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/arch"
	"github.com/bpftap/bpftap/internal/elfsym"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// process("PATH").function("NAME"), .call and .return, and
// process("PATH").plt("NAME") and .return: user-space function probes (on
// the stubs of the procedure linkage table through which PATH calls NAME,
// for .plt; $$name is NAME), resolved against the ELF symbol tables of
// PATH (package elfsym;
// no debuginfo is read). PATH is a path, a command found in PATH, a
// shared library's soname, or a glob of paths (each file it matches is
// probed, as in stap); without it (process.function("NAME")) the point
// means the executable of the -c command or -x process (Config.TargetBinary).
// process("PATH").library("LIB") points probe the shared libraries LIB
// names among those PATH needs (DT_NEEDED, transitively, as the dynamic
// loader finds them: stap's "statically determined to be in use"), or the
// file LIB is when none of them matches, in PATH's processes alone: those
// running PATH (its device and inode), with -c or -x in the target's
// process hierarchy.
// NAME may hold wildcards: the point expands to one uprobe (a uretprobe for
// .return) per matching function, named in its concrete point as stap names
// it, process("/abs/path").function("scale"). Without DWARF a function has
// no named parameters: its arguments are read from the registers of the
// calling convention (int_arg(n) and friends), its return value from rax
// ($return and returnval() in .return probes).
func processFunctionFamily(k KernelInfo, cfg Config, objects *objectCache) *Family {
	var paths []string
	for _, process := range []string{"process(string)", "process", "process(string).library(string)", "process.library(string)"} {
		fn := process + ".function(string)"
		paths = append(paths, fn, fn+".call", fn+".return", fn+".label(string)", fn+".inline")
		for _, plt := range []string{process + ".plt(string)", process + ".plt"} {
			paths = append(paths, plt, plt+".return")
		}
	}
	return &Family{Name: "process.function", Paths: paths, Kernel: true,
		Expand: func(p *Point) ([]*Point, error) { return expandUprobe(k, cfg, objects, p) }}
}

// objectCache holds what the run has read of the files it probes so far,
// by path: their symbol tables and the libraries they need.
type objectCache struct {
	mu    sync.Mutex
	objs  map[string]*elfsym.Object
	libs  elfsym.LibraryCache
	debug debugCache
}

func newObjectCache() *objectCache { return &objectCache{objs: map[string]*elfsym.Object{}} }

func (c *objectCache) open(path string) (*elfsym.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.objs[path]; ok {
		return o, nil
	}
	o, err := elfsym.Open(path)
	if err != nil {
		return nil, errorf("cannot read the symbol table of %s: %v", path, err)
	}
	c.objs[path] = o
	return o, nil
}

// returnLocal is the -p2 name of a .return probe's $return.
const returnLocal = "__uretprobe_return"

func expandUprobe(k KernelInfo, cfg Config, objects *objectCache, p *Point) ([]*Point, error) {
	return eachFile(p, cfg, objects, func(path string, prologue *syntax.Block) ([]*Point, error) {
		return uprobeOnFile(k, objects, p, path, prologue)
	})
}

// uprobeOnFile expands point p on the functions of one file, its probes
// starting with prologue.
func uprobeOnFile(k KernelInfo, objects *objectCache, p *Point, path string, prologue *syntax.Block) ([]*Point, error) {
	obj, err := objects.open(path)
	if err != nil {
		return nil, err
	}
	if hasComponent(p, "inline") {
		return inlineProbes(k, objects, p, prologue, obj)
	}
	component, fns, names := "function", obj.Funcs, obj.Names
	if slices.ContainsFunc(p.Components, func(c *syntax.Component) bool { return c.Name == "plt" }) {
		component, fns, names = "plt", obj.PLT, obj.PLTNames
	}
	pattern := "*" // .plt alone is .plt("*")
	if lit, ok := p.Arg(component).(*syntax.StringLit); ok {
		pattern = lit.Value
	}
	if name, file, ok := strings.Cut(pattern, "@"); ok && component == "function" {
		if fns, err = declaredIn(objects, obj, file, fns); err != nil {
			return nil, err
		}
		pattern = name
	}
	direct, indirect := splitIndirect(fns)
	matched, err := elfsym.Match(direct, pattern)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	if len(matched) == 0 {
		return nil, &Error{Msg: "no match", Absence: programAbsence(path, map[string]string{"function": "function", "plt": "PLT stub"}[component], pattern), detail: func() string {
			if resolvers, _ := elfsym.Match(indirect, pattern); len(resolvers) > 0 {
				return fmt.Sprintf(" (%s in %s is an indirect function, STT_GNU_IFUNC: its symbol is the resolver the dynamic loader runs once to pick an implementation, which stap does not probe either; probe the implementations)",
					resolvers[0].Name, path)
			}
			if len(fns) == 0 {
				return fmt.Sprintf(" (the symbol tables of %s list no %s)", path, map[string]string{"function": "functions", "plt": "PLT stubs"}[component])
			}
			return similarNames("functions", pattern, names())
		}}
	}
	if hasComponent(p, "label") {
		return labelProbes(k, objects, p, prologue, obj, matched)
	}
	return functionProbes(k, objects, p, prologue, obj, component, matched)
}

// declaredIn keeps of fns those obj's DWARF declares in a source file
// file matches ("app.c", "src/*.c": a debuginfo.FilePattern), at its
// line where file ends with ":LINE": stap's function("NAME@FILE[:LINE]").
func declaredIn(objects *objectCache, obj *elfsym.Object, file string, fns []elfsym.Func) ([]elfsym.Func, error) {
	file, line, err := fileAndLine(file)
	if err != nil {
		return nil, err
	}
	dbg, err := objects.debug.open(obj.Path)
	if err != nil {
		return nil, errorf("cannot tell which functions %s defines: %v", file, err)
	}
	addrs, err := dbg.Declared(file, line)
	if err != nil {
		return nil, errorf("cannot tell which functions %s defines: %v", file, err)
	}
	declared := slices.DeleteFunc(slices.Clone(fns), func(fn elfsym.Func) bool { _, ok := addrs[fn.Addr]; return !ok })
	if len(declared) == 0 {
		return nil, &Error{Msg: "no match", detail: func() string {
			return fmt.Sprintf(" (the DWARF of %s (%s) declares no function in a file matching %s%s)", obj.Path, dbg.DebugPath, file,
				atLine(line))
		}}
	}
	return declared, nil
}

// fileAndLine splits FILE:LINE, the part after the @ of a function's
// name; LINE is 0 when not given.
func fileAndLine(file string) (string, int, error) {
	name, n, ok := strings.Cut(file, ":")
	if !ok {
		return file, 0, nil
	}
	line, err := strconv.Atoi(n)
	if err != nil || line <= 0 {
		return "", 0, errorf("cannot read %q: bpftap takes NAME@FILE or NAME@FILE:LINE, LINE a number", file)
	}
	return name, line, nil
}

// atLine is " at line N" of a FUNC@FILE:LINE's messages, "" without a line.
func atLine(line int) string {
	if line == 0 {
		return ""
	}
	return fmt.Sprintf(" at line %d", line)
}

// splitIndirect separates the functions a probe matches from the
// indirect ones (STT_GNU_IFUNC): their symbol's code is a resolver run
// once by the dynamic loader, not the function calls reach, and stap's
// symbol-table probes leave them out as well (checked with stap 4.8 -p2:
// "no match" for glibc's strcpy).
func splitIndirect(fns []elfsym.Func) (direct, indirect []elfsym.Func) {
	for _, fn := range fns {
		if fn.Indirect {
			indirect = append(indirect, fn)
		} else {
			direct = append(direct, fn)
		}
	}
	return direct, indirect
}

// functionProbes are the probes of point p on functions fns of obj, each
// named in its concrete point by component and its name: a uprobe (a
// uretprobe for .return) each, or, when there are several and the kernel
// offers it, points of one attach.Set, which share one program and one
// uprobe_multi link. Each starts with prologue.
func functionProbes(k KernelInfo, objects *objectCache, p *Point, prologue *syntax.Block, obj *elfsym.Object, component string, fns []elfsym.Func) ([]*Point, error) {
	ret := p.Components[len(p.Components)-1].Name == "return"
	kind, set := singleKind(ret), (*attach.Set)(nil)
	if len(fns) > 1 && k.Attachable(&attach.Point{Kind: multiKind(ret), Path: obj.Path}) == nil {
		kind, set = multiKind(ret), &attach.Set{}
	}
	regs := arch.Host()
	if regs == nil {
		return nil, errorf("bpftap has no register table for %s", runtime.GOARCH)
	}
	i386, err := callingConvention(obj, regs)
	if err != nil {
		return nil, err
	}
	if ret && obj.Go {
		return nil, goReturns(p, obj.Path)
	}
	var entrySet *attach.Set // the entries a set's returns pair with share a link of their own
	if set != nil && ret {
		entrySet = &attach.Set{}
	}
	var out []*Point
	for _, fn := range fns {
		a := &attach.Point{Kind: kind, Event: fn.Name, Path: obj.Path, Offset: fn.Offset, PC: obj.PC(fn), Set: set,
			Regs: true, User: true, I386: i386, Func: &attach.Func{Name: fn.Name}}
		if ret {
			a.Func.Return = &attach.Loc{Offset: regs.Return, Size: 8}
			if i386 {
				a.Func.Return = &attach.Loc{Offset: regs.Return, Size: 4, Signed: true} // eax
			}
			a.Args = []attach.Arg{{Name: "return", Local: returnLocal, Loc: *a.Func.Return}}
		}
		q, err := fileProbe(k, p, prologue, obj.Path, component, fn.Name, a, len(out) == 0)
		if err != nil {
			return nil, err
		}
		if component == "plt" {
			asStatement(q, fn.Addr)
		} else {
			q.Context.user = programFunc(&objects.debug, obj, fn, regs, 0)
		}
		if ret {
			q.Context.entry = uprobeEntry(k, q, *a, entrySet, regs)
		}
		out = append(out, q)
	}
	out[0].Plan = uprobePlan(p, kind, obj.Path, fns)
	return out, nil
}

// goReturns refuses return point p on path, a Go program: the runtime
// copies a goroutine's stack elsewhere when it grows, return address and
// all, so that the address a uretprobe plants there (the kernel's
// trampoline) is no longer where the kernel looks for it, and the
// program dies of SIGILL or SIGSEGV when the function returns.
func goReturns(p *Point, path string) error {
	return errorf("cannot probe %s: %s is a Go program, "+
		"and Go moves a goroutine's stack as it grows, which breaks the return address a uretprobe plants (the program would die of SIGILL); "+
		"probe the function's entry instead", p.Name(), path)
}

// uprobeEntry is the hook that gives the entries the @entry of return
// point q, attached at ret, pair with: a uprobe on the same function (on
// set's uprobe_multi link when ret is one of a set), starting with q's
// prologue, named as q without its .return. A thread's calls in progress
// are told apart by the stack pointer (Entry.Frame): a recursive call's
// return gets its own entry's values, as in stap, whose return probes
// keep each call's entry data apart.
func uprobeEntry(k KernelInfo, q *Point, ret attach.Point, set *attach.Set, regs *arch.Regs) func() *Entry {
	return func() *Entry {
		a := ret
		a.Kind, a.Set, a.Args, a.Func = singleKind(false), set, nil, &attach.Func{Name: ret.Func.Name}
		if set != nil {
			a.Kind = multiKind(false)
		}
		push := regs.CallPush
		if ret.I386 {
			push = 4
		}
		entry := &Context{kernel: k, Attach: &a, user: q.Context.user}
		return &Entry{Context: entry, Name: ComponentsString(q.Components[:len(q.Components)-1]),
			Guard: syntax.Clone(q.Prologue), Frame: entryFrame(entry, regs, push)}
	}
}

// stackFrame is the Entry.Frame of a function probe: the stack pointer,
// push bytes below its value at the return.
func stackFrame(sp string, push int) func(bool, syntax.Pos) syntax.Expr {
	return func(ret bool, at syntax.Pos) syntax.Expr {
		var x syntax.Expr = &syntax.Call{Typed: syntax.Typed{Pos: at}, Name: "u_register",
			Args: []syntax.Expr{&syntax.StringLit{Typed: syntax.Typed{Pos: at}, Value: sp}}}
		if ret && push != 0 {
			x = &syntax.Binary{Typed: syntax.Typed{Pos: at}, Op: "-", X: x,
				Y: &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: int64(push), Text: fmt.Sprint(push)}}
		}
		return x
	}
}

// callingConvention tells how a function of obj finds its arguments:
// the host's convention (false), or the i386 one for a 32-bit x86 program
// on x86-64 (true); an object for another processor or word size is
// refused, since its arguments would be read wrong.
func callingConvention(obj *elfsym.Object, regs *arch.Regs) (i386 bool, err error) {
	switch {
	case obj.Machine == elf.EM_386 && obj.Class == elf.ELFCLASS32 && regs == arch.X86_64:
		return true, nil
	case obj.Machine == hostMachine[regs.Name] && obj.Class == elf.ELFCLASS64,
		obj.Machine == elf.EM_X86_64 && regs == arch.X86_64: // x32: the registers of x86-64
		return false, nil
	}
	return false, errorf("cannot probe %s: a program for %s %s, which bpftap does not read the arguments of on %s (it probes %s programs%s)",
		obj.Path, obj.Class, obj.Machine, regs.Name, regs.Name, map[bool]string{true: " and 32-bit x86 (i386) ones"}[regs == arch.X86_64])
}

// hostMachine is the ELF machine of each register table's processor.
var hostMachine = map[string]elf.Machine{"x86_64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// asStatement names a PLT stub's probe as stap does, by the stub's
// address: process("PATH").plt("NAME") becomes
// process("PATH").statement(0xADDR), whose pp() that is, while the script
// knows it by its .plt("NAME") (Script).
func asStatement(q *Point, addr uint64) {
	q.Script = q.Name()
	for i, c := range q.Components {
		if c.Name == "plt" {
			at := c.Pos
			q.Components[i] = &syntax.Component{Pos: at, Name: "statement",
				Arg: &syntax.NumberLit{Typed: syntax.Typed{Pos: at}, Value: int64(addr), Text: fmt.Sprint(addr)}}
		}
	}
}

func singleKind(ret bool) attach.Kind {
	if ret {
		return attach.Uretprobe
	}
	return attach.Uprobe
}

func multiKind(ret bool) attach.Kind {
	if ret {
		return attach.UretprobeMulti
	}
	return attach.UprobeMulti
}

// fileProbe is the concrete point of a probe on file, named as stap names
// it (process("/abs/path").COMPONENT("NAME")), attached at a, starting
// with prologue; the first of a point's probes asks the kernel whether it
// can attach one.
func fileProbe(k KernelInfo, p *Point, prologue *syntax.Block, file, component, name string, a *attach.Point, first bool) (*Point, error) {
	if first {
		if err := k.Attachable(a); err != nil {
			return nil, &Error{Msg: err.Error()}
		}
	}
	q := concretePoint(concretePoint(p, "process", file), component, name)
	if _, library := p.Arg("library").(*syntax.StringLit); library {
		q = concretePoint(concretePoint(p, "library", file), component, name)
	}
	q.Context, q.Prologue = &Context{kernel: k, Attach: a}, prologue
	return q, nil
}

// filePrologue is the prologue of point p's probes on files, exes being
// the executables its process("PATH") names: on a library,
// libraryPrologue; with -c or -x, targetPrologue; else none. A point's
// probes share it (derivation copies it into each probe).
func filePrologue(p *Point, cfg Config, exes []string) (*syntax.Block, error) {
	switch _, library := p.Arg("library").(*syntax.StringLit); {
	case library:
		return libraryPrologue(exes, cfg)
	case cfg.Target:
		return targetPrologue()
	}
	return nil, nil
}

// libraryPrologue restricts a probe on a library to the processes
// running exes, the executables its process("PATH") names (a uprobe fires
// in every process that maps the library), and with -c or -x to the
// target's process hierarchy too.
func libraryPrologue(exes []string, cfg Config) (*syntax.Block, error) {
	conds := make([]string, len(exes))
	for i, exe := range exes {
		conds[i] = exeFilter(exe)
	}
	cond := "(" + strings.Join(conds, " || ") + ")"
	if cfg.Target {
		cond = "__process_in_target() && " + cond
	}
	return parsePrologue("process library filter", fmt.Sprintf("if (!(%s)) next\n", cond))
}

// targetPrologue restricts a probe on a file to the target's process
// hierarchy, as stap does with -c or -x (stapprobes(3stap): "process
// probes are restricted to the process hierarchy associated with the
// target process"): a uprobe fires in every process that maps the file.
var targetPrologue = sync.OnceValues(func() (*syntax.Block, error) {
	return parsePrologue("process target filter", "if (!__process_in_target()) next\n")
})

// eachFile expands point p on each file its process("PATH") names (a
// glob may name several, the target's executable is one): the points of
// the files where it matched; when it matched in none, the first file's
// error. Its probes start with the point's filePrologue, built once.
func eachFile(p *Point, cfg Config, objects *objectCache, expand func(file string, prologue *syntax.Block) ([]*Point, error)) ([]*Point, error) {
	exes, err := processFiles(p, cfg)
	if err != nil {
		return nil, err
	}
	files, err := uprobeFiles(p, exes, &objects.libs)
	if err != nil {
		return nil, err
	}
	prologue, err := filePrologue(p, cfg, exes)
	if err != nil {
		return nil, err
	}
	var out []*Point
	var noMatch error
	for _, file := range files {
		points, err := expand(file, prologue)
		var e *Error
		switch {
		case err == nil:
			out = append(out, points...)
		case len(files) > 1 && errors.As(err, &e) && e.Msg == "no match":
			noMatch = cmp.Or(noMatch, err)
		default:
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, noMatch
	}
	return out, nil
}

// uprobeFiles are the files a point probes: exes, the executables its
// process("PATH") names (every file a glob matches, or the target's
// executable); or the libraries its .library("LIB") names.
func uprobeFiles(p *Point, exes []string, libs *elfsym.LibraryCache) ([]string, error) {
	if lib, ok := p.Arg("library").(*syntax.StringLit); ok {
		return libraryFiles(lib.Value, exes, libs)
	}
	return exes, nil
}

// libraryFiles are the shared libraries that pattern, a path or a glob
// (matched against the path or the file's name), names among those exes
// need (found through needs); when it names none of them, the files
// pattern resolves to.
func libraryFiles(pattern string, exes []string, needs *elfsym.LibraryCache) ([]string, error) {
	var libs []string
	seen := map[string]bool{}
	for _, exe := range exes {
		for _, lib := range needs.WithLibraries(exe)[1:] {
			full, _ := filepath.Match(pattern, lib)
			base, _ := filepath.Match(pattern, filepath.Base(lib))
			if (full || base) && !seen[lib] {
				seen[lib] = true
				libs = append(libs, lib)
			}
		}
	}
	if len(libs) > 0 {
		return libs, nil
	}
	files, err := elfsym.ResolveAll(pattern)
	if err != nil {
		return nil, errorf("cannot find library '%s': none that %s needs matches it, and it names no file", pattern, strings.Join(exes, ", "))
	}
	return files, nil
}

// processFiles are the executables a point's process("PATH") names, or
// the target's executable.
func processFiles(p *Point, cfg Config) ([]string, error) {
	name, ok := p.Arg("process").(*syntax.StringLit)
	if !ok {
		exe := ""
		if cfg.TargetBinary != nil {
			var err error
			if exe, err = cfg.TargetBinary(); err != nil {
				return nil, errorf("cannot find the target process's executable for an unspecified process probe: %v", err)
			}
		}
		if exe == "" {
			return nil, errorf("unspecified process probe is invalid without a -c COMMAND or -x PID [man stapprobes]")
		}
		return []string{exe}, nil
	}
	files, err := elfsym.ResolveAll(name.Value)
	var special *elfsym.NotRegularError
	switch {
	case errors.Is(err, elfsym.ErrNotFound):
		return nil, errorf("cannot find executable '%s'", name.Value)
	case errors.As(err, &special):
		return nil, errorf("cannot probe '%s': %v", name.Value, err)
	}
	if err != nil {
		return nil, errorf("cannot find executable '%s': %v", name.Value, err)
	}
	return files, nil
}

// uprobePlan says for -v where a point's probes attach: the kind, the file
// and the file offsets of the first few functions.
func uprobePlan(p *Point, kind attach.Kind, path string, fns []elfsym.Func) string {
	const shown = 4
	var where []string
	for i, fn := range fns {
		if i == shown {
			where = append(where, fmt.Sprintf("and %d more", len(fns)-shown))
			break
		}
		where = append(where, fmt.Sprintf("%s at %#x", fn.Name, fn.Offset))
	}
	return fmt.Sprintf("%s: %d %s(s) on %s, from its ELF symbol table (%s)",
		p.Name(), len(fns), kind, path, strings.Join(where, ", "))
}
