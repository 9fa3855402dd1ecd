package kernelside

import (
	"bytes"
	"slices"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
)

// Storage serves a global the kernel programs use from its map, under the
// contract of interp.Storage; other globals (the zero Storage) stay in the
// interpreter. Keys and values go through the codec of the layouts bpfgen
// chose (bpfgen.Global: codec.go there); this file adapts it to the
// interpreter's values and folds in what the last-key caches hold.
func (s *Session) Storage(g interp.Global) interp.Storage {
	if s.objs == nil {
		return interp.Storage{}
	}
	for _, gl := range s.mod.Globals() {
		if gl.Var != g.Var {
			continue
		}
		if gl.ByThread {
			// Task-local storage cannot be listed, and only kernel probes
			// use such a global (sema's Var.ByThread): the interpreter's
			// own empty array stands for it and is never touched.
			return interp.Storage{}
		}
		mg := &mapGlobal{gl: gl, m: s.objs.shared[gl.Ref], newStat: g.NewStat, cpus: 1, stacks: s.stacks, handlers: &s.handlers}
		if gl.Cache != nil {
			mg.cache = s.objs.shared[gl.Cache.Ref]
		}
		if gl.PerCPU {
			mg.cpus, _ = ebpf.PossibleCPU()
		}
		if gl.Ring != nil {
			mg.ring, mg.heads = s.objs.shared[gl.Ring.Ref], s.objs.shared[gl.Heads.Ref]
		}
		if gl.Gens {
			return s.genStorage(g, mg)
		}
		switch {
		case g.Var.IsArray:
			return interp.Storage{Array: mapArray{mg}}
		case g.Var.Type == syntax.TypeStats:
			return interp.Storage{Statistic: mapStatistic{mg}}
		default:
			return interp.Storage{Scalar: mapScalar{mg}}
		}
	}
	return interp.Storage{}
}

// mapGlobal is one global in its map.
type mapGlobal struct {
	gl      *bpfgen.Global
	m       *ebpf.Map
	cache   *ebpf.Map // the last-key cache of a cached array, or nil
	cpus    int       // value copies: the possible CPUs of a per-CPU map, else 1
	newStat func() *format.Stat
	stacks  *stackTexts // the text of the stack tokens in keys and values
	// handlers points at the count of user-side handlers started, which
	// dates index, the array's keys grouped by their text (keys.go).
	handlers *uint64
	index    *keyIndex
	// ring and heads keep a wrapping array's order (wrap.go), else nil.
	ring, heads *ebpf.Map
	// lister reads an array's map in batches (Elements); the keys of an
	// index it makes live in its buffers, until the next listing makes
	// another index.
	lister bpfrt.Drainer
}

var scalarKey = []byte{0, 0, 0, 0}

// values returns the value copies of key (one per CPU for per-CPU maps),
// nil when the key is absent.
func (g *mapGlobal) values(key []byte) [][]byte {
	vs, err := bpfrt.LookupValues(g.m, key)
	if err != nil {
		return nil
	}
	return vs
}

// put stores value copies under key.
func (g *mapGlobal) put(key []byte, vs [][]byte) error {
	if g.ring != nil {
		return g.putInOrder(key, vs)
	}
	return g.update(key, vs, ebpf.UpdateAny)
}

func (g *mapGlobal) decode(vs [][]byte) interp.Value {
	v := g.gl.DecodeValue(vs)
	v.Str = g.stacks.expand(v.Str)
	return interp.Value(v)
}

func (g *mapGlobal) encode(v interp.Value) [][]byte { return g.gl.EncodeValue(format.Arg(v), g.cpus) }

// partials decodes the per-CPU partials of a statistic.
func (g *mapGlobal) partials(vs [][]byte) []*format.Stat {
	parts := make([]*format.Stat, len(vs))
	for i, v := range vs {
		parts[i] = g.gl.Stat.Decode(v)
	}
	return parts
}

// merged folds the partials of an array element in CPU order.
func (g *mapGlobal) merged(vs [][]byte) *format.Stat {
	s := g.newStat()
	for _, p := range g.partials(vs) {
		s.Merge(p)
	}
	return s
}

// addStat records x in the first CPU's partial of key (user-side `<<<`).
func (g *mapGlobal) addStat(key []byte, x int64) error {
	vs := g.values(key)
	if vs == nil {
		vs = g.gl.EncodeStats(g.cpus, g.newStat)
	}
	s := g.gl.Stat.Decode(vs[0])
	s.Add(x)
	g.gl.Stat.Encode(s, vs[0])
	return g.put(key, vs)
}

// mapScalar is a global long or string: an ARRAY of one element.
type mapScalar struct{ *mapGlobal }

func (g mapScalar) Load() interp.Value {
	if vs := g.values(scalarKey); vs != nil {
		return g.decode(vs)
	}
	return interp.Value{}
}

func (g mapScalar) Store(v interp.Value) { g.put(scalarKey, g.encode(v)) }

// mapStatistic is a global statistic: a PERCPU_ARRAY of one element.
type mapStatistic struct{ *mapGlobal }

func (g mapStatistic) Add(x int64) { g.addStat(scalarKey, x) }

func (g mapStatistic) Total() *format.Stat {
	vs := g.values(scalarKey)
	if vs == nil {
		return g.newStat()
	}
	return format.Total(g.partials(vs)...)
}

func (g mapStatistic) Reset() { g.put(scalarKey, g.gl.EncodeStats(g.cpus, g.newStat)) }

// mapArray is a global array: a (PERCPU_)HASH keyed by the packed keys.
type mapArray struct{ *mapGlobal }

func (g mapArray) packKey(k interp.Key) ([]byte, error) {
	columns := make([]format.Arg, len(k))
	for i, v := range k {
		columns[i] = format.Arg(v)
		columns[i].Str = g.stacks.token(v.Str)
	}
	return g.gl.PackKey(columns)
}

// unpackKey is the interpreter's key of packed key key, stacks as text.
func (g mapArray) unpackKey(key []byte) interp.Key {
	return g.appendKey(make(interp.Key, 0, len(g.gl.Keys)), key)
}

// appendKey appends the columns of packed key key to k, stacks as text.
func (g *mapGlobal) appendKey(k interp.Key, key []byte) interp.Key {
	for i := range g.gl.Keys {
		c := g.gl.KeyColumn(key, i)
		c.Str = g.stacks.expand(c.Str)
		k = append(k, interp.Value(c))
	}
	return k
}

// element is the value copies of key in the map and the values pending
// for it in the last-key caches (nil, nil when it exists nowhere).
func (g mapArray) element(key []byte) (vs, pending [][]byte) {
	return g.values(key), pendingFor(g.cached(), key)
}

// pendingFor is the values pending for key among the caches' entries.
func pendingFor(cached []cacheEntry, key []byte) (pending [][]byte) {
	for _, c := range cached {
		if bytes.Equal(c.key, key) {
			pending = append(pending, c.value)
		}
	}
	return pending
}

// value combines copies and pending values: a long summed, a string, or a
// statistic merged in CPU order.
func (g mapArray) value(vs, pending [][]byte) (interp.Value, *format.Stat) {
	all := vs
	if len(pending) > 0 {
		all = append(slices.Clip(vs), pending...)
	}
	if g.gl.Stat != nil {
		return interp.Value{}, g.merged(all)
	}
	return g.decode(all), nil
}

func (g mapArray) Get(k interp.Key) (interp.Value, bool) {
	members, err := g.members(k)
	if err != nil {
		return interp.Value{}, false
	}
	vs, pending := g.groupElement(members)
	if vs == nil && pending == nil {
		return interp.Value{}, false
	}
	v, _ := g.value(vs, pending)
	return v, true
}

// Set stores v into one member of k's group and deletes the others.
func (g mapArray) Set(k interp.Key, v interp.Value) error {
	members, err := g.members(k)
	if err != nil {
		return err
	}
	home := g.home(members)
	for _, key := range members {
		if !bytes.Equal(key, home) {
			g.delete(key)
		}
	}
	g.uncache(home)
	return g.put(home, g.encode(v))
}

func (g mapArray) Add(k interp.Key, x int64) error {
	members, err := g.members(k)
	if err != nil {
		return err
	}
	return g.addStat(g.home(members), x)
}

func (g mapArray) Stat(k interp.Key) *format.Stat {
	members, err := g.members(k)
	if err != nil {
		return nil
	}
	vs, pending := g.groupElement(members)
	if vs == nil && pending == nil {
		return nil
	}
	_, st := g.value(vs, pending)
	return st
}

func (g mapArray) Delete(k interp.Key) {
	members, _ := g.members(k)
	for _, key := range members {
		g.delete(key)
	}
}

// delete deletes the element of packed key key, pending values included.
func (g mapArray) delete(key []byte) {
	g.uncache(key)
	g.m.Delete(key)
}

func (g mapArray) Clear() {
	g.uncache(nil)
	for _, key := range g.keys() {
		g.m.Delete(key)
	}
}

func (g mapArray) Len() int { return len(g.group()) }

// keys lists the packed keys present in the map.
func (g mapArray) keys() [][]byte { return mapKeys(g.m) }

// mapKeys lists the keys present in hash map m.
func mapKeys(m *ebpf.Map) [][]byte {
	var keys [][]byte
	var prev any // nil asks for the first key
	for {
		next, err := m.NextKeyBytes(prev)
		if err != nil || next == nil {
			return keys
		}
		keys = append(keys, next)
		prev = next
	}
}

// Elements lists the array's elements, a group of keys with one text
// each (keys.go), from one read of the map, in batches (a few system
// calls for 10,000 elements, where a next-key and a lookup each took
// two), and one of its caches.
func (g mapArray) Elements() []*interp.Element {
	keys, values, err := g.lister.List(g.m)
	if err != nil {
		return nil
	}
	cached := g.cached()
	groups := g.groupKeys(keys, values, cached)
	elems := make([]*interp.Element, len(groups))
	for i, grp := range groups {
		vs, pending := grp.values[0], pendingFor(cached, grp.members[0])
		for j, key := range grp.members[1:] {
			vs = append(slices.Clip(vs), grp.values[j+1]...)
			pending = append(pending, pendingFor(cached, key)...)
		}
		elems[i] = &interp.Element{Key: grp.key}
		elems[i].Value, elems[i].Stat = g.value(vs, pending)
	}
	return elems
}

// cacheEntry is the pending value of one CPU's last-key cache.
type cacheEntry struct{ key, value []byte }

// cached returns the valid entries of the array's last-key caches
// (bpfgen's cache.go), none without a cache.
func (g mapArray) cached() []cacheEntry {
	var entries []cacheEntry
	for _, v := range g.cacheValues() {
		if key, value, valid := g.gl.CacheEntry(v); valid {
			entries = append(entries, cacheEntry{key, value})
		}
	}
	return entries
}

// cacheValues reads every CPU's cache element (nil without a cache).
func (g mapArray) cacheValues() [][]byte {
	if g.cache == nil {
		return nil
	}
	vs, _ := bpfrt.LookupValues(g.cache, uint32(0))
	return vs
}

// uncache drops the pending values of key (nil: of every key); user space
// then owns the element's value.
func (g mapArray) uncache(key []byte) {
	vs := g.cacheValues()
	if vs == nil {
		return
	}
	for _, v := range vs {
		if k, _, _ := g.gl.CacheEntry(v); key == nil || bytes.Equal(k, key) {
			clear(v)
		}
	}
	g.cache.Update(uint32(0), vs, ebpf.UpdateAny)
}
