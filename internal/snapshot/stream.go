package snapshot

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"
)

// The bytes: the schema's hash (8 bytes, little-endian), the number of
// object types, the number of objects of each, then the root's reference
// and every object's body in the order the objects were numbered.

// Encode writes the graph root reaches; root must be of the Codec's type.
func (c *Codec) Encode(root any) ([]byte, error) {
	v := reflect.ValueOf(root)
	if v.Type() != c.root {
		return nil, fmt.Errorf("%w: a %v for a codec of %v", ErrUnsupported, v.Type(), c.root)
	}
	c.planned.Do(c.planInterior)
	e := &encoder{buf: make([]byte, 0, 64<<10), objects: make(map[unsafe.Pointer]object, 1024),
		counts: make([]int, len(c.objects)), concrete: c.concreteTypes()}
	elem := c.coders[c.root.Elem()]
	if err := e.reference(v.UnsafePointer(), c.objectID[c.root.Elem()], elem); err != nil {
		return nil, err
	}
	for i := 0; i < len(e.queue); i++ {
		if err := e.queue[i].cd.enc(e, e.queue[i].p); err != nil {
			return nil, err
		}
	}
	if err := e.checkInterior(c); err != nil {
		return nil, err
	}
	head := binary.LittleEndian.AppendUint64(nil, c.schema)
	head = binary.AppendUvarint(head, uint64(len(e.counts)))
	for _, n := range e.counts {
		head = binary.AppendUvarint(head, uint64(n))
	}
	return append(head, e.buf...), nil
}

// encoder is the state of one Encode.
type encoder struct {
	buf      []byte
	objects  map[unsafe.Pointer]object
	queue    []pending
	counts   []int // objects numbered of each type
	concrete []concreteType
	slices   []spannedSlice // slices whose elements hold inner values (interior.go)
}

// object is a numbered object: its number (from 1) and type.
type object struct{ n, id int }

// pending is an object numbered, its body not yet written.
type pending struct {
	p  unsafe.Pointer
	cd *coder
}

func (e *encoder) uint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

// reference writes the number of the object of type id at p, numbering
// it and queueing its body the first time.
func (e *encoder) reference(p unsafe.Pointer, id int, cd *coder) error {
	if p == nil {
		e.uint(0)
		return nil
	}
	if o, ok := e.objects[p]; ok {
		if o.id != id {
			return fmt.Errorf("%w: pointers of two types to one address", ErrUnsupported)
		}
		e.uint(uint64(o.n))
		return nil
	}
	o := object{len(e.objects) + 1, id}
	e.objects[p] = o
	e.counts[id]++
	e.queue = append(e.queue, pending{p, cd})
	e.uint(uint64(o.n))
	return nil
}

// Decode reads a graph Encode wrote with a Codec of the same schema, and
// returns its root, of the Codec's type. The strings decoded are data's
// bytes: data must not change afterwards.
func (c *Codec) Decode(data []byte) (any, error) {
	if len(data) < 8 || binary.LittleEndian.Uint64(data) != c.schema {
		return nil, ErrCorrupt
	}
	d := &decoder{buf: data, off: 8, concrete: c.concreteTypes()}
	if err := d.allocate(c); err != nil {
		return nil, err
	}
	coders := make([]*coder, len(c.objects))
	for i, t := range c.objects {
		coders[i] = c.coders[t]
	}
	rootID := c.objectID[c.root.Elem()]
	root, err := d.reference(rootID)
	if err != nil || root == nil {
		return nil, ErrCorrupt
	}
	for i := 0; i < len(d.objects); i++ {
		o := d.objects[i]
		if err := coders[o.id].dec(d, o.p); err != nil {
			return nil, err
		}
	}
	for _, b := range d.blocks {
		if b.used != b.n {
			return nil, ErrCorrupt
		}
	}
	if d.off != len(d.buf) {
		return nil, ErrCorrupt
	}
	return reflect.NewAt(c.root.Elem(), root).Interface(), nil
}

// decoder is the state of one Decode.
type decoder struct {
	buf      []byte
	off      int
	blocks   []block // by object type
	objects  []decoded
	concrete []concreteType
}

// block is the memory of one type's objects, handed out in order.
type block struct {
	data    unsafe.Pointer
	size    uintptr
	n, used int
}

// decoded is an object allocated: its memory and type.
type decoded struct {
	p  unsafe.Pointer
	id int
}

// allocate reads the header's counts and makes each type's block.
func (d *decoder) allocate(c *Codec) error {
	n, err := d.uint()
	if err != nil || n != uint64(len(c.objects)) {
		return ErrCorrupt
	}
	d.blocks = make([]block, n)
	total := 0
	for i, t := range c.objects {
		u, err := d.uint()
		if err != nil || u > uint64(len(d.buf)) {
			return ErrCorrupt
		}
		count := int(u)
		if total += count; total > len(d.buf) { // every object is referenced by a byte at least
			return ErrCorrupt
		}
		d.blocks[i] = block{size: t.Size(), n: count}
		if count > 0 {
			d.blocks[i].data = reflect.MakeSlice(reflect.SliceOf(t), count, count).UnsafePointer()
		}
	}
	d.objects = make([]decoded, 0, total)
	return nil
}

// reference reads an object's number: an object already read of the same
// type, or the next one, taken from its type's block.
func (d *decoder) reference(id int) (unsafe.Pointer, error) {
	n, err := d.uint()
	switch {
	case err != nil || n == 0:
		return nil, err
	case n <= uint64(len(d.objects)):
		o := d.objects[n-1]
		if o.id != id {
			return nil, ErrCorrupt
		}
		return o.p, nil
	case n != uint64(len(d.objects))+1:
		return nil, ErrCorrupt
	}
	b := &d.blocks[id]
	if b.used == b.n {
		return nil, ErrCorrupt
	}
	p := unsafe.Add(b.data, uintptr(b.used)*b.size)
	b.used++
	d.objects = append(d.objects, decoded{p, id})
	return p, nil
}

func (d *decoder) uint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		return 0, ErrCorrupt
	}
	d.off += n
	return v, nil
}

// length reads a length written plus one, -1 for nil; a length the bytes
// left cannot hold is refused.
func (d *decoder) length() (int, error) {
	v, err := d.uint()
	if err != nil || v > uint64(len(d.buf)-d.off)+1 {
		return 0, ErrCorrupt
	}
	return int(v) - 1, nil
}

// bytes takes the next n bytes.
func (d *decoder) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(d.buf)-d.off) {
		return nil, ErrCorrupt
	}
	b := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return b, nil
}
