package sema

import (
	"errors"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/syntax"
)

// TestExpandAhead checks that the point of a concurrent family is
// expanded while the derivation is still at an earlier point, through an
// alias, and once: the first point's expansion waits for the second's,
// which only an expansion ahead of the derivation can have started.
func TestExpandAhead(t *testing.T) {
	started := make(chan struct{})
	expansions := 0
	first := &probes.Family{Name: "first", Paths: []string{"first"}, Expand: func(p *probes.Point) ([]*probes.Point, error) {
		select {
		case <-started:
			return []*probes.Point{p}, nil
		case <-time.After(10 * time.Second):
			return nil, errors.New("the second point was not expanded ahead")
		}
	}}
	second := &probes.Family{Name: "second", Paths: []string{"second"}, Concurrent: true, Expand: func(p *probes.Point) ([]*probes.Point, error) {
		expansions++
		close(started)
		return []*probes.Point{p}, nil
	}}
	file, err := syntax.Parse(syntax.NewSource("<test>", "probe via = second {} probe first, via { next }"), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Elaborate([]*syntax.File{file}, Options{Registry: probes.NewRegistry(first, second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.Probes) != 2 || expansions != 1 {
		t.Errorf("%d probes, second expanded %d times; want 2 probes, one expansion", len(prog.Probes), expansions)
	}
}
