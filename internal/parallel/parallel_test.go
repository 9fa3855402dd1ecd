package parallel

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
)

func TestMap(t *testing.T) {
	got, err := Map(100, func(i int) (int, error) { return i * i, nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i*i {
			t.Fatalf("item %d: %d", i, v)
		}
	}
	_, err = Map(100, func(i int) (int, error) {
		if i%30 == 29 {
			return 0, fmt.Errorf("item %d", i)
		}
		return i, nil
	})
	if err == nil || err.Error() != "item 29" {
		t.Errorf("error %v, want the first in order (item 29)", err)
	}
	if _, err := Map(0, func(int) (int, error) { return 0, errors.New("never") }); err != nil {
		t.Errorf("no items: %v", err)
	}
}

// TestLargestFirst checks the order items start in (one goroutine: the
// order is the schedule) and that results and errors keep index order.
func TestLargestFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sizes := []int{3, 55, 0, 17, 55, 8}
	var started []int
	got, err := MapLargestFirst(len(sizes), func(i int) int { return sizes[i] }, func(i int) (int, error) {
		started = append(started, i)
		return sizes[i] * 2, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 4, 3, 5, 0, 2}; !slices.Equal(started, want) {
		t.Errorf("started %v, want %v (decreasing size, ties in index order)", started, want)
	}
	if want := []int{6, 110, 0, 34, 110, 16}; !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	_, err = MapLargestFirst(len(sizes), func(i int) int { return sizes[i] }, func(i int) (int, error) {
		if i == 3 || i == 4 {
			return 0, fmt.Errorf("item %d", i)
		}
		return i, nil
	})
	if err == nil || err.Error() != "item 3" {
		t.Errorf("error %v, want the first in index order (item 3), not the first to run (4)", err)
	}
}
