package kernel

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Enumerators. An enum's constants follow its record: a name offset and a
// 32-bit value each (BTF_KIND_ENUM), or a name offset and the value's low
// and high halves (BTF_KIND_ENUM64); the record's kind flag says whether
// the values are signed. SystemTap's @enum and @const find a constant by
// its name (Enumerator: the string's offsets first, then a scan of the
// enum records for an entry naming one), @enumname an enum type's
// constants (Enumerators).

// Enumerator is one constant of an enum type.
type Enumerator struct {
	Name  string
	Value int64
}

// Enumerator returns the distinct values of the enumerators called name,
// in the BTF's order (a module's own types first, then its base's): none
// where no enum of the BTF has one (a C macro, for instance, which BTF
// does not describe), several where enums of different types share the
// name with different values (the mount options' Opt_uid).
func (b *BTF) Enumerator(name string) []int64 {
	var values []int64
	offs := b.offsetsOf(name, true)
	for o := b; o != nil && len(offs) > 0; o = o.base {
		for id := o.first; int(id) < o.NumTypes(); id++ {
			if k := o.kindOf(id); k != KindEnum && k != KindEnum64 {
				continue
			}
			for _, e := range o.enumerators(id) {
				if slices.Contains(offs, e.nameOff) && !slices.Contains(values, e.value) {
					values = append(values, e.value)
				}
			}
		}
	}
	return values
}

// Enumerators returns the constants of enum type id (through typedefs and
// qualifiers), in their order; it fails when id is not an enum.
func (b *BTF) Enumerators(id TypeID) ([]Enumerator, error) {
	t, err := b.Underlying(id)
	if err != nil {
		return nil, err
	}
	if t.Kind != KindEnum && t.Kind != KindEnum64 {
		return nil, fmt.Errorf("%s is not an enumeration type", b.TypeName(id))
	}
	o := b
	for t.ID < o.first {
		o = o.base
	}
	raw := o.enumerators(t.ID)
	list := make([]Enumerator, len(raw))
	for i, e := range raw {
		list[i] = Enumerator{Name: o.str(e.nameOff), Value: e.value}
	}
	return list, nil
}

// EnumType returns the ID of the enum type called name ("foo" or
// "enum foo") or of a typedef of one; ok is false where there is none.
func (b *BTF) EnumType(name string) (TypeID, bool) {
	for _, id := range b.IDsByName(strings.TrimPrefix(name, "enum ")) {
		if t, err := b.Underlying(id); err == nil && (t.Kind == KindEnum || t.Kind == KindEnum64) {
			return id, true
		}
	}
	return 0, false
}

// rawEnumerator is an entry of an enum record: its name's offset, its value.
type rawEnumerator struct {
	nameOff uint32
	value   int64
}

// enumerators decodes the entries of enum record id, one of b's own.
func (b *BTF) enumerators(id TypeID) []rawEnumerator {
	le := binary.LittleEndian
	rec := b.record(id)
	info := le.Uint32(rec[4:])
	vlen, signed, wide := int(info&0xffff), info>>31 == 1, Kind(info>>24&0x1f) == KindEnum64
	data := rec[recordHeaderSize:]
	list := make([]rawEnumerator, vlen)
	for i := range list {
		if wide {
			e := data[12*i:]
			list[i] = rawEnumerator{le.Uint32(e), int64(uint64(le.Uint32(e[8:]))<<32 | uint64(le.Uint32(e[4:])))}
			continue
		}
		e := data[8*i:]
		v := int64(le.Uint32(e[4:]))
		if signed {
			v = int64(int32(le.Uint32(e[4:])))
		}
		list[i] = rawEnumerator{le.Uint32(e), v}
	}
	return list
}
