package debuginfo

import (
	"debug/dwarf"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// BTF describes the DWARF types at offsets as BTF, the form bpftap's
// member chains read (package kernel parses it): the encoded types and
// the ID of each offset's type, in order (0 for offset 0, void).
func (f *File) BTF(offsets ...dwarf.Offset) ([]byte, []btf.TypeID, error) {
	c := &converter{data: f.data, done: map[dwarf.Type]btf.Type{}}
	roots := make([]btf.Type, len(offsets))
	for i, off := range offsets {
		if off == 0 {
			continue
		}
		t, err := c.convertAt(off)
		if err != nil {
			return nil, nil, err
		}
		roots[i] = t
	}
	b, err := btf.NewBuilder(nil, nil)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]btf.TypeID, len(offsets))
	for i, t := range roots {
		if t == nil {
			continue
		}
		if ids[i], err = b.Add(t); err != nil {
			return nil, nil, fmt.Errorf("%s: describing its types: %w", f.DebugPath, err)
		}
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: describing its types: %w", f.DebugPath, err)
	}
	return raw, ids, nil
}

// converter turns Go's reading of DWARF types into BTF types, each once
// (structures may refer to themselves).
type converter struct {
	data *dwarf.Data
	done map[dwarf.Type]btf.Type // by identity: Go's reader gives an offset's type once
}

func (c *converter) convertAt(off dwarf.Offset) (btf.Type, error) {
	t, err := c.data.Type(off)
	if err != nil {
		return nil, err
	}
	return c.convert(t), nil
}

func (c *converter) convert(t dwarf.Type) btf.Type {
	if t == nil {
		return &btf.Void{}
	}
	if done, ok := c.done[t]; ok {
		return done
	}
	off := t
	var out btf.Type
	switch t := t.(type) {
	case *dwarf.StructType:
		return c.structure(t)
	case *dwarf.PtrType:
		p := &btf.Pointer{}
		c.done[off] = p
		p.Target = c.convert(t.Type)
		return p
	case *dwarf.TypedefType:
		td := &btf.Typedef{Name: t.Name}
		c.done[off] = td
		td.Type = c.convert(t.Type)
		return td
	case *dwarf.QualType:
		switch t.Qual {
		case "const":
			out = &btf.Const{Type: c.convert(t.Type)}
		case "volatile":
			out = &btf.Volatile{Type: c.convert(t.Type)}
		case "restrict":
			out = &btf.Restrict{Type: c.convert(t.Type)}
		default:
			out = c.convert(t.Type)
		}
	case *dwarf.ArrayType:
		n := max(t.Count, 0)
		out = &btf.Array{Index: &btf.Int{Name: "__ARRAY_SIZE_TYPE__", Size: 4}, Type: c.convert(t.Type), Nelems: uint32(n)}
	case *dwarf.EnumType:
		e := &btf.Enum{Name: t.EnumName, Size: uint32(t.ByteSize)}
		for _, v := range t.Val {
			e.Values = append(e.Values, btf.EnumValue{Name: v.Name, Value: uint64(v.Val)})
			e.Signed = e.Signed || v.Val < 0
		}
		out = e
	case *dwarf.FuncType:
		out = &btf.FuncProto{Return: &btf.Void{}}
	case *dwarf.FloatType:
		out = &btf.Float{Name: t.Name, Size: uint32(t.ByteSize)}
	case *dwarf.BoolType:
		out = &btf.Int{Name: t.Name, Size: uint32(t.ByteSize), Encoding: btf.Bool}
	case *dwarf.CharType:
		out = &btf.Int{Name: t.Name, Size: uint32(t.ByteSize), Encoding: btf.Signed | btf.Char}
	case *dwarf.UcharType:
		out = &btf.Int{Name: t.Name, Size: uint32(t.ByteSize), Encoding: btf.Char}
	case *dwarf.IntType:
		out = &btf.Int{Name: t.Name, Size: uint32(t.ByteSize), Encoding: btf.Signed}
	case *dwarf.UintType:
		out = &btf.Int{Name: t.Name, Size: uint32(t.ByteSize)}
	case *dwarf.VoidType, *dwarf.UnspecifiedType, *dwarf.DotDotDotType:
		out = &btf.Void{}
	default: // complex numbers, unspecified bases: their bytes
		size := max(t.Size(), 1)
		out = &btf.Array{Index: &btf.Int{Name: "__ARRAY_SIZE_TYPE__", Size: 4},
			Type: &btf.Int{Name: "unsigned char", Size: 1, Encoding: btf.Char}, Nelems: uint32(size)}
	}
	c.done[off] = out
	return out
}

// structure converts a struct, union or class, its bitfields at their
// bit offsets from the structure's start.
func (c *converter) structure(t *dwarf.StructType) btf.Type {
	var off dwarf.Type = t
	if t.Incomplete {
		kind := btf.FwdStruct
		if t.Kind == "union" {
			kind = btf.FwdUnion
		}
		fwd := &btf.Fwd{Name: t.StructName, Kind: kind}
		c.done[off] = fwd
		return fwd
	}
	var members *[]btf.Member
	var out btf.Type
	if t.Kind == "union" {
		u := &btf.Union{Name: t.StructName, Size: uint32(t.ByteSize)}
		out, members = u, &u.Members
	} else {
		s := &btf.Struct{Name: t.StructName, Size: uint32(t.ByteSize)}
		out, members = s, &s.Members
	}
	c.done[off] = out
	for _, field := range t.Field {
		bit := 8 * field.ByteOffset
		if field.BitSize > 0 {
			bit = field.DataBitOffset
			if bit == 0 && field.BitOffset != 0 { // DWARF 2-3: counted from the storage unit's top bit
				bit = 8*field.ByteOffset + 8*field.ByteSize - field.BitOffset - field.BitSize
			}
		}
		*members = append(*members, btf.Member{Name: field.Name, Type: c.convert(field.Type),
			Offset: btf.Bits(bit), BitfieldSize: btf.Bits(field.BitSize)})
	}
	return out
}

// TypeNamed finds the type C names as name: "struct T", "union T",
// "enum T", or a typedef T (else a structure T).
func (f *File) TypeNamed(name string) (dwarf.Offset, error) {
	tags := map[string]dwarf.Tag{"struct": dwarf.TagStructType, "union": dwarf.TagUnionType, "enum": dwarf.TagEnumerationType}
	want, bare := []dwarf.Tag{dwarf.TagTypedef, dwarf.TagStructType}, name
	if kind, rest, ok := strings.Cut(name, " "); ok && tags[kind] != 0 {
		want, bare = []dwarf.Tag{tags[kind]}, strings.TrimSpace(rest)
	}
	found := map[dwarf.Tag]dwarf.Offset{}
	r := f.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f.DebugPath, err)
		}
		if e == nil {
			break
		}
		if n, _ := e.Val(dwarf.AttrName).(string); n == bare && slices.Contains(want, e.Tag) && e.Val(dwarf.AttrDeclaration) == nil && found[e.Tag] == 0 {
			found[e.Tag] = e.Offset
		}
		if e.Children && e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagNamespace {
			r.SkipChildren()
		}
	}
	for _, tag := range want {
		if off := found[tag]; off != 0 {
			return off, nil
		}
	}
	return 0, ErrNoType
}
