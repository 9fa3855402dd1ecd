package probes

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/debuginfo"
	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Context variables of kernel probes. `$NAME` is the attach point's
// argument NAME (a tracepoint's parameter) and `$NAME->a->b[2]` follows it
// through the kernel's types (BTF); `$$name` is the event name, `$$parms`
// and `$$vars` the arguments as "p=%p old_pid=%#x" (pointers %p, integers
// %#x, as stap prints them; a marker's "$arg1=%#x $arg2=%#x", its
// `$$locals` ""), `@cast(ADDR, "struct T")->m` reads from any address. As in
// stap every value is a long: a char array such as $p->comm is its address
// (scripts call kernel_string on it), a char * is the pointer. Pretty
// printing ($p$, $$parms$, @cast(p, "T")$) is expanded into a sprintf of
// the members where BTF types the variable (Pretty, PrettyCast: pretty.go),
// refused elsewhere. An Access
// tells the code generator how to compute each value.

// Access is how a kernel probe computes the value of a context expression.
type Access struct {
	// Param is the index in Attach.Args of the argument the value starts
	// from; -1 for @cast, whose base is the value of the cast's operand.
	Param int
	// Path leads from the base to the value (kernel.Path: offsets and
	// pointer loads); nil for a bare parameter.
	Path *kernel.Path
	// Address: the value is the final address Path computes, not a load
	// from it (char arrays, &$x->m, @cast(p, "T") without members).
	Address bool
	// Name is the constant value of $$name (Type string).
	Name string
	// Format and Args: $$parms/$$vars is sprintf(Format, Args...) (Type string).
	Format string
	Args   []*Access
	// Indexes are the expressions of the chain's dynamic indexes, one per
	// Path.Scales entry, in order.
	Indexes []syntax.Expr
	Type    syntax.Type
	// Pointee is the type the value points to when it is a typed pointer
	// (a pointer member, &member, a member-less @cast), else 0: an
	// autocast such as t->pid reads through it.
	Pointee kernel.TypeID
	// BTF holds the types Path and Pointee name: the kernel's, or a
	// module's (whose type IDs continue the kernel's, each module's the
	// same way, so that an ID alone does not say which).
	BTF *kernel.BTF
}

// Context resolves the context expressions of one kernel probe point
// against its attach point.
type Context struct {
	kernel KernelInfo
	Attach *attach.Point
	// entry is the family's hook for @entry: set on a return probe's
	// context, it gives the entries the return pairs with.
	entry func() *Entry
	// refused names the $vars a point knows of but does not offer, with
	// the reason ($return of a security hook: stap 5.6's verdict).
	refused map[string]string
	// assign, when set, says why an assignment to a $var is refused ("" if
	// it is not): in guru mode (-g) or not. Without it assignments are
	// refused when the probe is compiled (a BPF program writes no kernel
	// memory).
	assign func(name string, guru bool) string
	// aliases are other names of the point's arguments, by name without
	// the `$`: a system call's return has its $ret as $return too, as
	// stap's syscall tapset gives it (syscallReturnAliases).
	aliases map[string]string
	// argsOfCall: the point fires as a call returns and its arguments are
	// those the call was entered with (returnEvents).
	argsOfCall bool
	// user is the function of a probe that reads DWARF (a user function
	// or statement, a kernel statement), whose DWARF loadDebug reads on
	// first use into debug (userdebug.go).
	user  *debugFunc
	debug debugState
	// callArgs are a system call's own arguments once listed (CallArgs).
	callArgs []attach.Arg
}

// Entry is where the @entry expressions of a return probe are evaluated:
// the Context of the entries it pairs with, Name the probe point a
// companion probe there is named by (its pp()), and Guard the statements
// that companion starts with to keep only the calls the return serves
// (nil for all). Frame, when set, gives a key that tells apart the calls
// of one thread in progress (nested, recursive), with the same value at
// a call's entry (ret false) and at its return (ret true); without it a
// thread has one call of the function in progress at a time.
type Entry struct {
	Context *Context
	Name    string
	Guard   *syntax.Block
	Frame   func(ret bool, at syntax.Pos) syntax.Expr
}

// ParamsAtEntry tells whether the parameters a return probe reads must be
// read at the function's entry: a kretprobe's or uretprobe's registers no
// longer hold them (fexit's context still does). stap reads every $var of
// a return probe as it was at entry; the elaborator makes each such read
// an @entry. A user function's are read so only when its DWARF is there
// (else the return's own context says why there are none).
func (c *Context) ParamsAtEntry() bool {
	a := c.Attach
	return c.entry != nil && a.Func != nil && a.Func.Words == 0 && (!a.User || c.user != nil && c.loadDebug() == nil)
}

// Assign says why assigning $name is refused, "" if it is not; guru is
// -g. Only a point whose kernel asks the program for a value (netfilter's
// $verdict) takes a write: everywhere else bpftap never writes the
// kernel's memory or registers.
func (c *Context) Assign(name string, guru bool) string {
	if c.assign != nil {
		return c.assign(name, guru)
	}
	if guru {
		return WriteRefusedGuru
	}
	return WriteRefused
}

// WriteRefused is stap's refusal of a write to a context variable without
// -g; WriteRefusedGuru bpftap's with it.
const (
	WriteRefused     = "write to target variable not permitted"
	WriteRefusedGuru = WriteRefused + ": " + guruWriteReason
)

// guruWriteReason is why bpftap refuses even with -g a write stap's guru
// mode makes.
const guruWriteReason = "bpftap never writes the kernel's memory or registers " +
	"(a BPF program cannot; stap -g does it with a kernel module)"

// RefuseWrite is the refusal msg of a write through a typed pointer (@cast,
// an autocast): stap's, which asks for -g, without guru; bpftap's reason
// with it.
func RefuseWrite(msg string, guru bool) string {
	if guru {
		return msg + ": " + guruWriteReason
	}
	return msg + "; need stap -g"
}

// ArgsOfCall tells whether the point fires as a call returns with the
// arguments the call was entered with: there @entry of an expression of
// them is its value at the event.
func (c *Context) ArgsOfCall() bool { return c.argsOfCall }

// EntryOf returns the entries a return probe's @entry pairs with, nil
// where the probe point's family pairs none.
func (c *Context) EntryOf() *Entry {
	if c.entry == nil {
		return nil
	}
	return c.entry()
}

// Kernel is the kernel the probe point's expressions resolve against.
func (c *Context) Kernel() KernelInfo { return c.kernel }

// btf is the BTF that types the point's arguments: its module's for a
// module's function (whose type IDs continue the kernel's), else the
// kernel's.
func (c *Context) btf() (*kernel.BTF, error) {
	if c.debug.types != nil {
		return c.debug.types, nil
	}
	if c.Attach.Module != "" {
		return c.kernel.ModuleBTF(c.Attach.Module)
	}
	return c.kernel.BTF()
}

// ContextError is a context expression that does not resolve. Step is the
// index of the chain component it blames, -1 for the expression itself.
type ContextError struct {
	Msg  string
	Step int
	// noGlobal: no global of the name was found (ownGlobal then says
	// no parameter has it).
	noGlobal bool
}

func (e *ContextError) Error() string { return e.Msg }

func ctxErr(step int, format string, args ...any) *ContextError {
	return &ContextError{Msg: fmt.Sprintf(format, args...), Step: step}
}

// Var resolves $name (name with its `$`s) with its chain.
func (c *Context) Var(x *syntax.TargetVar) (*Access, *ContextError) {
	if x.Pretty > 0 {
		return nil, ctxErr(-1, "pretty printing of '%s' is not supported by bpftap", x.Name)
	}
	if err := c.loadDebug(); err != nil && c.needsDebug(x) {
		if c.debug.undescribed && (x.Name == "$$parms" || x.Name == "$$vars" || x.Name == "$$locals") && len(x.Components) == 0 {
			return &Access{Param: -1, Type: syntax.TypeString}, nil
		}
		return nil, err
	}
	switch x.Name {
	case "$$name":
		return &Access{Param: -1, Name: c.Attach.Event, Type: syntax.TypeString}, nil
	case "$$provider":
		if c.Attach.Provider != "" {
			return &Access{Param: -1, Name: c.Attach.Provider, Type: syntax.TypeString}, nil
		}
	case "$$parms", "$$vars":
		switch {
		case c.Attach.Provider != "":
			return c.markParms(), nil
		case !c.Attach.User || c.Attach.Func == nil || c.debug.types != nil:
			vars := x.Name == "$$vars"
			return c.parms(func(a attach.Arg) bool {
				return c.Attach.Func == nil || a.Name != "return" && (vars || !c.debug.locals[a.Name])
			})
		}
		// a user function's parameters are known only from DWARF: the
		// message below says so (an empty string would hide it)
	case "$$return":
		if _, _, ok := c.Attach.Arg("return"); ok && c.Attach.Func != nil {
			return c.parms(func(a attach.Arg) bool { return a.Name == "return" })
		}
		if c.Attach.Func != nil && c.Attach.Func.Void {
			return &Access{Param: -1, Type: syntax.TypeString}, nil // a void function's: ""
		}
	case "$$locals":
		if c.Attach.Provider != "" {
			return &Access{Param: -1, Type: syntax.TypeString}, nil // a marker has no locals: ""
		}
		if c.debug.types != nil {
			return c.parms(func(a attach.Arg) bool { return c.debug.locals[a.Name] })
		}
	}
	if why, ok := c.refused[x.Name]; ok {
		return nil, ctxErr(-1, "%s", why)
	}
	if err := c.loadFields(); err != nil {
		return nil, err
	}
	i, p, ok := c.Attach.Arg(c.argName(x.Name))
	switch {
	case (!ok || strings.HasPrefix(x.Name, "$$")) && c.Attach.Provider != "":
		return nil, ctxErr(-1, "unable to find marker argument '%s' (alternatives: %s)", x.Name, strings.Join(c.names(), ", "))
	case (!ok || strings.HasPrefix(x.Name, "$$")) && c.Attach.User && c.Attach.Func != nil && c.debug.types == nil:
		return nil, ctxErr(-1, "cannot resolve context variable '%s': bpftap reads no DWARF debuginfo, so a function probe has only $return (in .return probes); read arguments with int_arg(N), long_arg(N), pointer_arg(N) and the like", x.Name)
	case !ok && !strings.HasPrefix(x.Name, "$$") && c.Attach.Func != nil && !inLibrary(x.Pos) &&
		(c.Attach.User || c.Attach.Kind != attach.LSM):
		return c.ownGlobal(x)
	case (!ok || strings.HasPrefix(x.Name, "$$")) && c.Attach.Func != nil:
		return nil, c.noParam(x, "")
	case (!ok || strings.HasPrefix(x.Name, "$$")) && c.Attach.Net != nil:
		return nil, ctxErr(-1, "unsupported context variable '%s' of a netfilter hook (alternatives: %s)", x.Name, strings.Join(c.names(), ", "))
	case !ok || strings.HasPrefix(x.Name, "$$"):
		return nil, ctxErr(-1, "unable to find tracepoint variable '%s' (alternatives: %s)", x.Name, strings.Join(c.names(), ", "))
	}
	if x.AddrOf && len(x.Components) == 0 && c.Attach.Net != nil {
		return nil, ctxErr(-1, "cannot take address of netfilter hook context variable")
	}
	if x.AddrOf && len(x.Components) == 0 {
		return nil, ctxErr(-1, "cannot take the address of tracepoint variable '%s'", x.Name)
	}
	if p.Type == 0 && p.Loc.Address && len(x.Components) > 0 && !x.AddrOf && arrayType.MatchString(p.CType) {
		return classicIndex(i, *p, x.Components)
	}
	btf, err := c.btf()
	if err != nil {
		return nil, ctxErr(-1, "cannot read the kernel's types: %v", err)
	}
	a, cerr := chain(btf, p.Type, x.Components, x.AddrOf, resolveFrom(btf, p.Type))
	if a != nil {
		a.Param = i
		if len(x.Components) == 0 {
			a.Pointee, _ = btf.Pointee(p.Type)
		}
	}
	return a, cerr
}

// needsDebug tells whether x resolves only with the DWARF of a user
// function: all but its name, $$return and a bare $return do.
func (c *Context) needsDebug(x *syntax.TargetVar) bool {
	switch x.Name {
	case "$$name", "$$return":
		return false
	}
	_, _, ok := c.Attach.Arg(c.argName(x.Name))
	return !ok || strings.HasPrefix(x.Name, "$$") || len(x.Components) > 0
}

// argName is the name of the argument $name reads.
func (c *Context) argName(name string) string {
	name = strings.TrimPrefix(name, "$")
	if alias, ok := c.aliases[name]; ok {
		return alias
	}
	return name
}

// names lists the variables of the attach point for "alternatives".
func (c *Context) names() []string {
	var names []string
	for _, p := range c.Attach.Args {
		if !p.Hidden {
			names = append(names, "$"+p.Name)
		}
	}
	for _, alias := range slices.Sorted(maps.Keys(c.aliases)) {
		names = append(names, "$"+alias)
	}
	return append(names, "$$name", "$$parms", "$$vars")
}

// Vars lists the point's context variables as stap's -L listing shows
// them, "$NAME:TYPE" with TYPE spelt as C: from the kernel's BTF, or as a
// trace record's format file gives it ("const char*"), or long for what
// has no C type without debuginfo (registers, a marker's operands, which
// stap types long too); an argument's other names (a return's $return)
// follow it, typed alike.
func (c *Context) Vars() ([]string, error) {
	if err := c.loadFields(); err != nil {
		return nil, err
	}
	var vars []string
	for _, a := range c.Attach.Args {
		if a.Hidden {
			continue
		}
		t, err := c.cType(a)
		if err != nil {
			return nil, err
		}
		vars = append(vars, "$"+a.Name+":"+t)
		for _, alias := range slices.Sorted(maps.Keys(c.aliases)) {
			if c.aliases[alias] == a.Name {
				vars = append(vars, "$"+alias+":"+t)
			}
		}
	}
	return vars, nil
}

// cType spells the C type of argument a.
func (c *Context) cType(a attach.Arg) (string, error) {
	switch {
	case a.Type != 0:
		btf, err := c.btf()
		if err != nil {
			return "", fmt.Errorf("cannot read the kernel's types: %w", err)
		}
		return btf.TypeName(a.Type), nil
	case a.CType != "":
		return strings.ReplaceAll(a.CType, " *", "*"), nil
	}
	return "long", nil
}

// loadFields gives a classic tracepoint its arguments, the fields of its
// record, on first use.
func (c *Context) loadFields() *ContextError {
	if c.Attach.Kind != attach.Tracepoint || c.Attach.Args != nil {
		return nil
	}
	args, err := c.eventArgs()
	if err != nil {
		return err
	}
	c.Attach.Args = args
	if c.Attach.System == "syscalls" && strings.HasPrefix(c.Attach.Event, syscallEnter) {
		c.Attach.Args = appendRawCallArgs(c.Attach.Args)
	}
	return nil
}

// eventArgs are the fields of a classic tracepoint's record, as its
// arguments.
func (c *Context) eventArgs() ([]attach.Arg, *ContextError) {
	fields, err := c.kernel.EventFields(c.Attach.System, c.Attach.Event)
	if err != nil {
		return nil, ctxErr(-1, "cannot read the fields of %s: %v", c.Attach.Target(), err)
	}
	return attach.Fields(fields, tracepointLocal), nil
}

// parms is "name=%p name=%#x ..." of the arguments keep keeps: $$parms,
// $$vars, a function's $$return.
func (c *Context) parms(keep func(attach.Arg) bool) (*Access, *ContextError) {
	if err := c.loadFields(); err != nil {
		return nil, err
	}
	btf, err := c.btf()
	if err != nil {
		return nil, ctxErr(-1, "cannot read the kernel's types: %v", err)
	}
	a := &Access{Param: -1, Type: syntax.TypeString}
	var parts []string
	for i, p := range c.Attach.Args {
		if p.Hidden || !keep(p) {
			continue
		}
		if p.Unavailable {
			parts = append(parts, p.Name+"=?")
			continue
		}
		conv := "%#x"
		if u, err := btf.Underlying(p.Type); p.Pointer || err == nil && u.Kind == kernel.KindPtr {
			conv = "%p"
		}
		parts = append(parts, p.Name+"="+conv)
		a.Args = append(a.Args, &Access{Param: i, Type: syntax.TypeLong})
	}
	a.Format = strings.Join(parts, " ")
	return a, nil
}

// markParms is a marker's $$parms and $$vars: "$arg1=%#x $arg2=%#x ...",
// every argument a number, as stap prints them.
func (c *Context) markParms() *Access {
	a := &Access{Param: -1, Type: syntax.TypeString}
	var parts []string
	for i, p := range c.Attach.Args {
		parts = append(parts, "$"+p.Name+"=%#x")
		a.Args = append(a.Args, &Access{Param: i, Type: syntax.TypeLong})
	}
	a.Format = strings.Join(parts, " ")
	return a
}

// Cast resolves @cast(operand, "T", module) with its chain; the base is the
// operand's value, an address of a T.
func (c *Context) Cast(x *syntax.Cast) (*Access, *ContextError) {
	return ResolveCast(c.kernel, x)
}

// ResolveCast resolves a @cast against the kernel's types. The module is
// stap's list of places to look, separated by ':'. The kernel ("",
// "kernel", "kernel<linux/sched.h>") has its types in its BTF, and a
// loaded module named in the list ("kernel:sunrpc:nfsd") its own, looked
// in after the kernel's in the list's order. A module of C headers alone
// ("<sys/un.h>"), which stap compiles into a module of types, falls back
// to the kernel's BTF, where most of the types user space shares with the
// kernel are (sockaddr_un); a type it lacks gets a message that says where
// bpftap looked. A program's or a library's types (a path) come from
// its DWARF, after the kernel's and the modules'; their values lie in
// user memory (kernel.BTF.User).
func ResolveCast(k KernelInfo, x *syntax.Cast) (*Access, *ContextError) {
	btf, t, cerr := castType(k, x)
	if cerr != nil {
		return nil, cerr
	}
	a, cerr := ResolvePointee(btf, t, x.Components, x.AddrOf)
	if cerr == nil && x.Pretty > 0 { // PrettyCast expands the others
		return nil, ctxErr(-1, "cannot take address of pretty-printed variable")
	}
	return a, cerr
}

// castType finds the type x names in the places its module lists
// (ResolveCast), and the types it is one of.
func castType(k KernelInfo, x *syntax.Cast) (*kernel.BTF, kernel.TypeID, *ContextError) {
	places := castModules(x.Module)
	kernelBTF := places.kernel || places.headers
	var btfs []func() (*kernel.BTF, error)
	if kernelBTF && k != nil {
		btfs = append(btfs, k.BTF)
	}
	for _, m := range places.modules {
		if k != nil {
			btfs = append(btfs, func() (*kernel.BTF, error) { return k.ModuleBTF(m) })
		}
	}
	var programErr error
	for _, path := range places.programs {
		btfs = append(btfs, func() (*kernel.BTF, error) {
			b, err := programType(path, x.TypeName)
			programErr = cmp.Or(programErr, err)
			return b, err
		})
	}
	for _, load := range btfs {
		if btf, err := load(); err == nil {
			if t := lookupType(btf, x.TypeName); t != nil {
				return btf, t.ID, nil
			}
		}
	}
	if programErr != nil && !errors.Is(programErr, debuginfo.ErrNoType) {
		return nil, 0, ctxErr(-1, "type definition '%s' not found in '%s': %v", x.TypeName, x.Module, programErr)
	}
	if places.headers && !places.kernel {
		return nil, 0, ctxErr(-1, "type '%s' of '%s' is not in the kernel's BTF, where bpftap looks for the types of C headers (it compiles no headers)", x.TypeName, x.Module)
	}
	return nil, 0, ctxErr(-1, "type definition '%s' not found in '%s'", x.TypeName, x.Module)
}

// castPlaces are the places a @cast module lists, sorted: the kernel, C
// headers alone, a program or library (a path), modules by name.
type castPlaces struct {
	kernel, headers   bool
	modules, programs []string
}

func castModules(module string) castPlaces {
	var p castPlaces
	for _, m := range strings.Split(module, ":") {
		switch {
		case KernelModule(m):
			p.kernel = true
		case strings.HasPrefix(m, "<") && strings.HasSuffix(m, ">"):
			p.headers = true
		case strings.Contains(m, "/"):
			p.programs = append(p.programs, strings.SplitN(m, "<", 2)[0])
		default:
			p.modules = append(p.modules, m)
		}
	}
	return p
}

// programTypes holds the DWARF @cast has read, by path.
var programTypes debugCache

// programType describes the type C names as name in the program or
// library at path, from its DWARF, as BTF of its own.
func programType(path, name string) (*kernel.BTF, error) {
	f, err := programTypes.open(path)
	if err != nil {
		return nil, err
	}
	off, err := f.TypeNamed(name)
	if err != nil {
		return nil, err
	}
	types, _, err := dwarfBTF(f, true, off)
	return types, err
}

// KernelModule tells whether a @cast module names the kernel, whose types
// are in its BTF: "" and "kernel", with or without headers
// ("kernel<linux/sched.h>", stap's @task), which BTF makes unnecessary.
func KernelModule(module string) bool {
	rest, ok := strings.CutPrefix(module, "kernel")
	return module == "" || ok && (rest == "" || strings.HasPrefix(rest, "<") && strings.HasSuffix(rest, ">"))
}

// ResolvePointee resolves a chain from an address of a value of type t: a
// @cast's operand, or an autocast's operand whose pointer type is known
// (task_current(), a local assigned from it). Without components the
// value is the address itself.
func ResolvePointee(btf *kernel.BTF, t kernel.TypeID, comps []*syntax.TargetComponent, addrOf bool) (*Access, *ContextError) {
	a, cerr := chain(btf, t, comps, addrOf, func(steps []kernel.Step) (*kernel.Path, error) {
		return btf.ResolvePointee(t, steps)
	})
	if a != nil {
		a.Param = -1
		if len(comps) == 0 {
			a.Address, a.Pointee = true, t
		}
	}
	return a, cerr
}

// lookupType finds a type as @cast spells it: "struct T", "union T",
// "enum T" or a typedef (or a struct, when no typedef has the name).
func lookupType(btf *kernel.BTF, name string) *kernel.Type {
	name = strings.TrimSpace(name)
	kinds := []kernel.Kind{kernel.KindTypedef, kernel.KindStruct, kernel.KindUnion}
	for prefix, k := range map[string]kernel.Kind{"struct ": kernel.KindStruct, "union ": kernel.KindUnion, "enum ": kernel.KindEnum} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			name, kinds = strings.TrimSpace(rest), []kernel.Kind{k}
		}
	}
	for _, k := range kinds {
		if t, err := btf.TypeByName(name, k); err == nil {
			return t
		}
	}
	return nil
}

// resolver types a chain of steps from the expression's base.
type resolver func(steps []kernel.Step) (*kernel.Path, error)

// resolveFrom resolves from a value of type base held in a register.
func resolveFrom(btf *kernel.BTF, base kernel.TypeID) resolver {
	return func(steps []kernel.Step) (*kernel.Path, error) { return btf.Resolve(base, steps) }
}

// chain resolves the components of a context expression step by step, so
// that an error blames the component where it arose.
func chain(btf *kernel.BTF, base kernel.TypeID, comps []*syntax.TargetComponent, addrOf bool, resolve resolver) (*Access, *ContextError) {
	a := &Access{Type: syntax.TypeLong, BTF: btf}
	if len(comps) == 0 {
		return a, nil
	}
	var steps []kernel.Step
	for i, c := range comps {
		step := stepOf(c)
		if step.Dynamic {
			a.Indexes = append(a.Indexes, c.Index)
		}
		steps = append(steps, step)
		p, err := resolve(steps)
		if err != nil {
			return nil, ctxErr(i, "%s", err.Error())
		}
		a.Path = p
	}
	switch {
	case addrOf && a.Path.BitSize != 0:
		return nil, ctxErr(len(comps)-1, "cannot take the address of a bitfield")
	case addrOf:
		a.Address, a.Pointee = true, a.Path.Type
	case a.Path.Kind == kernel.ValueInt:
		a.Pointee, _ = btf.Pointee(a.Path.Type)
	case a.Path.Kind == kernel.ValueString:
		a.Address = true // a char array is its address, as in stap
		a.Pointee, _ = btf.Pointee(a.Path.Type)
	case a.Path.Kind == kernel.ValueAggregate:
		return nil, ctxErr(len(comps)-1, "'%s' is being accessed instead of a member%s",
			btf.TypeName(a.Path.Type), memberHint(btf, a.Path.Type))
	}
	return a, nil
}

// memberHint is stap's " such as '->m'" naming the first member of an
// aggregate the user stopped at.
func memberHint(btf *kernel.BTF, id kernel.TypeID) string {
	u, err := btf.Underlying(id)
	if err != nil || len(u.Members) == 0 || u.Members[0].Name == "" {
		return ""
	}
	return " such as '->" + u.Members[0].Name + "'"
}

// stepOf converts one chain component: an index that is no literal is
// computed at run time (Access.Indexes).
func stepOf(c *syntax.TargetComponent) kernel.Step {
	if c.Kind == syntax.ComponentMember {
		return kernel.Step{Member: c.Name}
	}
	if n, ok := c.Index.(*syntax.NumberLit); ok {
		return kernel.Step{Index: n.Value, IsIndex: true}
	}
	return kernel.Step{IsIndex: true, Dynamic: true}
}

// stepsOf is the steps of chain comps.
func stepsOf(comps []*syntax.TargetComponent) []kernel.Step {
	var steps []kernel.Step
	for _, c := range comps {
		steps = append(steps, stepOf(c))
	}
	return steps
}
