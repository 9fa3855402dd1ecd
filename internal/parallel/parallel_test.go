package parallel

import (
	"errors"
	"fmt"
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
