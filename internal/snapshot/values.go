package snapshot

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// The coders of values written in place: scalars as varints, strings as
// their length and bytes, slices and maps as their length (plus one, 0
// being nil) and their elements.

var boolCoder = coder{
	enc: func(e *encoder, p unsafe.Pointer) error {
		e.uint(uint64(*(*uint8)(p)))
		return nil
	},
	dec: func(d *decoder, p unsafe.Pointer) error {
		v, err := d.uint()
		if v > 1 {
			return ErrCorrupt
		}
		*(*bool)(p) = v == 1
		return err
	},
}

// intCoder writes a signed integer of size bytes, zigzag-encoded.
func intCoder(size uintptr) coder {
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			v := loadInt(p, size)
			e.uint(uint64(v<<1) ^ uint64(v>>63))
			return nil
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			u, err := d.uint()
			storeUint(p, size, u>>1^-(u&1))
			return err
		},
	}
}

// uintCoder writes an unsigned integer of size bytes.
func uintCoder(size uintptr) coder {
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			e.uint(uint64(loadInt(p, size)) & (math.MaxUint64 >> (64 - 8*size)))
			return nil
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			u, err := d.uint()
			storeUint(p, size, u)
			return err
		},
	}
}

// floatCoder writes a float of size bytes as its bits.
func floatCoder(size uintptr) coder {
	if size == 4 {
		return uintCoder(4)
	}
	return uintCoder(8)
}

// loadInt reads a signed integer of size bytes, sign-extended.
func loadInt(p unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(p))
	case 2:
		return int64(*(*int16)(p))
	case 4:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

// storeUint writes the low size bytes of v.
func storeUint(p unsafe.Pointer, size uintptr, v uint64) {
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	case 4:
		*(*uint32)(p) = uint32(v)
	default:
		*(*uint64)(p) = v
	}
}

// stringCoder writes a string's length and bytes; a decoded string is
// the decoder's bytes, not a copy.
var stringCoder = coder{
	enc: func(e *encoder, p unsafe.Pointer) error {
		s := *(*string)(p)
		e.uint(uint64(len(s)))
		e.buf = append(e.buf, s...)
		return nil
	},
	dec: func(d *decoder, p unsafe.Pointer) error {
		n, err := d.uint()
		if err != nil {
			return err
		}
		b, err := d.bytes(n)
		if len(b) > 0 {
			*(*string)(p) = unsafe.String(&b[0], len(b))
		}
		return err
	},
}

// zeroCoder stands for a func, channel, unsafe pointer or complex
// number: only its zero value is written (as nothing), and read back.
func zeroCoder(t reflect.Type) coder {
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			if !reflect.NewAt(t, p).Elem().IsZero() {
				return fmt.Errorf("%w: a %v", ErrUnsupported, t)
			}
			return nil
		},
		dec: func(*decoder, unsafe.Pointer) error { return nil },
	}
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// sliceCoder writes a slice by value: its length plus one (0 for nil),
// then its elements; it notes a slice whose elements hold inner values
// (fields says where: interior.go).
func sliceCoder(t reflect.Type, elem *coder, fields *[]innerField) coder {
	size := t.Elem().Size()
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			h := (*sliceHeader)(p)
			if h.data == nil {
				e.uint(0)
				return nil
			}
			e.uint(uint64(h.len) + 1)
			e.elements(h.data, size, h.len, *fields)
			return elements(e, elem.enc, h.data, size, h.len)
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			n, err := d.length()
			if err != nil || n < 0 {
				return err
			}
			s := reflect.MakeSlice(t, n, n)
			h := (*sliceHeader)(p)
			*h = sliceHeader{s.UnsafePointer(), n, n}
			return elements(d, elem.dec, h.data, size, n)
		},
	}
}

// arrayCoder writes an array's elements.
func arrayCoder(t reflect.Type, elem *coder) coder {
	size, n := t.Elem().Size(), t.Len()
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error { return elements(e, elem.enc, p, size, n) },
		dec: func(d *decoder, p unsafe.Pointer) error { return elements(d, elem.dec, p, size, n) },
	}
}

// elements encodes or decodes (code, with the state of one or the other)
// the n elements of size bytes from data.
func elements[S any](state S, code func(S, unsafe.Pointer) error, data unsafe.Pointer, size uintptr, n int) error {
	for i := range n {
		if err := code(state, unsafe.Add(data, uintptr(i)*size)); err != nil {
			return err
		}
	}
	return nil
}

// mapCoder writes a map as its length plus one (0 for nil), then its
// keys and values in the map's order.
func mapCoder(t reflect.Type, key, value *coder) coder {
	return coder{
		enc: func(e *encoder, p unsafe.Pointer) error {
			m := reflect.NewAt(t, p).Elem()
			if m.IsNil() {
				e.uint(0)
				return nil
			}
			e.uint(uint64(m.Len()) + 1)
			k, v := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			for it := m.MapRange(); it.Next(); {
				k.SetIterKey(it)
				v.SetIterValue(it)
				if err := key.enc(e, k.Addr().UnsafePointer()); err != nil {
					return err
				}
				if err := value.enc(e, v.Addr().UnsafePointer()); err != nil {
					return err
				}
			}
			return nil
		},
		dec: func(d *decoder, p unsafe.Pointer) error {
			n, err := d.length()
			if err != nil || n < 0 {
				return err
			}
			m := reflect.MakeMapWithSize(t, n)
			reflect.NewAt(t, p).Elem().Set(m)
			for range n {
				k, v := reflect.New(t.Key()), reflect.New(t.Elem())
				if err := key.dec(d, k.UnsafePointer()); err != nil {
					return err
				}
				if err := value.dec(d, v.UnsafePointer()); err != nil {
					return err
				}
				m.SetMapIndex(k.Elem(), v.Elem())
			}
			return nil
		},
	}
}
