package interp

import (
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
)

// display hands the output writer the contents of global v, which a probe
// with sema.Probe.Display shows at the end of the run. An array's elements
// come in the order of stap's display code, `foreach ([k] in v-)`: sorted by
// value, descending (statistics by @count), an order that persists in the
// array as that foreach's does. Unlike that code, the display charges no
// actions.
func (in *Interp) display(v *syntax.Var) {
	st := in.global(v)
	var elems []*Element
	if st.Array != nil {
		elems = iteration(st.Array, order{array: v, dir: -1})
	}
	in.out.Global(outputGlobal(v, st, elems))
}

// outputGlobal is global v, stored in st, as the output writer takes
// it: the elements elems of an array, or the value.
func outputGlobal(v *syntax.Var, st *Storage, elems []*Element) *output.Global {
	g := &output.Global{Name: v.Name, Type: v.Type}
	switch {
	case st.Array != nil:
		g.Keys = v.Keys
		for _, e := range elems {
			g.Elements = append(g.Elements, output.Element{Key: keyArgs(e.Key), Value: format.Arg(e.Value), Stat: e.Stat})
		}
	case st.Statistic != nil:
		g.Elements = []output.Element{{Stat: st.Statistic.Total()}}
	default:
		g.Elements = []output.Element{{Value: format.Arg(st.Scalar.Load())}}
	}
	return g
}

// keyArgs converts the keys of an element.
func keyArgs(k Key) []format.Arg {
	args := make([]format.Arg, len(k))
	for i, v := range k {
		args[i] = format.Arg(v)
	}
	return args
}
