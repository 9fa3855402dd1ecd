package snapshot

import (
	"fmt"
	"reflect"
	"unsafe"
)

// A pointer into a value rather than to its start (&s[i], &x.field) would
// come back pointing to a copy of its own: Encode refuses it. Only a type
// some value holds by value (a struct's field, an array's or a slice's
// element, or theirs) can be pointed to so: such an object type is
// "inner". A Codec knows where each type holds inner values (their
// offsets); Encode notes the slices whose elements hold some, and then
// looks for an object of an inner type at each place an object or a
// slice holds one of that type. A graph with no object of an inner type
// (no *string when a struct has a string field, say) is not looked at.

// innerField is where a value holds a value of an inner type: its offset
// and the object type.
type innerField struct {
	offset uintptr
	id     int
}

// spannedSlice is a slice whose elements hold inner values.
type spannedSlice struct {
	data   unsafe.Pointer
	n      int
	size   uintptr
	fields []innerField
}

// planInterior marks the inner object types, then lists where each
// object type, and each slice type's element, holds values of them.
func (c *Codec) planInterior() {
	held := map[reflect.Type][]component{}
	c.inner = make([]bool, len(c.objects))
	mark := func(t reflect.Type) {
		if id, ok := c.objectID[t]; ok {
			c.inner[id] = true
		}
	}
	for t := range c.coders {
		if t.Kind() == reflect.Slice {
			t = t.Elem()
			mark(t)
		}
		for _, f := range components(t, held) {
			mark(f.typ)
		}
	}
	innerFields := func(t reflect.Type, self bool) []innerField {
		var fields []innerField
		if id, ok := c.objectID[t]; ok && self && c.inner[id] {
			fields = append(fields, innerField{0, id})
		}
		for _, f := range components(t, held) {
			if id, ok := c.objectID[f.typ]; ok && c.inner[id] {
				fields = append(fields, innerField{f.offset, id})
			}
		}
		return fields
	}
	c.innerFields = make([][]innerField, len(c.objects))
	for id, t := range c.objects {
		c.innerFields[id] = innerFields(t, false)
	}
	for t, fields := range c.sliceFields {
		*fields = innerFields(t.Elem(), true)
	}
}

// component is a value another holds by value, at offset.
type component struct {
	offset uintptr
	typ    reflect.Type
}

// components lists the values a value of t holds by value, with their
// offsets: its fields or elements, theirs, and so on (not through
// pointers, slices or maps); held keeps the lists made.
func components(t reflect.Type, held map[reflect.Type][]component) []component {
	if cs, ok := held[t]; ok {
		return cs
	}
	var cs []component
	add := func(offset uintptr, f reflect.Type) {
		cs = append(cs, component{offset, f})
		for _, c := range components(f, held) {
			cs = append(cs, component{offset + c.offset, c.typ})
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			add(f.Offset, f.Type)
		}
	case reflect.Array:
		for i := range t.Len() {
			add(uintptr(i)*t.Elem().Size(), t.Elem())
		}
	}
	held[t] = cs
	return cs
}

// elements notes a slice whose elements hold inner values.
func (e *encoder) elements(data unsafe.Pointer, size uintptr, n int, fields []innerField) {
	if len(fields) > 0 && n > 0 {
		e.slices = append(e.slices, spannedSlice{data, n, size, fields})
	}
}

// checkInterior refuses a graph where an object of an inner type is a
// value another object or a slice's element holds.
func (e *encoder) checkInterior(c *Codec) error {
	points := map[uintptr]int{}
	for p, o := range e.objects {
		if c.inner[o.id] {
			points[uintptr(p)] = o.id
		}
	}
	if len(points) == 0 {
		return nil
	}
	inside := func(base uintptr, fields []innerField) error {
		for _, f := range fields {
			if id, ok := points[base+f.offset]; ok && id == f.id {
				return fmt.Errorf("%w: a pointer into the inside of a value", ErrUnsupported)
			}
		}
		return nil
	}
	for p, o := range e.objects {
		if err := inside(uintptr(p), c.innerFields[o.id]); err != nil {
			return err
		}
	}
	for _, s := range e.slices {
		for i := range s.n {
			if err := inside(uintptr(s.data)+uintptr(i)*s.size, s.fields); err != nil {
				return err
			}
		}
	}
	return nil
}
