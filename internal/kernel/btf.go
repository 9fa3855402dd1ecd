// Package kernel describes the running kernel to the BPF code generator: the
// types of its BTF (BPF Type Format) and the tracepoints a probe may attach to.
//
// # Reading BTF cheaply
//
// The kernel publishes its types in /sys/kernel/btf/vmlinux: a header, a
// section of variable-length type records (type ID n is the n-th record) and
// a string table. Decoding everything (as cilium/ebpf's btf.LoadKernelSpec
// does before the first lookup) costs 20-40 ms; a script needs a handful of
// types. So the file is mapped read-only and scanned once for the offset of
// every record (~1.5 ms for 126,000 types, the only whole-file pass), and a
// type is decoded only when asked for, by ID. A name lookup searches the
// string table for "\x00name\x00" (the table is deduplicated, so a name has
// one offset) and then the records for that name offset. Nothing is cached on
// disk: the scan is cheaper than validating a cache would be.
//
// # Tracepoints
//
// Every tracepoint has a typedef btf_trace_EVENT (pointer to its prototype,
// with a leading void *__data) and a function __traceiter_EVENT whose
// parameters carry the source names ($p, $old_pid, $bprm). The system that
// kernel.trace("SYSTEM:EVENT") names comes from tracefs (available_events);
// see tracepoint.go and tracefs.go.
//
// # Member access
//
// $p->comm and $bprm->filename chains are resolved by path.go into a list of
// byte offsets and pointer loads, with the final value's size and signedness;
// see Path.
package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// VMLinuxPath is where the kernel publishes its BTF.
const VMLinuxPath = "/sys/kernel/btf/vmlinux"

// ErrNoBTF is returned (wrapped) when the kernel publishes no BTF.
var ErrNoBTF = errors.New("the kernel publishes no BTF (/sys/kernel/btf/vmlinux missing: CONFIG_DEBUG_INFO_BTF is off)")

// TypeID names a type in the kernel's BTF; 0 is void.
type TypeID uint32

// BTF is a lazily decoded view of one BTF blob. Its methods are safe for
// concurrent use.
type BTF struct {
	raw     []byte   // the whole blob
	types   []byte   // the type section
	strings []byte   // the string table
	offsets []uint32 // offsets[id] is the record of type id within types; offsets[0] unused (void)

	mu      sync.Mutex
	decoded map[TypeID]*Type

	funcsOnce sync.Once
	funcs     map[string]TypeID // Funcs
}

var (
	kernelOnce sync.Once
	kernelBTF  *BTF
	kernelErr  error
)

// Kernel returns the running kernel's BTF, reading it on first use.
func Kernel() (*BTF, error) {
	kernelOnce.Do(func() { kernelBTF, kernelErr = loadKernel() })
	return kernelBTF, kernelErr
}

func loadKernel() (*BTF, error) {
	f, err := os.Open(VMLinuxPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoBTF
	}
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	// The mapping is never unmapped: the kernel's BTF lives as long as the process.
	raw, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		raw = make([]byte, st.Size())
		if _, err := f.ReadAt(raw, 0); err != nil {
			return nil, fmt.Errorf("kernel BTF: %w", err)
		}
	}
	b, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("kernel BTF %s: %w", VMLinuxPath, err)
	}
	return b, nil
}

const btfMagic = 0xeb9f

// Parse indexes a raw BTF blob (little-endian, as on every architecture
// bpftap targets). The blob is kept, not copied.
func Parse(raw []byte) (*BTF, error) {
	if len(raw) < 24 || binary.LittleEndian.Uint16(raw) != btfMagic {
		return nil, errors.New("not little-endian BTF")
	}
	le := binary.LittleEndian
	hdrLen := uint64(le.Uint32(raw[4:]))
	typeOff, typeLen := hdrLen+uint64(le.Uint32(raw[8:])), uint64(le.Uint32(raw[12:]))
	strOff, strLen := hdrLen+uint64(le.Uint32(raw[16:])), uint64(le.Uint32(raw[20:]))
	if typeOff+typeLen > uint64(len(raw)) || strOff+strLen > uint64(len(raw)) {
		return nil, errors.New("BTF sections out of bounds")
	}
	b := &BTF{
		raw:     raw,
		types:   raw[typeOff : typeOff+typeLen],
		strings: raw[strOff : strOff+strLen],
		decoded: map[TypeID]*Type{},
	}
	return b, b.indexRecords()
}

// recordHeaderSize is the size of struct btf_type: name_off, info, size/type.
const recordHeaderSize = 12

// indexRecords finds the start of every type record.
func (b *BTF) indexRecords() error {
	b.offsets = make([]uint32, 1, len(b.types)/24)
	for p := uint64(0); p < uint64(len(b.types)); {
		if p+recordHeaderSize > uint64(len(b.types)) {
			return fmt.Errorf("truncated type record at offset %d", p)
		}
		b.offsets = append(b.offsets, uint32(p))
		info := binary.LittleEndian.Uint32(b.types[p+4:])
		p += recordHeaderSize + trailerSize(Kind(info>>24&0x1f), uint64(info&0xffff))
	}
	return nil
}

// trailerSize is the size of the data following a record's header.
func trailerSize(k Kind, vlen uint64) uint64 {
	switch k {
	case KindInt, KindVar, KindDeclTag:
		return 4
	case KindArray:
		return 12
	case KindStruct, KindUnion, KindDatasec, KindEnum64:
		return 12 * vlen
	case KindEnum, KindFuncProto:
		return 8 * vlen
	}
	return 0
}

// NumTypes is the number of type IDs, void included.
func (b *BTF) NumTypes() int { return len(b.offsets) }

// str returns the string at offset off of the string table.
func (b *BTF) str(off uint32) string {
	if int(off) >= len(b.strings) {
		return ""
	}
	s := b.strings[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// nameOff returns the name offset of record id.
func (b *BTF) nameOff(id TypeID) uint32 {
	return binary.LittleEndian.Uint32(b.types[b.offsets[id]:])
}

// kindOf returns the kind of record id.
func (b *BTF) kindOf(id TypeID) Kind {
	return Kind(binary.LittleEndian.Uint32(b.types[b.offsets[id]+4:]) >> 24 & 0x1f)
}

// IDsByName returns the IDs of the types called name, of any kind.
func (b *BTF) IDsByName(name string) []TypeID {
	offs := b.offsetsOf(name, true)
	if len(offs) == 0 {
		return nil
	}
	var ids []TypeID
	for id := TypeID(1); int(id) < len(b.offsets); id++ {
		n := b.nameOff(id)
		for _, o := range offs {
			if n == o {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// TypeByName returns the type of kind k called name (the first one: vmlinux
// BTF is deduplicated, so a name rarely has two types of one kind, and a
// forward declaration is of another kind).
func (b *BTF) TypeByName(name string, k Kind) (*Type, error) {
	for _, id := range b.IDsByName(name) {
		if b.kindOf(id) == k {
			return b.Type(id)
		}
	}
	return nil, fmt.Errorf("no %s %q in the kernel's BTF", k, name)
}

// NamesWithPrefix returns every type name that starts with one of the
// prefixes, with the IDs of the types carrying it, in one pass over the records.
func (b *BTF) NamesWithPrefix(prefixes ...string) map[string][]TypeID {
	names := map[uint32]string{}
	marked := make([]uint64, len(b.strings)/64+1) // bit per string offset: is it in names?
	for _, prefix := range prefixes {
		for _, off := range b.offsetsOf(prefix, false) {
			names[off] = b.str(off)
			marked[off/64] |= 1 << (off % 64)
		}
	}
	found := map[string][]TypeID{}
	for id := TypeID(1); int(id) < len(b.offsets); id++ {
		if off := b.nameOff(id); marked[off/64]&(1<<(off%64)) != 0 {
			found[names[off]] = append(found[names[off]], id)
		}
	}
	return found
}

// offsetsOf returns the offsets of the strings that equal s (whole) or start
// with it (!whole). Searching for s itself and checking the bytes around it
// is much faster than searching for "\x00s", whose first byte is everywhere.
func (b *BTF) offsetsOf(s string, whole bool) []uint32 {
	var offs []uint32
	for from := 1; from < len(b.strings); {
		i := bytes.Index(b.strings[from:], []byte(s))
		if i < 0 {
			break
		}
		at := from + i
		from = at + 1
		if b.strings[at-1] != 0 {
			continue
		}
		if end := at + len(s); whole && (end >= len(b.strings) || b.strings[end] != 0) {
			continue
		}
		offs = append(offs, uint32(at))
	}
	return offs
}
