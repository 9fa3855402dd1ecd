package interp

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/syntax"
)

// execForeach iterates over an array as the generated code does: the limit is
// evaluated once, the array is sorted in place when asked, the slice keys are
// evaluated, and every element counts towards the limit, even one the slice
// then skips.
func (in *Interp) execForeach(s *syntax.ForeachStmt) ctl {
	if h, ok := s.Array.(*syntax.Hist); ok {
		return in.foreachHist(s, h)
	}
	arr := in.arrayOf(s.Array)
	o := foreachOrder(s)
	if s.Limit != nil {
		o.limit = in.evalLong(s.Limit)
	}
	elems := iteration(arr, o)
	var slice Key
	if s.Slice != nil {
		slice, _ = in.evalKeys(s.Slice)
		defer in.release(slice)
	}
	in.note(1, s.Pos, true)
	for i := 0; ; i++ {
		in.note(1, s.Pos, false)
		if i == len(elems) || o.limited && int64(i) >= o.limit {
			return ctlNone
		}
		el := elems[i]
		for j, k := range s.Keys {
			in.store(k, el.Key[j])
		}
		if s.Slice != nil && !sliceMatch(el.Key, slice, s.Slice) {
			continue
		}
		if s.Value != nil {
			in.store(s.Value, el.Value)
		}
		switch c := in.exec(s.Body); c {
		case ctlBreak:
			return ctlNone
		case ctlReturn, ctlNext:
			return c
		case ctlNone:
			in.noteAt(0, s.Body, true)
		}
	}
}

// foreachHist iterates over the buckets of a histogram.
func (in *Interp) foreachHist(s *syntax.ForeachStmt, h *syntax.Hist) ctl {
	var limit int64
	if s.Limit != nil {
		limit = in.evalLong(s.Limit)
	}
	stat := in.aggregate(h.X)
	var counts []int64
	if stat != nil {
		counts = stat.Counts
	}
	in.note(1, s.Pos, true)
	for i := range counts {
		if s.Limit != nil && int64(i) >= limit {
			break
		}
		in.store(s.Keys[0], Value{Int: int64(i)})
		if s.Value != nil {
			in.store(s.Value, Value{Int: counts[i]})
		}
		c := in.exec(s.Body)
		if c == ctlBreak {
			break
		}
		if c == ctlReturn || c == ctlNext {
			return c
		}
		if c == ctlNone {
			in.noteAt(1, s.Body, true)
		}
	}
	return ctlNone
}

// order is how a foreach orders the elements of an array.
type order struct {
	array *syntax.Var
	col   int    // what it sorts on: 0 the value, i key i
	dir   int    // 1 ascending, -1 descending, 0 unsorted
	agg   string // the aggregate a statistic sorts on ("": @count)
	// limited is set when the foreach has a limit, of value limit.
	limited bool
	limit   int64
}

// foreachOrder is the order of s, but for the value of its limit.
func foreachOrder(s *syntax.ForeachStmt) order {
	return order{array: s.Array.(*syntax.Ident).Var, col: s.SortCol, dir: s.SortDir, agg: s.SortAgg, limited: s.Limit != nil}
}

// iteration returns the elements of arr in order o. An OrderedArray is
// walked in its order, or sorted as the runtime's _stp_map_sort (a stable
// merge sort) or, for a limit of 1 to 30, _stp_map_sortn (a bubble sort of
// the first elements, then an insertion of each further element into them)
// do; the sorted order persists. Any other array iterates in hash order, so
// its elements are first put in key order: unsorted foreach walks that, and
// sorting breaks ties by it; a KeyOrderKeeper keeps that order, and is
// sorted already the next time.
func iteration(arr Array, o order) []*Element {
	elems := arr.Elements()
	ordered, isOrdered := arr.(OrderedArray)
	byKey := func(a, b *Element) int { return compareKeys(a.Key, b.Key) }
	if !isOrdered && !slices.IsSortedFunc(elems, byKey) {
		slices.SortFunc(elems, byKey)
		if k, ok := arr.(KeyOrderKeeper); ok {
			k.KeepKeyOrder(elems)
		}
	}
	if o.dir == 0 || len(elems) == 0 {
		return elems
	}
	after := o.after()
	if !o.limited || o.limit == 0 || o.limit > 30 {
		sort.SliceStable(elems, func(i, j int) bool { return after(elems[j], elems[i]) })
	} else {
		partialSort(elems, int(o.limit), after)
	}
	if isOrdered {
		ordered.Reorder(elems)
	}
	return elems
}

// compareKeys orders tuples column by column, longs numerically and strings
// bytewise (the field a column does not use is zero in every key).
func compareKeys(a, b Key) int {
	for i := range a {
		if c := cmp.Compare(a[i].Int, b[i].Int); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].Str, b[i].Str); c != 0 {
			return c
		}
	}
	return 0
}

// partialSort is _stp_map_sortn on a slice.
func partialSort(elems []*Element, n int, after func(a, b *Element) bool) {
	for swaps := true; swaps; {
		swaps = false
		for i, num := 0, n; i+1 < len(elems); i++ {
			if num--; num <= 0 {
				break
			}
			if after(elems[i], elems[i+1]) {
				elems[i], elems[i+1] = elems[i+1], elems[i]
				swaps = true
			}
		}
	}
	last := min(len(elems)-1, max(n-1, 0))
	for j := last + 1; j < len(elems); j++ {
		c := last
		for c >= 0 && after(elems[c], elems[j]) {
			c--
		}
		if c != last {
			e := elems[j]
			copy(elems[c+2:j+1], elems[c+1:j])
			elems[c+1] = e
		}
	}
}

// after returns the runtime's comparison for a sorted foreach: whether a
// belongs after b.
func (o order) after() func(a, b *Element) bool {
	col := o.col
	desc := o.dir < 0
	typ := o.array.Type
	if col > 0 {
		typ = o.array.Keys[col-1]
	}
	return func(a, b *Element) bool {
		x, y := sortValue(a, col, typ, o.agg), sortValue(b, col, typ, o.agg)
		var c int
		if typ == syntax.TypeString {
			c = strings.Compare(x.Str, y.Str)
		} else {
			c = cmp.Compare(x.Int, y.Int)
		}
		if desc {
			return c < 0
		}
		return c > 0
	}
}

// sortValue is what an element is sorted on: a key, its value, or for
// statistics the aggregate the sort names (@count by default).
func sortValue(e *Element, col int, typ syntax.Type, agg string) Value {
	if col > 0 {
		return e.Key[col-1]
	}
	if typ != syntax.TypeStats {
		return e.Value
	}
	switch agg {
	case format.OpSum, format.OpMin, format.OpMax:
		v, _ := e.Stat.Get(agg)
		return Value{Int: v}
	case format.OpAvg:
		if e.Stat.Count == 0 {
			return Value{}
		}
		return Value{Int: e.Stat.Sum / e.Stat.Count}
	}
	return Value{Int: e.Stat.Count}
}
