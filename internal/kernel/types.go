package kernel

import (
	"encoding/binary"
	"fmt"
)

// Kind is a BTF type kind (BTF_KIND_*).
type Kind uint8

// The BTF kinds, numbered as in the kernel's uapi/linux/btf.h.
const (
	KindVoid Kind = iota
	KindInt
	KindPtr
	KindArray
	KindStruct
	KindUnion
	KindEnum
	KindFwd
	KindTypedef
	KindVolatile
	KindConst
	KindRestrict
	KindFunc
	KindFuncProto
	KindVar
	KindDatasec
	KindFloat
	KindDeclTag
	KindTypeTag
	KindEnum64
)

var kindNames = [...]string{"void", "int", "pointer", "array", "struct", "union", "enum", "forward declaration",
	"typedef", "volatile", "const", "restrict", "function", "function prototype", "variable", "data section",
	"float", "declaration tag", "type tag", "enum64"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Type is one decoded BTF type. Which fields are meaningful depends on Kind.
type Type struct {
	ID   TypeID
	Kind Kind
	Name string
	// Size in bytes: int, float, struct, union, enum, enum64.
	Size uint32
	// Target: the pointee of a pointer; the type a typedef, const, volatile,
	// restrict or type tag qualifies; a function's prototype; the return
	// type of a prototype; an array's element type.
	Target TypeID
	// Signed: a signed int, or an enum with negative values.
	Signed bool
	// Char and Bool: the int encoding flags.
	Char, Bool bool
	// Bits of an int (a bitfield int may have fewer bits than Size*8).
	Bits uint8
	// Len is the number of elements of an array.
	Len uint32
	// Members of a struct or union.
	Members []Member
	// Params of a function prototype.
	Params []Param
	// Linkage of a function (0 static, 1 global, 2 extern).
	Linkage uint16
}

// Member is a struct or union member. An anonymous member has no Name.
type Member struct {
	Name string
	Type TypeID
	// BitOffset from the start of the enclosing struct.
	BitOffset uint32
	// BitSize is non-zero for a bitfield.
	BitSize uint32
}

// Param is a function prototype parameter; Name is empty in typedef'd
// prototypes.
type Param struct {
	Name string
	Type TypeID
}

// Type decodes the type with the given ID (a module's base's when id lies
// below the module's first).
func (b *BTF) Type(id TypeID) (*Type, error) {
	if id == 0 {
		return &Type{Kind: KindVoid, Name: "void"}, nil
	}
	if id < b.first {
		return b.base.Type(id)
	}
	if int(id) >= b.NumTypes() {
		return nil, fmt.Errorf("BTF type ID %d out of range (%d types)", id, b.NumTypes())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.decoded[id]; ok {
		return t, nil
	}
	t := b.decode(id)
	b.decoded[id] = t
	return t, nil
}

// decode reads record id; indexRecords guaranteed it lies within the section.
func (b *BTF) decode(id TypeID) *Type {
	le := binary.LittleEndian
	rec := b.record(id)
	info := le.Uint32(rec[4:])
	vlen, kindFlag := int(info&0xffff), info>>31 == 1
	sizeOrType := le.Uint32(rec[8:])
	t := &Type{ID: id, Kind: Kind(info >> 24 & 0x1f), Name: b.str(le.Uint32(rec))}
	data := rec[recordHeaderSize:]
	switch t.Kind {
	case KindInt:
		enc := le.Uint32(data)
		t.Size, t.Bits = sizeOrType, uint8(enc)
		t.Signed, t.Char, t.Bool = enc>>24&1 == 1, enc>>24&2 == 2, enc>>24&4 == 4
	case KindFloat:
		t.Size = sizeOrType
	case KindEnum, KindEnum64:
		t.Size, t.Signed = sizeOrType, kindFlag
	case KindStruct, KindUnion:
		t.Size = sizeOrType
		t.Members = make([]Member, vlen)
		for i := range t.Members {
			m := data[12*i:]
			off := le.Uint32(m[8:])
			t.Members[i] = Member{Name: b.str(le.Uint32(m)), Type: TypeID(le.Uint32(m[4:])), BitOffset: off}
			if kindFlag { // offset holds bitfield size << 24 | bit offset
				t.Members[i].BitOffset, t.Members[i].BitSize = off&0xffffff, off>>24
			}
		}
	case KindArray:
		t.Target, t.Len = TypeID(le.Uint32(data)), le.Uint32(data[8:])
	case KindFuncProto:
		t.Target = TypeID(sizeOrType)
		t.Params = make([]Param, vlen)
		for i := range t.Params {
			p := data[8*i:]
			t.Params[i] = Param{Name: b.str(le.Uint32(p)), Type: TypeID(le.Uint32(p[4:]))}
		}
	case KindFunc:
		t.Target, t.Linkage = TypeID(sizeOrType), uint16(vlen)
	default: // pointer, typedef, qualifiers, type tag, var, decl tag
		t.Target = TypeID(sizeOrType)
	}
	return t
}

// maxChain bounds walks through typedefs and qualifiers (BTF from a broken
// or hostile source could hold a cycle).
const maxChain = 32

// Underlying skips typedefs, qualifiers and type tags.
func (b *BTF) Underlying(id TypeID) (*Type, error) {
	for range maxChain {
		t, err := b.Type(id)
		if err != nil {
			return nil, err
		}
		switch t.Kind {
		case KindTypedef, KindConst, KindVolatile, KindRestrict, KindTypeTag:
			id = t.Target
		default:
			return t, nil
		}
	}
	return nil, fmt.Errorf("BTF type %d: typedef chain too long", id)
}

// Sizeof returns the size in bytes of a value of type id.
func (b *BTF) Sizeof(id TypeID) (uint32, error) {
	t, err := b.Underlying(id)
	if err != nil {
		return 0, err
	}
	switch t.Kind {
	case KindInt, KindFloat, KindEnum, KindEnum64, KindStruct, KindUnion:
		return t.Size, nil
	case KindPtr:
		return 8, nil
	case KindArray:
		n, err := b.Sizeof(t.Target)
		return n * t.Len, err
	}
	return 0, fmt.Errorf("%s has no size", b.TypeName(id))
}

// TypeName spells a type as C (and SystemTap's -L listing) does:
// "struct task_struct*", "pid_t", "long int", "const char*", "char[16]".
func (b *BTF) TypeName(id TypeID) string {
	return b.typeName(id, 0)
}

func (b *BTF) typeName(id TypeID, depth int) string {
	t, err := b.Type(id)
	if err != nil || depth > maxChain {
		return "?"
	}
	switch t.Kind {
	case KindPtr:
		return b.typeName(t.Target, depth+1) + "*"
	case KindConst, KindVolatile, KindRestrict:
		return t.Kind.String() + " " + b.typeName(t.Target, depth+1)
	case KindTypeTag:
		return b.typeName(t.Target, depth+1)
	case KindArray:
		return fmt.Sprintf("%s[%d]", b.typeName(t.Target, depth+1), t.Len)
	case KindStruct, KindUnion, KindEnum:
		return t.Kind.String() + " " + nameOrAnonymous(t.Name)
	case KindEnum64:
		return "enum " + nameOrAnonymous(t.Name)
	case KindFwd:
		return "struct " + t.Name
	case KindFuncProto:
		return "function"
	}
	return t.Name
}

func nameOrAnonymous(name string) string {
	if name == "" {
		return "{...}"
	}
	return name
}
