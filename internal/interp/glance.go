package interp

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
)

// A live view of the session (the driver's --monitor): what it reads of
// the globals, how it resets them and pauses the timers. Each runs as a
// handler would, under the session's lock and after Config.HandlerStart,
// so that it sees what the kernel counted (kernelside's generations) and
// never a handler's half-done update; reading changes nothing a script
// can see: an array's order stays what its last sorted foreach left.

// Glance is a global as a live view shows it.
type Glance struct {
	// Global holds a scalar's or a statistic's value, or an array's
	// first elements in the order of the end-of-run display (by value,
	// descending; statistics by @count; ties by key).
	*output.Global
	// Len is an array's number of elements.
	Len int
	// Unlisted marks an array that user space cannot list: one kept in
	// task-local storage (syntax.Var.ByThread), whose Len is 0.
	Unlisted bool
}

// Glance reads every global, with at most top elements of each array.
func (in *Interp) Glance(top int) []Glance {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cfg.HandlerStart != nil {
		in.cfg.HandlerStart()
	}
	gs := make([]Glance, len(in.prog.Globals))
	for i, v := range in.prog.Globals {
		st := in.global(v)
		var first []*Element
		if st.Array != nil {
			all := st.Array.Elements()
			gs[i].Len = len(all)
			first = firstElements(all, order{array: v}, top)
		}
		gs[i].Global = outputGlobal(v, st, first)
		gs[i].Unlisted = v.ByThread
	}
	return gs
}

// firstElements returns the first n of elems in order o, ties by key,
// in a slice of its own: elems keep their order. One pass: each element's
// sort value is read once and compared with that of the last of the n
// kept so far (the worst), which most elements do not pass; the kept are
// indexes into elems, moved without the write barriers of pointers.
func firstElements(elems []*Element, o order, n int) []*Element {
	typ := o.array.Type
	value := func(i int) Value { return sortValue(elems[i], 0, typ, o.agg) }
	// before tells whether element i, of sort value v, comes before
	// element j, of w: a greater value, or an equal one and a smaller key
	before := func(i int, v Value, j int, w Value) bool {
		c := cmp.Compare(v.Int, w.Int)
		if typ == syntax.TypeString {
			c = strings.Compare(v.Str, w.Str)
		}
		return c > 0 || c == 0 && compareKeys(elems[i].Key, elems[j].Key) < 0
	}
	first := make([]int, 0, n+1)
	var worst Value // the sort value of first's last
	for i := range elems {
		v := value(i)
		if len(first) == n && (n == 0 || !before(i, v, first[n-1], worst)) {
			continue
		}
		at := len(first)
		for at > 0 && before(i, v, first[at-1], value(first[at-1])) {
			at--
		}
		first = slices.Insert(first, at, i)[:min(len(first)+1, n)]
		worst = value(first[len(first)-1])
	}
	out := make([]*Element, len(first))
	for k, i := range first {
		out[k] = elems[i]
	}
	return out
}

// ResetGlobals gives every global the value it started the run with
// (its -G value or initialiser, else 0 or ""), and empties every array
// and statistic, as the reset key of stap's monitor does.
func (in *Interp) ResetGlobals() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cfg.HandlerStart != nil {
		in.cfg.HandlerStart()
	}
	for _, v := range in.prog.Globals {
		switch st := in.global(v); {
		case st.Array != nil:
			st.Array.Clear()
		case st.Statistic != nil:
			st.Statistic.Reset()
		default:
			val, _, _ := in.startValue(v) // New checked it
			st.Scalar.Store(val)
		}
	}
}

// Pause stops the timer probes from firing, until Pause(false): the
// periods that pass meanwhile are skipped, not caught up.
func (in *Interp) Pause(paused bool) {
	in.mu.Lock()
	in.paused = paused
	in.mu.Unlock()
}
