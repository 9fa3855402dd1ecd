package probes

import (
	"errors"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Pretty printing of context variables and @cast: `$var$` is a string of var's
// value, `{.a=1, .b=0xffff88800a1b2c00, .c={...}, .d=[...]}` for a struct
// (or a pointer to one), `$var$$` the same with the nested structs and the
// arrays' first element spelt out; `$$parms$`, `$$vars$` and `$$return$`
// (and their `$$` forms) put each parameter, or the return value, so,
// "name=VALUE" separated by spaces. stap expands the expression into a
// sprintf of the members, and so does bpftap, typing them by BTF:
//
//   - a struct or union at the top, or anywhere under `$$`, lists its
//     members (".m=", an anonymous one as stap spells it: "<union>=",
//     "<class>=" for an anonymous struct); elsewhere it is `{...}`;
//   - an array at the top or under `$$` shows its first element and ", ...",
//     a char array its string in double quotes; elsewhere it is `[...]`;
//   - a char pointer is the string it points to, quoted ("<unknown>" if it
//     cannot be read); another pointer at the top is followed to what it
//     points to (a function: `<function>:%p`), below it is `%p`;
//   - a char is `'%#c'`, a signed integer or enum `%i` (a bitfield too, by
//     its type), an unsigned `%u`, a float `?`.
//
// A variable takes at most prettyArgs values, as in stap; its remaining
// members are "...". As in stap, a variable whose reads fault (a NULL
// pointer's members) is "ERROR": each variable's sprintf has OnFault.
//
// `@cast(p, "T")$` (`$$`, with a chain: `->fs$`, `->comm[i]$$`) prints
// the T at p the same way (PrettyCast): one printer, told how to read what
// a chain reaches (prettyPrinter.member): a $var with the chain, or the
// @cast with it. A @cast's T is in memory, so its members can always be
// read, where a $var's struct may be passed by value (inMemory).

// prettyArgs is how many values one pretty-printed variable reads.
const prettyArgs = 32

// Pretty expands the pretty-printed context expression x ($var$, $var$$,
// $$parms$, ...) into the sprintf computing it. ok is false where the
// point has no such expression or no BTF types for it: x then resolves
// (Var) to the error saying why.
func (c *Context) Pretty(x *syntax.TargetVar) (syntax.Expr, bool) {
	if x.Pretty == 0 || x.AddrOf || c.Attach.Provider != "" || c.loadFields() != nil {
		return nil, false
	}
	if c.loadDebug() != nil {
		if c.debug.undescribed && (x.Name == "$$parms" || x.Name == "$$vars" || x.Name == "$$locals") && len(x.Components) == 0 {
			return &syntax.StringLit{Typed: syntax.Typed{Pos: x.Pos}}, true // as Var's: ""
		}
		return nil, false
	}
	btf, err := c.btf()
	if err != nil {
		return nil, false
	}
	p := &prettyPrinter{btf: btf, full: x.Pretty > 1, at: x.Pos}
	switch x.Name {
	case "$$parms", "$$vars":
		vars := x.Name == "$$vars"
		return p.params(c, func(name string) bool {
			return c.Attach.Func == nil || name != "return" && (vars || !c.debug.locals[name])
		})
	case "$$locals":
		if c.debug.types == nil {
			return nil, false
		}
		return p.params(c, func(name string) bool { return c.debug.locals[name] })
	case "$$return":
		if _, _, has := c.Attach.Arg("return"); !has || c.Attach.Func == nil || len(x.Components) > 0 {
			return nil, false
		}
		return p.params(c, func(name string) bool { return name == "return" })
	}
	if strings.HasPrefix(x.Name, "$$") {
		return nil, false
	}
	_, arg, found := c.Attach.Arg(strings.TrimPrefix(x.Name, "$"))
	if !found || arg.Type == 0 {
		return nil, false
	}
	t, base := arg.Type, arg.Type
	if len(x.Components) > 0 { // what the chain reaches, resolved already
		path, err := btf.Resolve(arg.Type, stepsOf(x.Components))
		if err != nil {
			return nil, false
		}
		t, base = path.Type, 0
	}
	p.variable(targetVar(x.Pos, x.Name), x.Components, t, base)
	return p.sprintf(onFault), true
}

// PrettyCast expands the pretty-printed @cast x (`@cast(p, "T")$`,
// `@cast(p, "T")->m$$`, ...) into the sprintf computing it, as Pretty does
// a context variable's: each value it reads is x with the member's chain
// appended, and what it prints lies in memory, the T at x's operand. ok is
// false where x does not resolve, or takes an address: ResolveCast then
// says why.
func PrettyCast(k KernelInfo, x *syntax.Cast) (syntax.Expr, bool) {
	if x.Pretty == 0 || x.AddrOf {
		return nil, false
	}
	btf, t, cerr := castType(k, x)
	if cerr != nil {
		return nil, false
	}
	path, err := btf.ResolvePointee(t, stepsOf(x.Components))
	if err != nil {
		return nil, false
	}
	p := &prettyPrinter{btf: btf, full: x.Pretty > 1, at: x.Pos}
	p.variable(castMember(x), x.Components, path.Type, 0)
	return p.sprintf(onFault), true
}

// onFault is a pretty-printed variable whose reads fault, as stap prints it.
const onFault = "ERROR"

// sprintf is the call that prints what p wrote, onFault where a read faults
// ("": the faults are raised).
func (p *prettyPrinter) sprintf(onFault string) syntax.Expr {
	at := syntax.Typed{Pos: p.at}
	return &syntax.PrintCall{Typed: at, Name: "sprintf", Format: &syntax.StringLit{Typed: at, Value: p.format.String()},
		Args: p.args, OnFault: onFault}
}

// prettyPrinter builds the format and the arguments of one expansion.
type prettyPrinter struct {
	btf  *kernel.BTF
	full bool // `$$`: nested structs and arrays too
	at   syntax.Pos
	// member reads what a chain reaches from the variable being printed;
	// limit is the number of arguments at which its values stop
	// (prettyArgs after its first).
	member func(comps []*syntax.TargetComponent) syntax.Expr
	limit  int
	// base is the variable's type where it may be held by value (in a
	// register, in the probe's context), 0 where it lies in memory.
	base   kernel.TypeID
	format strings.Builder
	args   []syntax.Expr
}

// params prints the point's arguments that keep keeps, "name=VALUE" each,
// a variable's VALUE its own sprintf, "ERROR" where its reads fault.
func (p *prettyPrinter) params(c *Context, keep func(string) bool) (syntax.Expr, bool) {
	first := true
	for _, a := range c.Attach.Args {
		if a.Hidden || !keep(a.Name) {
			continue
		}
		if !first {
			p.format.WriteString(" ")
		}
		first = false
		p.format.WriteString(a.Name + "=")
		switch {
		case a.Unavailable:
			p.format.WriteString("?")
			continue
		case a.Type == 0: // a trace record's field: a number, as $$parms shows it
			p.push("%#x", &syntax.TargetVar{Typed: syntax.Typed{Pos: p.at}, Name: "$" + a.Name})
			continue
		}
		v := &prettyPrinter{btf: p.btf, full: p.full, at: p.at}
		v.variable(targetVar(p.at, "$"+a.Name), nil, a.Type, a.Type)
		if v.reads() {
			p.push("%s", v.sprintf(onFault))
		} else { // its value alone: nothing to fault
			p.format.WriteString(v.format.String())
			p.args = append(p.args, v.args...)
		}
	}
	return p.sprintf(""), true
}

// reads tells whether what p prints reads memory (a member, an element,
// a string), which may fault.
func (p *prettyPrinter) reads() bool {
	for _, a := range p.args {
		if v, ok := a.(*syntax.TargetVar); !ok || len(v.Components) > 0 {
			return true
		}
	}
	return false
}

// variable prints the value of type t that member(comps) reads; base is
// as prettyPrinter's.
func (p *prettyPrinter) variable(member func([]*syntax.TargetComponent) syntax.Expr, comps []*syntax.TargetComponent, t, base kernel.TypeID) {
	p.member, p.limit, p.base = member, len(p.args)+prettyArgs, base
	p.value(t, comps, true)
}

// targetVar reads a chain from the context variable name, written at at.
func targetVar(at syntax.Pos, name string) func([]*syntax.TargetComponent) syntax.Expr {
	return func(comps []*syntax.TargetComponent) syntax.Expr {
		return &syntax.TargetVar{Typed: syntax.Typed{Pos: at}, Name: name, Components: comps}
	}
}

// castMember reads a chain from the T at @cast x's operand: x's @cast
// with the chain, its operand evaluated anew each time (an index of the
// chain is too, in $var$ as in @cast).
func castMember(x *syntax.Cast) func([]*syntax.TargetComponent) syntax.Expr {
	return func(comps []*syntax.TargetComponent) syntax.Expr {
		return &syntax.Cast{Typed: syntax.Typed{Pos: x.Pos}, Operand: syntax.Clone(x.Operand),
			TypeName: x.TypeName, Module: x.Module, Components: comps}
	}
}

// value prints the value of type t that chain comps reaches; top tells
// whether it is the variable itself.
func (p *prettyPrinter) value(t kernel.TypeID, comps []*syntax.TargetComponent, top bool) {
	u, err := p.btf.Underlying(t)
	if err != nil {
		p.format.WriteString("?")
		return
	}
	switch u.Kind {
	case kernel.KindInt, kernel.KindEnum, kernel.KindEnum64:
		p.number(u, comps)
	case kernel.KindArray:
		p.array(u, comps, top)
	case kernel.KindPtr:
		p.pointer(u, comps, top)
	case kernel.KindFuncProto:
		p.push("<function>:%p", p.member(comps))
	case kernel.KindStruct, kernel.KindUnion:
		p.aggregate(u, comps, top)
	case kernel.KindFwd:
		p.format.WriteString("{...}")
	default:
		p.format.WriteString("?")
	}
}

func (p *prettyPrinter) number(u *kernel.Type, comps []*syntax.TargetComponent) {
	switch {
	case u.Kind == kernel.KindInt && isChar(u):
		p.push("'%#c'", p.member(comps))
	case u.Kind == kernel.KindInt && !u.Signed:
		p.push("%u", p.member(comps))
	default:
		p.push("%i", p.member(comps))
	}
}

// isChar tells whether int type u is one of C's char types.
func isChar(u *kernel.Type) bool {
	return u.Size == 1 && (u.Char || strings.HasSuffix(u.Name, "char"))
}

func (p *prettyPrinter) array(u *kernel.Type, comps []*syntax.TargetComponent, top bool) {
	if !top && !p.full {
		p.format.WriteString("[...]")
		return
	}
	if p.chars(u.Target, comps) {
		return
	}
	p.format.WriteString("[")
	p.value(u.Target, append(cloneComps(comps), &syntax.TargetComponent{Pos: p.at, Kind: syntax.ComponentIndex,
		Index: &syntax.NumberLit{Typed: syntax.Typed{Pos: p.at}, Value: 0}}), false)
	p.format.WriteString(", ...]")
}

func (p *prettyPrinter) pointer(u *kernel.Type, comps []*syntax.TargetComponent, top bool) {
	if u.Target != 0 {
		if p.chars(u.Target, comps) {
			return
		}
		if pointee, err := p.btf.Underlying(u.Target); top && err == nil && pointee.Kind != kernel.KindPtr && pointee.Kind != kernel.KindVoid {
			p.value(u.Target, comps, true)
			return
		}
	}
	p.push("%p", p.member(comps))
}

// chars prints a char array or char pointer, elem being its element type,
// as the string it holds, quoted; it reports false for other elements.
func (p *prettyPrinter) chars(elem kernel.TypeID, comps []*syntax.TargetComponent) bool {
	u, err := p.btf.Underlying(elem)
	if err != nil || u.Kind != kernel.KindInt || !isChar(u) {
		return false
	}
	reader := "kernel_string2"
	if p.btf.User() { // a user program's types (its DWARF)
		reader = "user_string2"
	}
	p.push(`"%s"`, &syntax.Call{Typed: syntax.Typed{Pos: p.at}, Name: reader,
		Args: []syntax.Expr{p.member(comps), &syntax.StringLit{Typed: syntax.Typed{Pos: p.at}, Value: "<unknown>"}}})
	return true
}

func (p *prettyPrinter) aggregate(u *kernel.Type, comps []*syntax.TargetComponent, top bool) {
	if !p.inMemory(u, comps) {
		p.format.WriteString("?") // stap's, for a value it cannot take apart
		return
	}
	p.format.WriteString("{")
	if top || p.full {
		p.members(u, comps)
	} else {
		p.format.WriteString("...")
	}
	p.format.WriteString("}")
}

// members prints the members of struct or union u, an anonymous one's
// through the same chain (C reaches their members by name).
func (p *prettyPrinter) members(u *kernel.Type, comps []*syntax.TargetComponent) {
	for i, m := range u.Members {
		if i > 0 {
			p.format.WriteString(", ")
		}
		if len(p.args) >= p.limit {
			p.format.WriteString("...")
			return
		}
		mcomps := comps
		switch {
		case m.Name != "":
			p.format.WriteString("." + m.Name)
			mcomps = append(cloneComps(comps), &syntax.TargetComponent{Pos: p.at, Kind: syntax.ComponentMember, Name: m.Name})
		case p.kindOf(m.Type) == kernel.KindUnion:
			p.format.WriteString("<union>")
		case p.kindOf(m.Type) == kernel.KindStruct:
			p.format.WriteString("<class>") // stap's spelling for an anonymous struct
		}
		p.format.WriteString("=")
		if m.BitSize != 0 && m.Name == "" {
			p.format.WriteString("?") // padding bits: nothing names them
			continue
		}
		p.value(m.Type, mcomps, false)
	}
}

// inMemory tells whether struct or union u, which chain comps reaches,
// lies in memory, where its members can be read: one passed by value (a
// tracepoint's or a function's argument) is in the registers or the
// probe's context, as a whole.
func (p *prettyPrinter) inMemory(u *kernel.Type, comps []*syntax.TargetComponent) bool {
	i := slices.IndexFunc(u.Members, func(m kernel.Member) bool { return m.Name != "" })
	if p.base == 0 || i < 0 {
		return true
	}
	_, err := p.btf.Resolve(p.base, append(stepsOf(comps), kernel.Step{Member: u.Members[i].Name}))
	var notInMemory *kernel.NotInMemoryError
	return !errors.As(err, &notInMemory)
}

func (p *prettyPrinter) kindOf(t kernel.TypeID) kernel.Kind {
	if u, err := p.btf.Underlying(t); err == nil {
		return u.Kind
	}
	return kernel.KindVoid
}

// push adds the conversion conv of the value x.
func (p *prettyPrinter) push(conv string, x syntax.Expr) {
	p.format.WriteString(conv)
	p.args = append(p.args, x)
}

func cloneComps(comps []*syntax.TargetComponent) []*syntax.TargetComponent {
	out := make([]*syntax.TargetComponent, len(comps))
	for i, c := range comps {
		cc := *c
		if c.Index != nil {
			cc.Index = syntax.Clone(c.Index)
		}
		out[i] = &cc
	}
	return out
}
