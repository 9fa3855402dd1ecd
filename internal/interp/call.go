package interp

import (
	"errors"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/sema"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/bpftap/bpftap/internal/tapset"
)

// call calls a script function or a builtin. Like stap it checks the nesting
// depth on entry (builtins are functions too) and, in a frame that notes its
// actions, charges the statement count of a loop-free callee on return.
func (in *Interp) call(c *syntax.Call) Value {
	f := c.Func
	base := len(in.stack)
	for _, a := range c.Args {
		v := in.eval(a) // values are valid strings already
		in.stack = append(in.stack, v)
	}
	args := in.stack[base:len(in.stack):len(in.stack)]
	at := c.Pos
	if f.Decl != nil {
		at = f.Decl.NamePos
	}
	if in.act.nesting+1 >= in.maxNesting {
		throw(tapset.MsgMaxNesting, at)
	}
	in.act.nesting++
	defer func() { in.act.nesting-- }()
	var result Value
	if f.Decl == nil || f.Decl.Body == nil {
		result = in.callBuiltin(c, args)
		in.note(0, c.Pos, true)
	} else {
		result = in.callScript(c, args)
	}
	in.release(args)
	if !isText(c) {
		result.Str = in.clip(result.Str)
	}
	return result
}

// isText tells whether c calls a Text builtin, whose value is lines that
// print() writes whole, not a string value.
func isText(c *syntax.Call) bool {
	b := sema.Builtin(c)
	return b != nil && b.Text
}

func (in *Interp) callScript(c *syntax.Call, args []Value) Value {
	f := c.Func
	body := f.Decl.Body
	caller := in.fr
	fr := in.newFrame(f)
	fr.call = c
	for i, p := range f.Params {
		if i < len(args) {
			fr.locals[p.Index] = args[i]
		}
	}
	in.fr = fr
	defer func() { in.fr = caller }()
	count, finite := in.actions.count(body)
	in.enter(count, finite, f.Decl.NamePos)
	switch in.execBlock(body) {
	case ctlNone:
		in.note(0, body.Pos, true)
	case ctlNext:
		throw(tapset.MsgFunctionsExhausted, c.Pos)
	}
	in.fr = caller
	if finite {
		in.note(count, c.Pos, true)
	}
	in.release(fr.locals)
	return fr.ret
}

// newFrame makes the frame of a function call at the current nesting depth,
// with its locals zeroed on the value stack; the caller releases them.
func (in *Interp) newFrame(f *syntax.Func) *frame {
	base, n := len(in.stack), len(f.Locals)
	in.stack = slices.Grow(in.stack, n)[:base+n]
	locals := in.stack[base : base+n : base+n]
	clear(locals)
	for len(in.frames) <= in.act.nesting {
		in.frames = append(in.frames, new(frame))
	}
	fr := in.frames[in.act.nesting]
	*fr = frame{locals: locals}
	return fr
}

func (in *Interp) callBuiltin(c *syntax.Call, args []Value) Value {
	return in.callBuiltinIn(c, args, 0)
}

// callBuiltinIn calls a builtin for process pid (0: the current process,
// bpftap itself in user-side probes).
func (in *Interp) callBuiltinIn(c *syntax.Call, args []Value, pid int) Value {
	name := c.Func.Builtin
	if name == "" {
		name = c.Func.Name
	}
	impl := builtins[name]
	if impl == nil {
		throw("function "+name+"() is not supported in user-side probes", c.Pos)
	}
	// Builtins never run script code, so one context serves every call.
	in.builtinCall = callContext{in: in, call: c, pid: pid}
	return impl(&in.builtinCall, args)
}

// callContext is what a builtin sees of its call.
type callContext struct {
	in   *Interp
	call *syntax.Call
	pid  int // the process of a captured call of a kernel probe, or 0
}

// process is the pid of the process the call is made for: a kernel
// probe's, or 0 in a user-side probe, which has none (bpftap's own
// address space is never what a script asks about).
func (cc *callContext) process() int { return cc.pid }

// fail raises a run-time error at the call.
func (cc *callContext) fail(msg string) { throw(msg, cc.call.Pos) }

// print runs a print-family call; the s* variants return the text instead of
// writing it. A sprintf with OnFault (a pretty-printed @cast's) is that
// text where it raises an error, as a try block around it would.
func (in *Interp) print(n *syntax.PrintCall) string {
	if n.OnFault == "" {
		return in.printCall(n)
	}
	var s string
	if in.catch(func() { s = in.printCall(n) }) != nil {
		return n.OnFault
	}
	return s
}

// printCall evaluates the arguments of a print-family call and runs it.
func (in *Interp) printCall(n *syntax.PrintCall) string {
	base := len(in.printArgs)
	var hist *syntax.Hist
	for _, a := range n.Args {
		if h, ok := a.(*syntax.Hist); ok {
			hist = h
			continue
		}
		v := in.eval(a)
		in.printArgs = append(in.printArgs, format.Arg(v))
	}
	s := in.emit(n, hist, in.printArgs[base:])
	in.printArgs = in.printArgs[:base]
	return s
}

// emit renders a print-family call with its arguments evaluated: the s*
// forms return the text, the others hand the call to the output writer.
func (in *Interp) emit(n *syntax.PrintCall, hist *syntax.Hist, args []format.Arg) string {
	toString := n.Name[0] == 's'
	switch {
	case hist != nil && toString:
		text, err := in.histStat(hist).AppendHist(nil)
		histError(hist, err)
		return format.StringValue(string(text), in.maxStringLen())
	case hist != nil:
		histError(hist, in.out.Hist(in.histStat(hist)))
	case toString:
		s, err := in.formats[n].Sprint(args, kernelMemory{}, in.maxStringLen())
		if err != nil {
			in.printError(n, err)
		}
		return s
	case printsText(n):
		in.printText(n, args[0].Str)
	default:
		if err := in.out.Print(in.formats[n], args, kernelMemory{}); err != nil {
			in.printError(n, err)
		}
	}
	return ""
}

// printsText tells whether n is print() of a Text builtin's lines.
func printsText(n *syntax.PrintCall) bool {
	if n.Name != "print" || len(n.Args) != 1 {
		return false
	}
	c, ok := n.Args[0].(*syntax.Call)
	return ok && isText(c)
}

// printText writes the lines of a Text builtin whole, as stap's runtime
// prints a stack frame by frame: a print call per run of whole lines that
// fits the room of one call (format.BufferSize).
func (in *Interp) printText(n *syntax.PrintCall, text string) {
	for text != "" {
		end := len(text)
		if end > format.BufferSize {
			end = strings.LastIndexByte(text[:format.BufferSize], '\n') + 1
			if end == 0 { // a line longer than the room: cut it there
				end = format.BufferSize
			}
		}
		if err := in.out.Print(in.formats[n], []format.Arg{{Str: text[:end]}}, nil); err != nil {
			in.printError(n, err)
		}
		text = text[end:]
	}
}

func (in *Interp) printError(n *syntax.PrintCall, err error) {
	at := n.Pos
	var re *format.RunError
	if errors.As(err, &re) && re.Arg >= 0 && re.Arg < len(n.Args) {
		at = n.Args[re.Arg].Position()
	}
	throw(err.Error(), at)
}

// histStat is the aggregate histogram h renders; a missing one (an array
// element never set) is an error.
func (in *Interp) histStat(h *syntax.Hist) *format.Stat {
	s := in.aggregate(h.X)
	if s == nil {
		throw(tapset.MsgEmptyAggregate, h.Pos)
	}
	return s
}

// histError raises the error of rendering histogram h, if any.
func histError(h *syntax.Hist, err error) {
	if err != nil {
		throw(err.Error(), h.Pos)
	}
}
