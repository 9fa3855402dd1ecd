package kernelside

import (
	"errors"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/bpfrt"
	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
	"github.com/cilium/ebpf"
)

// Globals in generations (bpfgen's generations.go): a global the kernel
// only updates is served from memory (interp.MemoryStorage), into which
// the kernel's counts are folded when a user-side handler first touches
// such a global:
//
//  1. Before the flip, every global whose old generation was not folded
//     yet is folded: the old generation is about to be live again.
//  2. The flip: GenMap's word names the other generation, then an update
//     of an ARRAY_OF_MAPS of our own (sync) returns after an RCU grace
//     period, which every program running when the word changed has
//     finished (tracing programs run in RCU read sections). From then on
//     nothing writes the old generation.
//  3. Each global's old generation (its element, its hash, its last-key
//     cache element) is added to the memory copy and emptied when the
//     handler first touches that global (or at the next flip).
//
// Once the programs are detached (Session.Stop) nothing flips: both
// generations are folded at a global's first touch. An array's second
// hash is created at the first flip, so a run whose handlers never touch
// it (or only after the programs are detached) does not pay its memory.
//
// One flip serves a handler, however many globals it touches; a handler
// that touches none waits for nothing. What the kernel counts while the
// handler runs is in the new generation and is added after it, so the
// handler's reads agree with each other and its writes (`delete a`,
// `x = 0`, `a[k] += v`) erase nothing it did not see: the result is the
// handler's run followed by the kernel's updates, as under stap's lock.
// The grace period is the cost: ~8 ms per flip on this 2-CPU VM.
//
// Not covered yet: a sleepable uprobe program (one that reads user
// strings with bpf_copy_from_user, bpfgen's sleepable.go) runs in an
// RCU-tasks-trace section, which the grace period does not wait for; it
// loads the word after its last sleeping call, but may be preempted
// between that load and its update. Wrapping the update in the
// bpf_rcu_read_lock kfuncs would close that window.
type generations struct {
	word *ebpf.Map // GenMap
	// sync is an ARRAY_OF_MAPS holding waitee; updating it waits for a
	// grace period.
	sync, waitee *ebpf.Map
	live         uint32 // the generation the programs update
	// flipped is the handler count of the last flip; handlers the count of
	// handlers started (Session.handlers).
	flipped  uint64
	handlers *uint64
	globals  []*genGlobal
	storage  map[*syntax.Var]interp.Storage // what Session.Storage gave for each
	err      error                          // the first failure, reported by Session.Stop
	stopped  bool                           // the programs are detached
	objs     *objects                       // which creates a second generation's hash
}

// newGenerations prepares the flips of a session whose module keeps
// globals in generations (word is its GenMap); o owns the maps it makes.
func newGenerations(word *ebpf.Map, o *objects, handlers *uint64) (*generations, error) {
	inner := &ebpf.MapSpec{Name: "waitee", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	waitee, err := o.create(bpfgen.Map{Ref: "waitee", Spec: inner})
	if err != nil {
		return nil, err
	}
	sync, err := o.create(bpfgen.Map{Ref: "sync", Spec: &ebpf.MapSpec{Name: "sync", Type: ebpf.ArrayOfMaps,
		KeySize: 4, ValueSize: 4, MaxEntries: 1, InnerMap: inner}})
	if err != nil {
		return nil, err
	}
	// No flip has happened: the first handler that touches a global flips.
	return &generations{word: word, sync: sync, waitee: waitee, flipped: ^uint64(0), handlers: handlers,
		storage: map[*syntax.Var]interp.Storage{}, objs: o}, nil
}

// genGlobal is one global in generations.
type genGlobal struct {
	*mapGlobal
	gens    *generations
	memory  interp.Storage // what the handlers see
	folder  interp.Folder  // memory's
	stale   bool           // the old generation holds counts not folded yet
	drained bool           // folded since the programs were detached
	// drainer, key and partial hold the elements being folded: a fold of
	// 10,000 elements allocates none of them.
	drainer bpfrt.Drainer
	key     interp.Key
	partial *format.Stat
}

// ready makes g's memory copy hold everything the kernel counted before
// the current handler started: the first touch in a handler flips.
func (gs *generations) ready(g *genGlobal) error {
	if gs.stopped {
		if g.drained {
			return nil
		}
		g.drained = true
		return gs.fail(errors.Join(g.fold(gs.live^1), g.fold(gs.live)))
	}
	if gs.flipped != *gs.handlers {
		if err := gs.flip(); err != nil {
			return err
		}
	}
	if !g.stale {
		return nil
	}
	g.stale = false
	return gs.fail(g.fold(gs.live ^ 1))
}

// flip makes the programs update the other generation and waits until
// none updates the old one.
func (gs *generations) flip() error {
	for _, g := range gs.globals {
		if g.stale {
			g.stale = false
			if err := g.fold(gs.live ^ 1); err != nil {
				return gs.fail(err)
			}
		}
	}
	gs.flipped = *gs.handlers
	for _, g := range gs.globals {
		if err := g.createHash(gs.live ^ 1); err != nil {
			return gs.fail(err)
		}
	}
	if err := gs.word.Update(uint32(0), uint64(gs.live^1), ebpf.UpdateAny); err != nil {
		return gs.fail(err)
	}
	gs.live ^= 1
	if err := gs.sync.Update(uint32(0), gs.waitee, ebpf.UpdateAny); err != nil {
		return gs.fail(err)
	}
	for _, g := range gs.globals {
		g.stale = true
	}
	return nil
}

// fail keeps the first failure and returns err.
func (gs *generations) fail(err error) error {
	if err != nil && gs.err == nil {
		gs.err = output.Failf("folding the kernel's counts into a global: %w", err)
	}
	return err
}

// fold adds generation gen of g, which no program updates, to the memory
// copy and empties it.
func (g *genGlobal) fold(gen uint32) error {
	if g.gl.Outer == nil {
		vs, err := bpfrt.LookupValues(g.m, gen)
		if err != nil {
			return err
		}
		g.add(nil, vs)
		return g.m.Update(gen, g.empty(), ebpf.UpdateAny)
	}
	hashes := g.gens.objs.inner[g.gl.Ref]
	if int(gen) >= len(hashes) {
		return nil // never used: created by the first flip
	}
	keys, values, err := g.drainer.Drain(hashes[gen])
	if err != nil {
		return err
	}
	if err := g.addDrained(gen, keys, values); err != nil {
		return err
	}
	return g.foldCache(gen)
}

// addDrained adds generation gen's drained elements to the memory copy:
// in the map's order, or for a wrapping array in ringOrder.
func (g *genGlobal) addDrained(gen uint32, keys [][]byte, values [][][]byte) error {
	if g.ring == nil {
		for i, key := range keys {
			g.add(key, values[i])
		}
		return nil
	}
	order, err := g.ringOrder(gen, keys)
	if err != nil {
		return err
	}
	for _, i := range order {
		g.add(keys[i], values[i])
	}
	return nil
}

// createHash creates the hash of an array's generation gen unless it
// exists: the programs are about to use it.
func (g *genGlobal) createHash(gen uint32) error {
	o := g.gens.objs
	if g.gl.Outer == nil || int(gen) < len(o.inner[g.gl.Ref]) {
		return nil
	}
	_, err := o.addInner(bpfgen.Map{Ref: g.gl.Ref, Spec: g.gl.Outer}, gen)
	return err
}

// foldCache adds the pending values of generation gen's last-key cache
// element and empties it.
func (g *genGlobal) foldCache(gen uint32) error {
	if g.cache == nil {
		return nil
	}
	vs, err := bpfrt.LookupValues(g.cache, gen)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if key, value, valid := g.gl.CacheEntry(v); valid {
			g.add(key, [][]byte{value})
		}
		clear(v)
	}
	return g.cache.Update(gen, vs, ebpf.UpdateAny)
}

// add folds value copies (a long's, or a statistic's partials) into the
// element of packed key key in the memory copy (nil key: the scalar).
func (g *genGlobal) add(key []byte, vs [][]byte) {
	var k interp.Key
	if key != nil {
		g.key = g.appendKey(g.key[:0], key)
		k = g.key
	}
	if g.gl.Stat == nil {
		g.folder.Fold(k, g.gl.DecodeValue(vs).Int, nil)
		return
	}
	if g.partial == nil {
		g.partial = format.NewStat(g.gl.Stat.Hist, g.gl.Stat.Shift)
	}
	for _, v := range vs {
		g.gl.Stat.DecodeInto(v, g.partial)
		g.folder.Fold(k, 0, g.partial)
	}
}

// empty is the value copies of an empty element.
func (g *genGlobal) empty() [][]byte {
	if g.gl.Stat != nil {
		return g.gl.EncodeStats(g.cpus, g.newStat)
	}
	return g.encode(interp.Value{})
}

// genStorage returns the storage of a global in generations, registered
// with the session's flips, the same for every call. Its old generation
// is folded at the first touch: it is quiescent after a flip, and before
// the first one no program has written it.
func (s *Session) genStorage(g interp.Global, mg *mapGlobal) interp.Storage {
	if st, ok := s.gens.storage[g.Var]; ok {
		return st
	}
	gg := &genGlobal{mapGlobal: mg, gens: s.gens, memory: interp.MemoryStorage(g), stale: true}
	s.gens.globals = append(s.gens.globals, gg)
	st := gg.storage()
	s.gens.storage[g.Var] = st
	return st
}

// storage serves g to the interpreter.
func (gg *genGlobal) storage() interp.Storage {
	switch {
	case gg.memory.Array != nil:
		gg.folder = gg.memory.Array.(interp.Folder)
		return interp.Storage{Array: genArray{gg}}
	case gg.memory.Statistic != nil:
		gg.folder = gg.memory.Statistic.(interp.Folder)
		return interp.Storage{Statistic: genStatistic{gg}}
	}
	gg.folder = gg.memory.Scalar.(interp.Folder)
	return interp.Storage{Scalar: genScalar{gg}}
}

// genScalar, genStatistic and genArray serve the memory copy once ready.
// genArray is no interp.OrderedArray: the order of its keys is the
// kernel's hash order, which the interpreter replaces by the keys' order;
// the memory copy keeps that order (interp.KeyOrderKeeper) unless it
// wraps, where its order says which element goes first.
type (
	genScalar    struct{ *genGlobal }
	genStatistic struct{ *genGlobal }
	genArray     struct{ *genGlobal }
)

func (g genScalar) Load() interp.Value {
	g.gens.ready(g.genGlobal)
	return g.memory.Scalar.Load()
}

func (g genScalar) Store(v interp.Value) {
	g.gens.ready(g.genGlobal)
	g.memory.Scalar.Store(v)
}

func (g genStatistic) Add(x int64) {
	g.gens.ready(g.genGlobal)
	g.memory.Statistic.Add(x)
}

func (g genStatistic) Total() *format.Stat {
	g.gens.ready(g.genGlobal)
	return g.memory.Statistic.Total()
}

func (g genStatistic) Reset() {
	g.gens.ready(g.genGlobal)
	g.memory.Statistic.Reset()
}

func (g genArray) Get(k interp.Key) (interp.Value, bool) {
	g.gens.ready(g.genGlobal)
	return g.memory.Array.Get(k)
}

func (g genArray) Set(k interp.Key, v interp.Value) error {
	if err := g.gens.ready(g.genGlobal); err != nil {
		return err
	}
	return g.memory.Array.Set(k, v)
}

func (g genArray) Add(k interp.Key, x int64) error {
	if err := g.gens.ready(g.genGlobal); err != nil {
		return err
	}
	return g.memory.Array.Add(k, x)
}

func (g genArray) Stat(k interp.Key) *format.Stat {
	g.gens.ready(g.genGlobal)
	return g.memory.Array.Stat(k)
}

func (g genArray) Delete(k interp.Key) {
	g.gens.ready(g.genGlobal)
	g.memory.Array.Delete(k)
}

func (g genArray) Clear() {
	g.gens.ready(g.genGlobal)
	g.memory.Array.Clear()
}

func (g genArray) Len() int {
	g.gens.ready(g.genGlobal)
	return g.memory.Array.Len()
}

func (g genArray) Elements() []*interp.Element {
	g.gens.ready(g.genGlobal)
	return g.memory.Array.Elements()
}

func (g genArray) KeepKeyOrder(elems []*interp.Element) {
	if !g.gl.Var.Wrap {
		g.memory.Array.(interp.OrderedArray).Reorder(elems)
	}
}
