package interp

import (
	"errors"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// call calls a script function or a builtin. Like stap it checks the nesting
// depth on entry (builtins are functions too) and, in a frame that notes its
// actions, charges the statement count of a loop-free callee on return.
func (in *Interp) call(c *syntax.Call) value {
	f := c.Func
	args := make([]value, len(c.Args))
	for i, a := range c.Args {
		args[i] = in.eval(a)
		args[i].s = in.clip(args[i].s)
	}
	at := c.Pos
	if f.Decl != nil {
		at = f.Decl.NamePos
	}
	if in.act.nesting+1 >= in.maxNesting {
		throw("MAXNESTING exceeded", at)
	}
	in.act.nesting++
	defer func() { in.act.nesting-- }()
	var result value
	if f.Decl == nil || f.Decl.Body == nil {
		result = in.callBuiltin(c, args)
		in.note(0, c.Pos, true)
	} else {
		result = in.callScript(c, args)
	}
	result.s = in.clip(result.s)
	return result
}

func (in *Interp) callScript(c *syntax.Call, args []value) value {
	f := c.Func
	body := f.Decl.Body
	caller := in.fr
	fr := &frame{locals: make([]value, len(f.Locals))}
	for i, p := range f.Params {
		if i < len(args) {
			fr.locals[p.Index] = args[i]
		}
	}
	in.fr = fr
	defer func() { in.fr = caller }()
	in.enter(body, f.Decl.NamePos)
	switch in.execBlock(body) {
	case ctlNone:
		in.note(0, body.Pos, true)
	case ctlNext:
		throw("all functions exhausted", c.Pos)
	}
	in.fr = caller
	if count, finite := in.actions.count(body); finite {
		in.note(count, c.Pos, true)
	}
	return fr.ret
}

func (in *Interp) callBuiltin(c *syntax.Call, args []value) value {
	name := c.Func.Builtin
	if name == "" {
		name = c.Func.Name
	}
	impl := builtins[name]
	if impl == nil {
		throw("function "+name+"() is not supported in user-side probes", c.Pos)
	}
	return impl(&callContext{in: in, call: c}, args)
}

// callContext is what a builtin sees of its call.
type callContext struct {
	in   *Interp
	call *syntax.Call
}

// fail raises a run-time error at the call.
func (cc *callContext) fail(msg string) { throw(msg, cc.call.Pos) }

// print runs a print-family call; the s* variants return the text instead of
// writing it.
func (in *Interp) print(n *syntax.PrintCall) string {
	args := make([]format.Arg, 0, len(n.Args))
	var hist *syntax.Hist
	for _, a := range n.Args {
		if h, ok := a.(*syntax.Hist); ok {
			hist = h
			continue
		}
		v := in.eval(a)
		args = append(args, format.Arg{Int: v.i, Str: v.s})
	}
	toString := n.Name[0] == 's'
	switch {
	case hist != nil && toString:
		return format.StringValue(string(in.renderHist(nil, hist)), in.maxStringLen())
	case hist != nil:
		in.out = in.renderHist(in.out, hist)
	case toString:
		s, err := in.formats[n].Sprint(args, noMemory{}, in.maxStringLen())
		if err != nil {
			in.printError(n, err)
		}
		return s
	default:
		out, err := in.formats[n].Exec(in.out, args, noMemory{}, format.BufferSize)
		if err != nil {
			in.printError(n, err)
		}
		in.out = out
	}
	return ""
}

func (in *Interp) printError(n *syntax.PrintCall, err error) {
	at := n.Pos
	var re *format.RunError
	if errors.As(err, &re) && re.Arg >= 0 && re.Arg < len(n.Args) {
		at = n.Args[re.Arg].Position()
	}
	throw(err.Error(), at)
}

// renderHist appends the rendering of a histogram to dst.
func (in *Interp) renderHist(dst []byte, h *syntax.Hist) []byte {
	s := in.aggregate(h.X)
	if s == nil {
		throw("empty aggregate", h.Pos)
	}
	out, err := s.AppendHist(dst)
	if err != nil {
		throw(err.Error(), h.Pos)
	}
	return out
}

// noMemory is the memory %m and %M see in user-side probes: none.
type noMemory struct{}

func (noMemory) ReadMemory(addr uint64, p []byte, user bool) (int, error) {
	return 0, errors.New("no memory in user-side probes")
}
