package snapshot

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

type shape interface{ area() int }

type square struct {
	side  int
	owner *graph
}

type circle struct{ r int8 }

func (s *square) area() int { return s.side * s.side }
func (c *circle) area() int { return 3 * int(c.r) * int(c.r) }

type graph struct {
	Name     string
	nodes    []*node
	byName   map[string]*node
	weights  map[*node]float64
	shapes   map[shape]*node
	first    shape
	pair     [2]*node
	small    int16
	big      uint64
	flag     bool
	f32      float32
	inline   node
	empty    []int
	none     []int
	callback func() `snapshot:"-"`
	hook     func()
	typed    *int
	world    *world
}

// world is what graphs name and do not copy: an Extern.
type world struct{ name string }

var worlds = map[string]*world{"earth": {"earth"}, "mars": {"mars"}}

var worldExtern = Extern{
	Type: (*world)(nil),
	Name: func(x any) (string, error) {
		if w := x.(*world); worlds[w.name] == w {
			return w.name, nil
		}
		return "", errors.New("a world of no name")
	},
	Resolve: func(name string) (any, error) {
		if w, ok := worlds[name]; ok {
			return w, nil
		}
		return nil, errors.New("no such world")
	},
}

type node struct {
	Label string
	next  *node
	self  *node
	shape shape
	n     int
}

func newCodec(t *testing.T) *Codec {
	t.Helper()
	c, err := New((*graph)(nil), Types{Concrete: []any{(*square)(nil), (*circle)(nil)}, Externs: []Extern{worldExtern}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sample is a graph with cycles, sharing, interfaces and maps keyed by
// pointers and interfaces.
func sample() *graph {
	g := &graph{Name: "g", small: -300, big: math.MaxUint64, flag: true, f32: -1.5, empty: []int{}, callback: func() {}}
	a, b := &node{Label: "a", n: math.MinInt64 + 1}, &node{Label: "b", n: 7}
	a.next, b.next, a.self = b, a, a
	sq := &square{side: 3, owner: g}
	a.shape, b.shape = sq, &circle{r: -2}
	g.nodes = []*node{a, b, a}
	g.byName = map[string]*node{"a": a, "b": b}
	g.weights = map[*node]float64{a: 0.5, b: math.Inf(-1)}
	g.shapes = map[shape]*node{sq: b}
	g.first = sq
	g.pair = [2]*node{b, {n: 1}}
	g.inline = node{Label: "inline", next: b}
	x := 42
	g.typed = &x
	g.world = worlds["mars"]
	return g
}

func roundTrip(t *testing.T, c *Codec, g *graph) *graph {
	t.Helper()
	data, err := c.Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return v.(*graph)
}

func TestRoundTrip(t *testing.T) {
	c := newCodec(t)
	g := sample()
	h := roundTrip(t, c, g)
	if h.callback != nil {
		t.Error("a skipped field was written")
	}
	a, b := h.nodes[0], h.nodes[1]
	sq := a.shape.(*square)
	weights, shapes := h.weights, h.shapes
	// Maps keyed by pointers are equal only with the same keys: compared apart.
	g.callback, g.weights, g.shapes, h.weights, h.shapes = nil, nil, nil, nil, nil
	if !reflect.DeepEqual(g, h) {
		t.Fatalf("decoded %+v\nwant %+v", h, g)
	}
	switch {
	case h.nodes[2] != a || a.self != a || b.next != a || a.next != b:
		t.Error("the nodes' sharing and cycles were not kept")
	case h.byName["a"] != a || h.pair[0] != b || h.inline.next != b:
		t.Error("references to the nodes are not the decoded nodes")
	case sq.owner != h || h.first != shape(sq) || shapes[sq] != b || len(shapes) != 1:
		t.Error("the interfaces do not hold the decoded objects")
	case weights[a] != 0.5 || !math.IsInf(weights[b], -1) || len(weights) != 2:
		t.Error("a map keyed by pointers lost its keys")
	case h.world != worlds["mars"]:
		t.Error("the extern was not resolved by its name")
	case h.none != nil || h.empty == nil:
		t.Error("nil and empty slices were confused")
	}
}

// TestRefuses: what cannot be written is refused, not written wrong.
func TestRefuses(t *testing.T) {
	c := newCodec(t)
	for name, mend := range map[string]func(g *graph){
		"a func":                        func(g *graph) { g.hook = func() {} },
		"a type not registered":         func(g *graph) { g.first = (*other)(nil) },
		"a pointer into a slice":        func(g *graph) { xs := []int{1, 2}; g.empty, g.typed = xs, &xs[1] },
		"a pointer to a slice's first":  func(g *graph) { xs := []int{1, 2}; g.empty, g.typed = xs, &xs[0] },
		"a pointer into an object":      func(g *graph) { g.typed = &g.pair[1].n },
		"an extern of no name":          func(g *graph) { g.world = &world{"pluto"} },
		"a pointer to a value inside":   func(g *graph) { g.inline.self = &g.inline },
		"a pointer to an object's head": func(g *graph) { g.typed = &g.first.(*square).side },
	} {
		g := sample()
		mend(g)
		if _, err := c.Encode(g); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: Encode returned %v", name, err)
		}
	}
}

type other struct{}

func (*other) area() int { return 0 }

// TestCorrupt: every prefix and every byte changed of a snapshot is
// refused or decoded, never a panic; a foreign schema is refused.
func TestCorrupt(t *testing.T) {
	c := newCodec(t)
	data, err := c.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	for n := range data {
		if _, err := c.Decode(data[:n]); err == nil {
			t.Fatalf("a prefix of %d of %d bytes decoded", n, len(data))
		}
	}
	for i := range data {
		for _, x := range []byte{0, 1, 0x80, 0xff} {
			bad := append([]byte(nil), data...)
			bad[i] = x
			c.Decode(bad)
		}
	}
	delete(worlds, "mars")
	defer func() { worlds["mars"] = &world{"mars"} }()
	if _, err := c.Decode(data); err == nil {
		t.Error("an extern that cannot be resolved decoded")
	}
	other, err := New((*node)(nil), Types{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Decode(data); !errors.Is(err, ErrCorrupt) {
		t.Errorf("another schema's codec decoded: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	c, err := New((*graph)(nil), Types{Concrete: []any{(*square)(nil), (*circle)(nil)}, Externs: []Extern{worldExtern}})
	if err != nil {
		f.Fatal(err)
	}
	data, err := c.Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := c.Decode(b); err == nil {
			if _, err := c.Encode(v.(*graph)); err != nil && !errors.Is(err, ErrUnsupported) {
				t.Fatal(err)
			}
		}
	})
}
