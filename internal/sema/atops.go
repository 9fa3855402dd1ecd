package sema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// SystemTap's rarer @ operators (syntax.AtOp), lowered before a body's
// symbols resolve, so that the rest of the pipeline sees literals and
// calls:
//
//   - @enum("NAME") and, in guru mode, @const("NAME") become the value of
//     the kernel enumerator NAME, a literal, from the kernel's BTF (stap
//     reads the probed code's DWARF, and @const compiles a C expression:
//     BTF holds enumerators, not macros, so a macro is refused);
//   - @enumname(x, "type"[, "module"]) and @enumname($var) become the
//     name of x among the constants of the enum type (named, or $var's),
//     as a string literal where x is one, else a call of a function made
//     for the type, __enumname_N(x), an if-chain over the constants that
//     gives other values in decimal, as stap's;
//   - @kderef(size, addr), @uderef(size, addr), @kregister(n) and
//     @uregister(n) become calls of the builtins named after them
//     (tapset.Builtins), which no script can call by name;
//   - @perf("NAME") becomes a call reading the counter NAME
//     (perfcounter.go);
//   - @probewrite(var) is decided where an alias's body wraps the body it
//     expands (derive.go's wrapBody): 1 where that body writes var, else
//     0; elsewhere it is stap's "unexpected @probewrite".

// lowerAtOps replaces the @ operators of body, a probe's or a function's.
func (s *scope) lowerAtOps(body syntax.Node) {
	s.perfDefined(body)
	syntax.RewriteExprs(body, func(x syntax.Expr) syntax.Expr {
		if op, ok := x.(*syntax.AtOp); ok {
			return s.lowerAtOp(op)
		}
		return nil
	})
}

// lowerAtOpsIn is lowerAtOps for an expression (a probe's condition),
// which it returns, replaced where it is an operator itself.
func (s *scope) lowerAtOpsIn(x syntax.Expr) syntax.Expr {
	s.lowerAtOps(x)
	if op, ok := x.(*syntax.AtOp); ok {
		if r := s.lowerAtOp(op); r != nil {
			return r
		}
	}
	return x
}

// lowerAtOp returns what op becomes, nil for the operators resolution
// refuses (resolve.go).
func (s *scope) lowerAtOp(op *syntax.AtOp) syntax.Expr {
	switch op.Name {
	case "const", "enum":
		return s.e.enumerator(op)
	case "enumname":
		return s.enumName(op)
	case "kderef", "uderef":
		if n := op.Args[0].(*syntax.NumberLit); !slices.Contains(tapset.DerefSizes, n.Value) {
			s.e.rep.errorAt("atop", op, fmt.Sprintf("@%s size %d is not 1, 2, 4 or 8", op.Name, n.Value))
		}
		return &syntax.Call{Typed: op.Typed, Name: "@" + op.Name, Args: op.Args}
	case "kregister", "uregister":
		return &syntax.Call{Typed: op.Typed, Name: "@" + op.Name, Args: op.Args}
	case "perf":
		return s.perfCounter(op)
	}
	return nil
}

// kernelBTF is the BTF of the kernel @cast resolves against (castKernel),
// or of module, one of an @enumname's ("kernel" or "" the kernel's own).
func (e *elab) kernelBTF(module string) (*kernel.BTF, error) {
	k := e.castKernel()
	switch {
	case k == nil:
		return nil, fmt.Errorf("no kernel to read types from")
	case module == "" || module == "kernel":
		return k.BTF()
	}
	return k.ModuleBTF(module)
}

// enumerator lowers @enum("NAME") and @const("NAME") to the value of the
// kernel's enumerator NAME.
func (e *elab) enumerator(op *syntax.AtOp) syntax.Expr {
	name := op.Args[0].(*syntax.StringLit).Value
	b, err := e.kernelBTF("")
	if err != nil {
		e.rep.errorAt("atop", op, fmt.Sprintf("@%s(%q) needs the kernel's BTF: %v", op.Name, name, err))
		return number(op, 0)
	}
	values := b.Enumerator(strings.TrimSpace(name))
	if len(values) == 1 {
		return number(op, values[0])
	}
	msg := fmt.Sprintf("enumeration constant '%s' not found", name)
	switch {
	case len(values) > 1:
		msg = fmt.Sprintf("enumeration constant '%s' is ambiguous: enums of the kernel's BTF give it %d values (%s), and bpftap cannot tell which the probed code means",
			name, len(values), joinValues(values))
	case op.Name == "const":
		msg = fmt.Sprintf("@const(%q) is not an enumerator of the kernel's BTF: bpftap reads @const from BTF, which holds enumerators, not macros or C expressions", name)
	}
	e.rep.errorAt("atop", op, msg)
	return number(op, 0)
}

func joinValues(values []int64) string {
	texts := make([]string, len(values))
	for i, v := range values {
		texts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(texts, ", ")
}

// enumName lowers @enumname: the name of its operand among the constants
// of its enum type; "" after an error.
func (s *scope) enumName(op *syntax.AtOp) syntax.Expr {
	b, id, msg := s.enumType(op)
	var list []kernel.Enumerator
	if msg == "" {
		list, _ = b.Enumerators(id)
		if len(list) == 0 {
			msg = "enumeration type has no constants"
		}
	}
	if msg != "" {
		s.e.rep.errorAt("atop", op, msg)
		return stringAt(op, "")
	}
	if n, ok := op.Args[0].(*syntax.NumberLit); ok {
		return stringAt(op, enumeratorName(list, n.Value))
	}
	return &syntax.Call{Typed: op.Typed, Name: s.e.enumNameFunc(b, id, list), Args: op.Args[:1]}
}

// enumeratorName is the name of the first constant of list whose value is
// v, else v in decimal.
func enumeratorName(list []kernel.Enumerator, v int64) string {
	if i := slices.IndexFunc(list, func(e kernel.Enumerator) bool { return e.Value == v }); i >= 0 {
		return list[i].Name
	}
	return strconv.FormatInt(v, 10)
}

// enumType finds @enumname's enum type: the named one, or its $var
// operand's in a kernel probe; else it says why not, as stap does.
func (s *scope) enumType(op *syntax.AtOp) (*kernel.BTF, kernel.TypeID, string) {
	if len(op.Args) > 1 {
		return s.e.namedEnumType(op)
	}
	v, ok := op.Args[0].(*syntax.TargetVar)
	if !ok || s.ctx == nil {
		return nil, 0, "@enumname requires a typed $variable or a type string argument"
	}
	cannot := fmt.Sprintf("@enumname cannot determine enumeration type for '%s'", v.Name)
	a, cerr := s.ctx.Var(v)
	if cerr != nil {
		return nil, 0, cannot
	}
	b, id := a.BTF, kernel.TypeID(0)
	switch {
	case a.Path != nil:
		id = a.Path.Type
	case a.Param >= 0 && a.Param < len(s.ctx.Attach.Args):
		id = s.ctx.Attach.Args[a.Param].Type
	}
	if b == nil {
		b, _ = s.e.kernelBTF("")
	}
	if b == nil || id == 0 {
		return nil, 0, cannot
	}
	if _, err := b.Enumerators(id); err != nil {
		return nil, 0, fmt.Sprintf("@enumname target '%s' does not have enumeration type (have %s)", v.Name, b.TypeName(id))
	}
	return b, id, ""
}

// namedEnumType finds the enum type an @enumname names, in the first of
// its modules (separated by ':', the kernel's by default) that has it.
func (e *elab) namedEnumType(op *syntax.AtOp) (*kernel.BTF, kernel.TypeID, string) {
	name := op.Args[1].(*syntax.StringLit).Value
	modules := "kernel"
	if len(op.Args) > 2 && op.Args[2].(*syntax.StringLit).Value != "" {
		modules = op.Args[2].(*syntax.StringLit).Value
	}
	for _, m := range strings.Split(modules, ":") {
		if b, err := e.kernelBTF(m); err == nil {
			if id, ok := b.EnumType(name); ok {
				return b, id, ""
			}
		}
	}
	return nil, 0, "@enumname requires a typed $variable or a type string argument; unresolved enumeration type"
}

// enumKey is an enum type of one BTF.
type enumKey struct {
	btf *kernel.BTF
	id  kernel.TypeID
}

// enumNameFunc returns the name of the function that maps the values of
// enum type id to the names of its constants (list), made the first time
// a type asks: a tapset file of its own holding
//
//	function __enumname_N:string (val:long) {
//		if (val == V1) return "NAME1"
//		...
//		return sprintf("%d", val)
//	}
func (e *elab) enumNameFunc(b *kernel.BTF, id kernel.TypeID, list []kernel.Enumerator) string {
	key := enumKey{b, id}
	if name, ok := e.enumFuncs[key]; ok {
		return name
	}
	name := fmt.Sprintf("__enumname_%d", len(e.enumFuncs))
	var text strings.Builder
	fmt.Fprintf(&text, "function %s:string (val:long) {\n", name)
	seen := map[int64]bool{}
	for _, c := range list {
		if !seen[c.Value] { // the first name of a value, as enumeratorName
			seen[c.Value] = true
			fmt.Fprintf(&text, "\tif (val == %d) return %q\n", c.Value, c.Name)
		}
	}
	text.WriteString("\treturn sprintf(\"%d\", val)\n}\n")
	src := syntax.NewSource("<@enumname "+b.TypeName(id)+">", text.String())
	f, err := syntax.Parse(src, &syntax.Config{Tapset: true})
	if err != nil {
		panic(fmt.Sprintf("sema: the function of @enumname does not parse: %v", err))
	}
	e.collectFile(f, e.libFuncs)
	if e.enumFuncs == nil {
		e.enumFuncs = map[enumKey]string{}
	}
	e.enumFuncs[key] = name
	return name
}

// stringAt is a string literal at x.
func stringAt(x syntax.Expr, s string) *syntax.StringLit {
	return &syntax.StringLit{Typed: syntax.Typed{Pos: x.Position(), T: syntax.TypeString}, Value: s, Raw: s}
}

// decideProbeWrites replaces each @probewrite(var) of alias, an alias's
// body, and of body, the body it wraps, by 1 where body writes var, else
// 0; alias is copied first where it has one (every use of the alias shares
// it).
func decideProbeWrites(alias, body *syntax.Block) *syntax.Block {
	if !hasProbeWrite(alias) && !hasProbeWrite(body) {
		return alias
	}
	alias = syntax.Clone(alias)
	written := writtenNames(body)
	decide := func(x syntax.Expr) syntax.Expr {
		if op, ok := x.(*syntax.AtOp); ok && op.Name == "probewrite" {
			if written[op.Args[0].(*syntax.Ident).Name] {
				return number(op, 1)
			}
			return number(op, 0)
		}
		return nil
	}
	syntax.RewriteExprs(alias, decide)
	syntax.RewriteExprs(body, decide)
	return alias
}

func hasProbeWrite(b *syntax.Block) bool {
	return b != nil && syntax.Any(b, func(n syntax.Node) bool {
		op, ok := n.(*syntax.AtOp)
		return ok && op.Name == "probewrite"
	})
}

// writtenNames are the names of the variables, arrays and context
// variables body writes, as stap counts them: assigned (any assignment
// operator, an element of an array too), incremented, decremented,
// deleted, bound by a foreach or a catch.
func writtenNames(body *syntax.Block) map[string]bool {
	names := map[string]bool{}
	var add func(x syntax.Expr)
	add = func(x syntax.Expr) {
		switch x := x.(type) {
		case *syntax.Ident:
			names[x.Name] = true
		case *syntax.TargetVar:
			names[x.Name] = true
		case *syntax.Index:
			add(x.Array)
		}
	}
	syntax.Walk(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			add(n.LHS)
		case *syntax.IncDec:
			add(n.X)
		case *syntax.DeleteStmt:
			add(n.Target)
		case *syntax.ForeachStmt:
			for _, k := range append(slices.Clip(n.Keys), n.Value) {
				if k != nil {
					add(k)
				}
			}
		case *syntax.TryStmt:
			if n.CatchVar != nil {
				add(n.CatchVar)
			}
		}
		return true
	})
	return names
}
