// Package snapshot writes a graph of Go values to bytes and reads it back
// in another process of the same binary: the elaborated program that
// bpftap keeps across runs (internal/driver's program cache).
//
// The algorithm. A Codec is built once for a root type: it walks every
// type the root reaches and makes, for each, an encoding and a decoding
// function over unsafe pointers, so that encoding and decoding are
// straight-line code per field, reflection being used only to build them
// and to make slices, maps and interface values. Struct fields tagged
// `snapshot:"-"` are skipped (decoded as zero): state a later stage does
// not read. Values are written depth-first, except what pointers point
// to: an object (the target of a pointer, or of an interface holding a
// pointer) is numbered at its first reference and its body written after
// the bodies numbered before it, so a graph with cycles and sharing is
// written once and read back with the same sharing. The decoder reads the
// bodies in the same order; a reference always comes before its body, so
// it allocates each object at its first reference (from one block per
// type, whose size the header gives) and fills it when its body comes.
//
// Some objects are not the graph's to copy (a kernel's BTF): an Extern
// writes them by a name and finds them again by it when reading.
//
// What cannot be written is refused, not lost: a non-nil func, a channel
// or unsafe pointer, an interface holding a type not registered or not a
// pointer, and a pointer into the inside of another written object or of
// a slice's elements (the copy would not share it). Slices are written by
// value: two slices sharing elements come back apart.
//
// Reading trusts nothing of the bytes but what a checksum cannot catch:
// every length and index is checked, each object keeps the type of its
// first reference, and the header names the schema (every type's fields
// and kinds) the bytes were written with.
package snapshot

import (
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// ErrUnsupported says a value cannot be written: the Codec refuses it.
var ErrUnsupported = errors.New("snapshot: cannot write")

// ErrCorrupt says the bytes are not a snapshot of this Codec's schema.
var ErrCorrupt = errors.New("snapshot: corrupt or foreign bytes")

// A Codec writes and reads graphs rooted at values of one pointer type.
type Codec struct {
	root   reflect.Type // the root's type, a pointer
	coders map[reflect.Type]*coder
	// objects are the types pointers point to, each object's block in
	// the decoder; concrete are the registered types interfaces hold.
	objects  []reflect.Type
	objectID map[reflect.Type]int
	concrete []reflect.Type
	externs  map[reflect.Type]*Extern
	schema   uint64
	// inner says, by object type, which objects may be values other
	// values hold; innerFields where each object type holds such values,
	// sliceFields where each slice type's elements do (interior.go:
	// planned at the first Encode, which alone needs them).
	planned     sync.Once
	inner       []bool
	innerFields [][]innerField
	sliceFields map[reflect.Type]*[]innerField
}

// Extern is how a Codec writes the objects of a pointer type it must
// not copy: by the name Name gives one (an error refuses the graph), read
// back as the object Resolve finds by that name.
type Extern struct {
	Type    any // a nil pointer of the type, as (*T)(nil)
	Name    func(x any) (string, error)
	Resolve func(name string) (any, error)
}

// Types says the types of the graphs a Codec writes: concrete are the
// types interfaces in the graph may hold, each a pointer type given by a
// nil value of it, as (*T)(nil); Externs are written by name.
type Types struct {
	Concrete []any
	Externs  []Extern
}

// coder encodes and decodes values of one type in place.
type coder struct {
	enc func(e *encoder, p unsafe.Pointer) error
	dec func(d *decoder, p unsafe.Pointer) error
}

// New makes the Codec of graphs rooted at a value of root's type (a
// pointer).
func New(root any, types Types) (*Codec, error) {
	c := &Codec{root: reflect.TypeOf(root), coders: map[reflect.Type]*coder{}, objectID: map[reflect.Type]int{},
		externs: map[reflect.Type]*Extern{}, sliceFields: map[reflect.Type]*[]innerField{}}
	if c.root == nil || c.root.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("%w: the root %v is not a pointer", ErrUnsupported, c.root)
	}
	var desc strings.Builder
	for i, x := range types.Externs {
		t := reflect.TypeOf(x.Type)
		if t == nil || t.Kind() != reflect.Pointer {
			return nil, fmt.Errorf("%w: the extern type %v is not a pointer", ErrUnsupported, t)
		}
		c.externs[t] = &types.Externs[i]
		fmt.Fprintf(&desc, "extern %v\n", t)
	}
	for _, x := range types.Concrete {
		t := reflect.TypeOf(x)
		if t == nil || t.Kind() != reflect.Pointer {
			return nil, fmt.Errorf("%w: the concrete type %v is not a pointer", ErrUnsupported, t)
		}
		c.concrete = append(c.concrete, t)
		fmt.Fprintf(&desc, "concrete %v\n", t)
	}
	c.coderOf(c.root, &desc)
	for _, t := range c.concrete {
		c.coderOf(t, &desc)
	}
	h := fnv.New64a()
	h.Write([]byte(desc.String()))
	c.schema = h.Sum64()
	return c, nil
}

// coderOf returns t's coder, making it (and describing t in desc) the
// first time; the coder of a type that contains itself is filled after
// it is handed out.
func (c *Codec) coderOf(t reflect.Type, desc *strings.Builder) *coder {
	if cd, ok := c.coders[t]; ok {
		return cd
	}
	cd := &coder{}
	c.coders[t] = cd
	desc.WriteString(t.String() + " " + t.Kind().String())
	switch t.Kind() {
	case reflect.Bool:
		*cd = boolCoder
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*cd = intCoder(t.Size())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		*cd = uintCoder(t.Size())
	case reflect.Float32, reflect.Float64:
		*cd = floatCoder(t.Size())
	case reflect.String:
		*cd = stringCoder
	case reflect.Pointer:
		desc.WriteByte('\n')
		if x, ok := c.externs[t]; ok {
			*cd = externCoder(t, x)
		} else {
			*cd = c.pointerCoder(t, c.coderOf(t.Elem(), desc))
		}
		return cd
	case reflect.Slice:
		desc.WriteByte('\n')
		c.sliceFields[t] = new([]innerField)
		*cd = sliceCoder(t, c.coderOf(t.Elem(), desc), c.sliceFields[t])
		return cd
	case reflect.Array:
		desc.WriteByte('\n')
		*cd = arrayCoder(t, c.coderOf(t.Elem(), desc))
		return cd
	case reflect.Map:
		desc.WriteByte('\n')
		*cd = mapCoder(t, c.coderOf(t.Key(), desc), c.coderOf(t.Elem(), desc))
		return cd
	case reflect.Interface:
		*cd = c.interfaceCoder(t)
	case reflect.Struct:
		c.structCoder(t, cd, desc)
		return cd
	default: // func, chan, unsafe pointer, complex: nil or zero only
		*cd = zeroCoder(t)
	}
	desc.WriteByte('\n')
	return cd
}

// structCoder fills cd with the coder of the struct type t: its fields in
// order, but those tagged `snapshot:"-"` and the blank ones.
func (c *Codec) structCoder(t reflect.Type, cd *coder, desc *strings.Builder) {
	type field struct {
		offset uintptr
		typ    reflect.Type
		cd     *coder
	}
	var fields []field
	desc.WriteString(" {")
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("snapshot") == "-" || f.Name == "_" {
			continue
		}
		desc.WriteString(f.Name + " " + f.Type.String() + "; ")
		fields = append(fields, field{f.Offset, f.Type, nil})
	}
	desc.WriteString("}\n")
	for i := range fields {
		fields[i].cd = c.coderOf(fields[i].typ, desc)
	}
	cd.enc = func(e *encoder, p unsafe.Pointer) error {
		for _, f := range fields {
			if err := f.cd.enc(e, unsafe.Add(p, f.offset)); err != nil {
				return err
			}
		}
		return nil
	}
	cd.dec = func(d *decoder, p unsafe.Pointer) error {
		for _, f := range fields {
			if err := f.cd.dec(d, unsafe.Add(p, f.offset)); err != nil {
				return err
			}
		}
		return nil
	}
}

// objectType numbers t as the type of objects (what pointers point to).
func (c *Codec) objectType(t reflect.Type) int {
	id, ok := c.objectID[t]
	if !ok {
		id = len(c.objects)
		c.objectID[t] = id
		c.objects = append(c.objects, t)
	}
	return id
}

// pointerCoder writes a pointer as the number of the object it points to
// (0 for nil), the object's body being written in its turn.
func (c *Codec) pointerCoder(t reflect.Type, elem *coder) coder {
	id := c.objectType(t.Elem())
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			return e.reference(*(*unsafe.Pointer)(p), id, elem)
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			obj, err := d.reference(id)
			*(*unsafe.Pointer)(p) = obj
			return err
		},
	}
}

// interfaceCoder writes an interface as its concrete type's number among
// the registered ones (0 for nil) and the object its pointer points to.
// The decoder writes an interface's two words itself: the first, which
// says its concrete type, taken from an interface made by reflection.
func (c *Codec) interfaceCoder(t reflect.Type) coder {
	tabs := make([]unsafe.Pointer, len(c.concrete)) // nil: not an implementation
	index := map[unsafe.Pointer]int{}               // the concrete type by its tab
	for i, k := range c.concrete {
		if k.Implements(t) {
			v := reflect.New(t)
			v.Elem().Set(reflect.Zero(k))
			tabs[i] = (*iface)(v.UnsafePointer()).tab
			index[tabs[i]] = i
		}
	}
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			x := (*iface)(p)
			if x.tab == nil {
				e.uint(0)
				return nil
			}
			i, ok := index[x.tab]
			if !ok {
				return fmt.Errorf("%w: an interface holds a %v, which is not registered", ErrUnsupported, reflect.NewAt(t, p).Elem().Elem().Type())
			}
			k := e.concrete[i]
			e.uint(uint64(i + 1))
			return e.reference(x.data, k.id, k.elem)
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			n, err := d.uint()
			if err != nil || n == 0 {
				return err
			}
			if n > uint64(len(tabs)) || tabs[n-1] == nil {
				return ErrCorrupt
			}
			obj, err := d.reference(d.concrete[n-1].id)
			*(*iface)(p) = iface{tabs[n-1], obj}
			return err
		},
	}
}

// iface is the layout of an interface value: its type's word (an itab,
// or the type for an empty interface) and its pointer.
type iface struct {
	tab, data unsafe.Pointer
}

// concreteType is what the encoder and decoder know of a registered type.
type concreteType struct {
	typ  reflect.Type // the pointer type
	id   int          // the type of the objects it points to
	elem *coder
}

// concreteTypes resolves the registered types for an encoder or decoder.
func (c *Codec) concreteTypes() []concreteType {
	ks := make([]concreteType, len(c.concrete))
	for i, t := range c.concrete {
		ks[i] = concreteType{t, c.objectID[t.Elem()], c.coders[t.Elem()]}
	}
	return ks
}

// externCoder writes a pointer of an extern type as its name ("" for
// nil); its decoder resolves the name.
func externCoder(t reflect.Type, x *Extern) coder {
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			v := reflect.NewAt(t, p).Elem()
			if v.IsNil() {
				e.uint(0)
				return nil
			}
			name, err := x.Name(v.Interface())
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUnsupported, err)
			}
			e.uint(1)
			return stringCoder.enc(e, unsafe.Pointer(&name))
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			switch n, err := d.uint(); {
			case err != nil || n == 0:
				return err
			case n != 1:
				return ErrCorrupt
			}
			var name string
			if err := stringCoder.dec(d, unsafe.Pointer(&name)); err != nil {
				return err
			}
			obj, err := x.Resolve(name)
			if err != nil {
				return fmt.Errorf("snapshot: %v %q: %w", t, name, err)
			}
			v := reflect.ValueOf(obj)
			if v.Type() != t {
				return fmt.Errorf("snapshot: %v %q resolved to a %v", t, name, v.Type())
			}
			*(*unsafe.Pointer)(p) = v.UnsafePointer()
			return nil
		},
	}
}
