package syntax

import (
	"reflect"
	"testing"
)

// TestCloneCopiesEveryNode clones every file of the tapset library and of
// testdata/run and checks each copy: equal to its original, field by
// field (reflect.DeepEqual), and sharing no node with it (the nodes
// reachable from either by reflection, through every field, are
// disjoint); only sources and symbols may be shared.
func TestCloneCopiesEveryNode(t *testing.T) {
	macros, errs := LoadMacros(sources(t, "../tapset/*.stpm")...)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var files []*File
	for _, pattern := range []string{"../tapset/*.stp", "../../testdata/run/*.stp"} {
		for _, src := range sources(t, pattern) {
			if f, err := Parse(src, &Config{Tapset: true, Macros: macros}); err == nil {
				files = append(files, f)
			}
		}
	}
	if len(files) < 400 {
		t.Fatalf("parsed %d files", len(files))
	}
	for _, f := range files {
		c := Clone(f)
		if !reflect.DeepEqual(c, f) {
			t.Fatalf("%s: the copy differs from the original", f.Src.Name)
		}
		mine := reachable(reflect.ValueOf(f), map[uintptr]bool{})
		for p := range reachable(reflect.ValueOf(c), map[uintptr]bool{}) {
			if mine[p] {
				t.Fatalf("%s: the copy shares a node with the original", f.Src.Name)
			}
		}
	}
	if Clone(Expr(nil)) != nil || Clone((*Block)(nil)) != nil || Clone([]*Component(nil)) != nil {
		t.Error("nil does not clone to nil")
	}
}

// reachable adds to seen the addresses of the structs v reaches, but
// sources and symbols.
func reachable(v reflect.Value, seen map[uintptr]bool) map[uintptr]bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return seen
		}
		switch v.Interface().(type) {
		case *Source, *Var, *Func:
			return seen
		}
		seen[v.Pointer()] = true
		reachable(v.Elem(), seen)
	case reflect.Interface:
		if !v.IsNil() {
			reachable(v.Elem(), seen)
		}
	case reflect.Slice:
		for i := range v.Len() {
			reachable(v.Index(i), seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				reachable(v.Field(i), seen)
			}
		}
	}
	return seen
}
