package kernel

import (
	"fmt"
	"strings"
)

// Step is one link of a target-variable chain such as $p->mm->arg_start or
// $regs->di or $p->comm[0]: a member access (-> in SystemTap works through
// pointers and on structs alike) or an array (or pointer) index, a
// literal Index or, when Dynamic, one computed at run time (Path.Scales).
type Step struct {
	Member  string
	Index   int64
	IsIndex bool
	Dynamic bool
}

// ValueKind says how the code generator reads the value a Path reaches.
type ValueKind uint8

const (
	// ValueInt: load Size bytes at the address, sign-extend when Signed.
	// Pointers and enums are integers too.
	ValueInt ValueKind = iota
	// ValueString: a char array; its address is the string, at most Size bytes.
	ValueString
	// ValueAggregate: a struct, union or non-char array, usable only as the
	// base of a further step (or by address).
	ValueAggregate
)

// Path is how to reach a value from a base value held in a register.
//
// With no Offsets the value is the base itself. Otherwise the value lies at
// address A, computed as A = base + Offsets[0], then for each later offset
// A = load64(A) + Offsets[k]: every offset but the first follows the load of
// a pointer stored at the previous address. Codegen reads memory through
// bpf_probe_read_kernel (or direct loads in BTF-typed programs).
//
// Each dynamic index (Step.Dynamic), in the order of the steps, is a
// Scale: times Size, it is added to the address right after Offsets[At].
//
// A bitfield (BitSize non-zero) is an integer of BitSize bits that starts
// BitShift bits above the least significant bit of the Size bytes loaded
// at the address (little-endian: BTF counts a member's bits from the
// lowest address up).
type Path struct {
	Offsets  []int64
	Scales   []Scale
	Type     TypeID // declared type of the value, typedefs kept
	Kind     ValueKind
	Size     uint32
	Signed   bool
	BitShift uint8
	BitSize  uint8
}

// Scale is a dynamic index of a Path: its element's Size, added after
// Offsets[At].
type Scale struct {
	At   int
	Size int64
}

// MemberError reports a member that the type lacks, listing the members it has.
type MemberError struct {
	Member       string
	Container    string
	Alternatives []string
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("unable to find member '%s' for %s (alternatives: %s)",
		e.Member, e.Container, strings.Join(e.Alternatives, " "))
}

// Resolve follows steps from a base value of type base.
func (b *BTF) Resolve(base TypeID, steps []Step) (*Path, error) {
	return b.follow(&Path{Type: base}, false, steps)
}

// ResolveIn follows steps from a struct called name that lies at the base
// address (ResolvePointee), as the task_struct bpf_get_current_task
// returns.
func (b *BTF) ResolveIn(name string, steps []Step) (*Path, error) {
	t, err := b.TypeByName(name, KindStruct)
	if err != nil {
		return nil, err
	}
	return b.ResolvePointee(t.ID, steps)
}

// ResolvePointee follows steps from a base value that points to a value of
// type t, whether or not the BTF names a pointer to t (a @cast's operand,
// a task_struct address): the first step applies to the pointee, as through
// a pointer (a member's offset, or an index times t's size); each later
// offset follows a load.
func (b *BTF) ResolvePointee(t TypeID, steps []Step) (*Path, error) {
	if len(steps) == 0 {
		return b.follow(&Path{Type: t}, false, nil)
	}
	p := &Path{Offsets: []int64{0}}
	off, typ, err := b.stepThroughPointer(&Type{Kind: KindPtr, ID: t, Target: t}, steps[0], p)
	if err != nil {
		return nil, err
	}
	p.Type, p.Offsets[0] = typ, off
	return b.follow(p, true, steps[1:])
}

// Pointee is the type a value of type id points to, or false when id is
// not a pointer (typedefs seen through); an array, as in C, stands for a
// pointer to its first element.
func (b *BTF) Pointee(id TypeID) (TypeID, bool) {
	u, err := b.Underlying(id)
	if err != nil || u.Kind != KindPtr && u.Kind != KindArray {
		return 0, false
	}
	return u.Target, true
}

// A NotInMemoryError is the error of a step into a value that is not in
// memory: a struct passed by value, which the registers or the probe's
// context hold whole.
type NotInMemoryError struct{ msg string }

func (e *NotInMemoryError) Error() string { return e.msg }

// follow applies steps to p; inMemory tells whether p's value lies at the
// address its Offsets compute (else it is the base value itself).
func (b *BTF) follow(p *Path, inMemory bool, steps []Step) (*Path, error) {
	for _, s := range steps {
		u, err := b.Underlying(p.Type)
		if err != nil {
			return nil, err
		}
		var off int64
		switch {
		case u.Kind == KindPtr:
			p.Offsets = append(p.Offsets, 0)
			off, p.Type, err = b.stepThroughPointer(u, s, p)
			p.Offsets[len(p.Offsets)-1] = off
		case !inMemory:
			return nil, &NotInMemoryError{fmt.Sprintf("%s is not a pointer: '%s' needs one", b.TypeName(p.Type), describe(s))}
		default:
			off, p.Type, err = b.stepWithin(u, s, p)
			if err == nil {
				p.Offsets[len(p.Offsets)-1] += off
			}
		}
		if err != nil {
			return nil, err
		}
		inMemory = true
	}
	return p, b.classify(p)
}

// stepThroughPointer applies s to the pointee of pointer type ptr, the
// last of p's offsets (which a dynamic index scales).
func (b *BTF) stepThroughPointer(ptr *Type, s Step, p *Path) (int64, TypeID, error) {
	if s.IsIndex {
		n, err := b.Sizeof(ptr.Target)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot index %s: %w", b.TypeName(ptr.ID), err)
		}
		return b.index(s, int64(n), p), ptr.Target, nil
	}
	pointee, err := b.Underlying(ptr.Target)
	if err != nil {
		return 0, 0, err
	}
	return b.stepWithin(pointee, s, p)
}

// index is the offset of element s.Index of elements of size n: a dynamic
// index adds a Scale at p's last offset instead.
func (b *BTF) index(s Step, n int64, p *Path) int64 {
	if s.Dynamic {
		p.Scales = append(p.Scales, Scale{At: len(p.Offsets) - 1, Size: n})
		return 0
	}
	return s.Index * n
}

// stepWithin applies s to a struct, union or array value, at p's last
// offset.
func (b *BTF) stepWithin(t *Type, s Step, p *Path) (int64, TypeID, error) {
	switch {
	case s.IsIndex && t.Kind == KindArray:
		n, err := b.Sizeof(t.Target)
		if err != nil {
			return 0, 0, err
		}
		if s.Dynamic {
			return b.index(s, int64(n), p), t.Target, nil
		}
		if s.Index < 0 || s.Index >= int64(t.Len) && t.Len > 0 {
			return 0, 0, fmt.Errorf("index %d out of bounds of %s", s.Index, b.TypeName(t.ID))
		}
		return s.Index * int64(n), t.Target, nil
	case !s.IsIndex && (t.Kind == KindStruct || t.Kind == KindUnion):
		return b.member(t, s.Member, p)
	case !s.IsIndex && t.Kind == KindFwd:
		if def := b.definition(t); def != nil {
			return b.member(def, s.Member, p)
		}
		return 0, 0, fmt.Errorf("cannot access member '%s' of %s: %s has only its declaration", s.Member, b.TypeName(t.ID), b.what)
	}
	return 0, 0, fmt.Errorf("cannot apply '%s' to %s", describe(s), b.TypeName(t.ID))
}

// definition is the struct or union a forward declaration fwd names, nil
// where b has none. The kernel's BTF declares structures it only points to
// that a module defines (struct rpc_clnt's cl_metrics points to a struct
// rpc_iostats that sunrpc's BTF holds), so a member chain from the kernel's
// types into a module's reaches a declaration, which the module's BTF
// completes.
func (b *BTF) definition(fwd *Type) *Type {
	for _, k := range []Kind{KindStruct, KindUnion} {
		if def, err := b.TypeByName(fwd.Name, k); err == nil {
			return def
		}
	}
	return nil
}

// member finds name in struct or union t, looking into anonymous members;
// a bitfield's bits are noted in p, the offset is that of its first byte.
func (b *BTF) member(t *Type, name string, p *Path) (int64, TypeID, error) {
	m, bitOff, found := b.findMember(t, name, 0)
	if !found {
		return 0, 0, &MemberError{Member: name, Container: b.TypeName(t.ID), Alternatives: b.memberNames(t, 0)}
	}
	if m.BitSize != 0 || bitOff%8 != 0 {
		if bitOff%8+m.BitSize > 64 {
			return 0, 0, fmt.Errorf("member '%s' of %s is a bitfield across more than 8 bytes, which bpftap cannot read", name, b.TypeName(t.ID))
		}
		p.BitShift, p.BitSize = uint8(bitOff%8), uint8(m.BitSize)
	}
	return int64(bitOff / 8), m.Type, nil
}

func (b *BTF) findMember(t *Type, name string, depth int) (Member, uint32, bool) {
	for _, m := range t.Members {
		if m.Name == name {
			return m, m.BitOffset, true
		}
		if inner := b.anonymous(m, depth); inner != nil {
			if found, off, ok := b.findMember(inner, name, depth+1); ok {
				return found, m.BitOffset + off, true
			}
		}
	}
	return Member{}, 0, false
}

// anonymous returns the struct or union of an anonymous member, or nil.
func (b *BTF) anonymous(m Member, depth int) *Type {
	if m.Name != "" || depth > maxChain {
		return nil
	}
	u, err := b.Underlying(m.Type)
	if err != nil || u.Kind != KindStruct && u.Kind != KindUnion {
		return nil
	}
	return u
}

// memberNames lists the names reachable in t, anonymous members flattened.
func (b *BTF) memberNames(t *Type, depth int) []string {
	var names []string
	for _, m := range t.Members {
		if inner := b.anonymous(m, depth); inner != nil {
			names = append(names, b.memberNames(inner, depth+1)...)
		} else if m.Name != "" {
			names = append(names, m.Name)
		}
	}
	return names
}

// classify fills in how to read the value p reaches.
func (b *BTF) classify(p *Path) error {
	u, err := b.Underlying(p.Type)
	if err != nil {
		return err
	}
	if p.BitSize != 0 {
		return b.classifyBitfield(p, u)
	}
	switch u.Kind {
	case KindInt, KindEnum, KindEnum64:
		p.Kind, p.Size, p.Signed = ValueInt, u.Size, u.Signed
	case KindPtr:
		p.Kind, p.Size = ValueInt, 8
	case KindArray:
		elem, err := b.Underlying(u.Target)
		if err != nil {
			return err
		}
		p.Kind, p.Size = ValueAggregate, 0
		if elem.Kind == KindInt && elem.Size == 1 {
			p.Kind, p.Size = ValueString, u.Len
		}
	case KindStruct, KindUnion:
		p.Kind, p.Size = ValueAggregate, u.Size
	default:
		return fmt.Errorf("cannot read a value of type %s", b.TypeName(p.Type))
	}
	return nil
}

// Bitfield is the value of bitfield p from v, its Size bytes as loaded
// (zero-extended): BitSize bits from bit BitShift, sign-extended when
// Signed.
func (p *Path) Bitfield(v uint64) int64 {
	v <<= 64 - uint(p.BitShift) - uint(p.BitSize)
	if p.Signed {
		return int64(v) >> (64 - uint(p.BitSize))
	}
	return int64(v >> (64 - uint(p.BitSize)))
}

// classifyBitfield reads bitfield p of integer type u as the fewest bytes
// (1, 2, 4 or 8) that hold its bits.
func (b *BTF) classifyBitfield(p *Path, u *Type) error {
	if u.Kind != KindInt && u.Kind != KindEnum && u.Kind != KindEnum64 {
		return fmt.Errorf("cannot read a bitfield of type %s", b.TypeName(p.Type))
	}
	p.Kind, p.Signed, p.Size = ValueInt, u.Signed, 1
	for p.Size*8 < uint32(p.BitShift)+uint32(p.BitSize) {
		p.Size *= 2
	}
	return nil
}

func describe(s Step) string {
	switch {
	case s.Dynamic:
		return "[...]"
	case s.IsIndex:
		return fmt.Sprintf("[%d]", s.Index)
	}
	return "->" + s.Member
}
