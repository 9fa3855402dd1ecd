package sema

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/probes"
	"github.com/bpftap/bpftap/internal/probes/probestest"
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

// TestExpandAheadStops checks that the expansions made ahead end with the
// derivation: the one under way is waited for, those never asked for
// (past a `!` point that matched) are dropped.
func TestExpandAheadStops(t *testing.T) {
	started := make(chan struct{})
	var finished, dropped atomic.Bool
	first := &probes.Family{Name: "first", Paths: []string{"first"}, Expand: func(p *probes.Point) ([]*probes.Point, error) {
		<-started // the second point's expansion is under way
		return []*probes.Point{p}, nil
	}}
	second := &probes.Family{Name: "second", Paths: []string{"second"}, Concurrent: true, Expand: func(p *probes.Point) ([]*probes.Point, error) {
		close(started)
		time.Sleep(50 * time.Millisecond)
		finished.Store(true)
		return []*probes.Point{p}, nil
	}}
	third := &probes.Family{Name: "third", Paths: []string{"third"}, Concurrent: true, Expand: func(p *probes.Point) ([]*probes.Point, error) {
		dropped.Store(false)
		return []*probes.Point{p}, nil
	}}
	dropped.Store(true)
	file, err := syntax.Parse(syntax.NewSource("<test>", "probe first!, second, third { next }"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Elaborate([]*syntax.File{file}, Options{Registry: probes.NewRegistry(first, second, third)}); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Error("Elaborate returned while the second point's expansion was under way")
	}
	time.Sleep(100 * time.Millisecond)
	if !dropped.Load() {
		t.Error("the third point, which the derivation never reached, was expanded after Elaborate returned")
	}
}

// TestExpandAheadLoop checks that an alias reached inside itself is not
// walked again: the walk ahead of `probe a.*.return` through the alias
// a = a.A.return, whose `*` reaches a again at every level with all of
// the library's families, took time exponential in the alias depth (a
// fuzzer's input; pass 2 hung), where the derivation reports the loop.
func TestExpandAheadLoop(t *testing.T) {
	file, err := syntax.Parse(syntax.NewSource("<test>", `probe A = a = a.A.return = *, kernel.trace("") { x } probe a.*.return { }`), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Elaborate([]*syntax.File{file}, Options{Registry: probes.BuiltinWith(probestest.New(), probes.Config{})})
		done <- err
	}()
	select {
	case err := <-done:
		var errs *Errors
		if !errors.As(err, &errs) || !strings.Contains(errs.Text(), "recursive loop in alias expansion") {
			t.Errorf("got %v, want the recursive loop reported", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the elaboration of a recursive alias did not end in 20 s")
	}
}
