package interp

import "github.com/bpftap/bpftap/internal/output"

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
			first = firstElements(all, order{array: v, dir: -1}, top)
		}
		gs[i].Global = outputGlobal(v, st, first)
		gs[i].Unlisted = v.ByThread
	}
	return gs
}

// firstElements returns the first n of elems in order o, ties by key,
// in a slice of its own: elems keep their order (one pass, each element
// inserted into the n kept so far).
func firstElements(elems []*Element, o order, n int) []*Element {
	after := o.after()
	before := func(a, b *Element) bool {
		if after(a, b) != after(b, a) {
			return after(b, a)
		}
		return compareKeys(a.Key, b.Key) < 0
	}
	first := make([]*Element, 0, n+1)
	for _, e := range elems {
		if len(first) == n && (n == 0 || !before(e, first[n-1])) {
			continue
		}
		i := len(first)
		for i > 0 && before(e, first[i-1]) {
			i--
		}
		first = append(first, nil)
		copy(first[i+1:], first[i:])
		first[i] = e
		first = first[:min(len(first), n)]
	}
	return first
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
