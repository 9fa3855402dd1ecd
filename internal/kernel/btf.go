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
// every record and its name (~1.5 ms for 126,000 types, the only
// whole-file pass), and a type is decoded only when asked for, by ID. A
// lookup by name searches the string table for the name (offsetsOf) and
// then the types' names for its offset. Nothing is cached on disk: the
// scan is cheaper than validating a cache would be.
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
//
// # Modules
//
// A loaded module publishes its types in /sys/kernel/btf/MODULE as split
// BTF: a blob that continues vmlinux's. Its first type ID is the one after
// vmlinux's last, and its string offsets start where vmlinux's string table
// ends; its records refer freely to vmlinux's types and strings (a module's
// function taking a struct file * names vmlinux's struct file). Module
// returns such a blob as a BTF whose base is Kernel(): an ID below its
// first, or a string offset below its first, is looked up in the base.
// Type IDs are the kernel's own, the same numbers the kernel resolves
// against the module's BTF object (an fentry program's attach_btf_id, with
// the object's fd as attach_btf_obj_fd).
package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// VMLinuxPath is where the kernel publishes its BTF.
const VMLinuxPath = "/sys/kernel/btf/vmlinux"

// ErrNoBTF is returned (wrapped) when the kernel publishes no BTF.
var ErrNoBTF = errors.New("the kernel publishes no BTF (/sys/kernel/btf/vmlinux missing: CONFIG_DEBUG_INFO_BTF is off)")

// TypeID names a type in the kernel's BTF; 0 is void.
type TypeID uint32

// BTF is a lazily decoded view of one BTF blob, vmlinux's or, split on top
// of it, a module's. Its methods are safe for concurrent use.
type BTF struct {
	raw     []byte   // the whole blob
	types   []byte   // the type section
	strings []byte   // the string table
	offsets []uint32 // offsets[i] is the record of type first+i within types
	// names holds the name offset of type first+i at 4*i, little-endian: a
	// search by name reads these bytes (bytes.Index, which compares many
	// at once), not a header in each of the records' pages.
	names []byte

	// base is the BTF a module's continues (nil for vmlinux): IDs below
	// first and string offsets below strBase are base's.
	base    *BTF
	first   TypeID // the first ID of this blob's records: 1 (after void) or base.NumTypes()
	strBase uint32 // the offset of strings[0]: 0, or the end of base's string table
	module  string // the module's name, "" for vmlinux
	what    string // "the kernel's BTF", "module M's BTF", for errors
	user    bool   // ParseUser's

	mu      sync.Mutex
	decoded map[TypeID]*Type
	named   map[string][]TypeID // IDsByName's answers: each search reads up to 2.3 MB

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
	raw, err := readBlob(f)
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	b, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("kernel BTF %s: %w", VMLinuxPath, err)
	}
	return b, nil
}

// readBlob maps f read-only, or reads it where it cannot be mapped (a
// module's BTF file; vmlinux's before Linux 6.x). The mapping is never
// unmapped: the kernel's and its modules' BTF live as long as the process.
func readBlob(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	raw, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err == nil {
		return raw, nil
	}
	raw = make([]byte, st.Size())
	n, err := f.ReadAt(raw, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, err
	}
	return raw[:n], nil
}

// ErrModuleNotLoaded and ErrNoModuleBTF are returned (wrapped) by Module.
var (
	ErrModuleNotLoaded = errors.New("module not loaded")
	ErrNoModuleBTF     = errors.New("no BTF for module")
)

var modules struct {
	sync.Mutex
	m map[string]*BTF
}

// Module returns the BTF of a loaded module, split on top of Kernel()'s,
// reading it on first use (a module found not loaded is looked for again
// at the next call). Type, TypeByName, IDsByName, NamesWithPrefix,
// Resolve and the rest see the module's types and the kernel's; Funcs and
// Prototype only the module's own functions (a probe on one of them must
// name the module's BTF object).
func Module(name string) (*BTF, error) {
	if name == "" || name == "vmlinux" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("%q is not a module name", name)
	}
	c := &modules
	c.Lock()
	defer c.Unlock()
	if b, ok := c.m[name]; ok {
		return b, nil
	}
	base, err := Kernel()
	if err != nil {
		return nil, err
	}
	b, err := loadModule(base, name)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*BTF{}
	}
	c.m[name] = b
	return b, nil
}

// btfDir and moduleDir are where the kernel publishes modules' BTF and
// lists the modules.
const (
	btfDir    = "/sys/kernel/btf/"
	moduleDir = "/sys/module/"
)

func loadModule(base *BTF, name string) (*BTF, error) {
	path := btfDir + name
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, moduleMissing(name)
	}
	if err != nil {
		return nil, fmt.Errorf("BTF of module %s: %w", name, err)
	}
	defer f.Close()
	raw, err := readBlob(f)
	if err != nil {
		return nil, fmt.Errorf("BTF of module %s: %w", name, err)
	}
	b, err := ParseSplit(raw, base)
	if err != nil {
		return nil, fmt.Errorf("BTF of module %s (%s): %w", name, path, err)
	}
	b.module, b.what = name, "module "+name+"'s BTF"
	return b, nil
}

// moduleMissing says why a module has no /sys/kernel/btf/NAME: it is not
// loaded, or built in (its types are vmlinux's), or loaded without BTF.
func moduleMissing(name string) error {
	if _, err := os.Stat(moduleDir + name + "/initstate"); err == nil {
		return fmt.Errorf("%w: the kernel publishes no BTF for module %s (Linux 5.11 with CONFIG_DEBUG_INFO_BTF_MODULES does, unless the module's BTF was refused at load time)", ErrNoModuleBTF, name)
	}
	if _, err := os.Stat(moduleDir + name); err == nil {
		return fmt.Errorf("%w: module %s is built into the kernel: its types and functions are in the kernel's BTF", ErrNoModuleBTF, name)
	}
	return fmt.Errorf("%w: module %s is not loaded", ErrModuleNotLoaded, name)
}

const btfMagic = 0xeb9f

// Parse indexes a raw BTF blob (little-endian, as on every architecture
// bpftap targets). The blob is kept, not copied.
func Parse(raw []byte) (*BTF, error) {
	return parse(raw, nil)
}

// ParseUser indexes the BTF bpftap makes of a user program's DWARF types
// (package debuginfo), called what in errors: the values it describes lie
// in that program's memory, which bpf_probe_read_user reads (User).
func ParseUser(raw []byte, what string) (*BTF, error) {
	b, err := parse(raw, nil)
	if err != nil {
		return nil, err
	}
	b.what, b.user = what, true
	return b, nil
}

// ParseKernelDWARF indexes a raw BTF blob made from the kernel's DWARF
// (a kernel.statement's variables, typed by its debug package): its
// types describe the kernel's memory, what names them.
func ParseKernelDWARF(raw []byte, what string) (*BTF, error) {
	b, err := parse(raw, nil)
	if err != nil {
		return nil, err
	}
	b.what = what
	return b, nil
}

// User tells whether b describes a user program's memory (ParseUser).
func (b *BTF) User() bool { return b.user }

// ParseSplit indexes a raw split BTF blob (a module's) whose type IDs and
// string offsets continue base's.
func ParseSplit(raw []byte, base *BTF) (*BTF, error) {
	if base == nil {
		return nil, errors.New("split BTF needs a base")
	}
	return parse(raw, base)
}

func parse(raw []byte, base *BTF) (*BTF, error) {
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
		base:    base,
		first:   1,
		what:    "the kernel's BTF",
		decoded: map[TypeID]*Type{},
		named:   map[string][]TypeID{},
	}
	if base != nil {
		b.first, b.strBase = TypeID(base.NumTypes()), base.strEnd()
	}
	return b, b.indexRecords()
}

// recordHeaderSize is the size of struct btf_type: name_off, info, size/type.
const recordHeaderSize = 12

// indexRecords finds the start of every type record: a walk over the
// 130,000 records of a kernel's BTF, at every run that reads it, so
// without a branch on the kind (tables of the trailer's sizes): half the
// time of a switch, which mispredicts on kinds that come in no order.
func (b *BTF) indexRecords() error {
	b.offsets = make([]uint32, 0, len(b.types)/24)
	b.names = make([]byte, 0, len(b.types)/24*4)
	for p := uint64(0); p < uint64(len(b.types)); {
		if p+recordHeaderSize > uint64(len(b.types)) {
			return fmt.Errorf("truncated type record at offset %d", p)
		}
		header := b.types[p : p+recordHeaderSize : p+recordHeaderSize]
		b.offsets = append(b.offsets, uint32(p))
		b.names = append(b.names, header[:4]...)
		info := binary.LittleEndian.Uint32(header[4:])
		kind := info >> 24 & 0x1f
		p += recordHeaderSize + uint64(trailerFixed[kind]) + uint64(trailerPerMember[kind])*uint64(info&0xffff)
	}
	return nil
}

// The size of the data after a record's header, by kind: trailerFixed plus
// trailerPerMember for each of its vlen members (parameters, enumerators,
// variables of a section).
var (
	trailerFixed     = [32]uint8{KindInt: 4, KindVar: 4, KindDeclTag: 4, KindArray: 12}
	trailerPerMember = [32]uint8{KindStruct: 12, KindUnion: 12, KindDatasec: 12, KindEnum64: 12, KindEnum: 8, KindFuncProto: 8}
)

// NumTypes is the number of type IDs, void and a module's base's included:
// the IDs run from 0 to NumTypes()-1.
func (b *BTF) NumTypes() int { return int(b.first) + len(b.offsets) }

// FirstID is the first ID of the blob's own types: 1 for vmlinux (after
// void), the one after vmlinux's last for a module.
func (b *BTF) FirstID() TypeID { return b.first }

// ModuleName is the module whose BTF b is (Module), "" for vmlinux's.
func (b *BTF) ModuleName() string { return b.module }

// Base is the BTF a module's continues, nil for vmlinux's.
func (b *BTF) Base() *BTF { return b.base }

// strEnd is the offset after the string table's last byte.
func (b *BTF) strEnd() uint32 { return b.strBase + uint32(len(b.strings)) }

// str returns the string at offset off of the string table (the base's
// when off lies below this blob's).
func (b *BTF) str(off uint32) string { return string(b.strBytes(off)) }

// strBytes is str without the copy: the bytes of the string table.
func (b *BTF) strBytes(off uint32) []byte {
	if off < b.strBase {
		return b.base.strBytes(off)
	}
	off -= b.strBase
	if int(off) >= len(b.strings) {
		return nil
	}
	s := b.strings[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// record returns the record of id, one of the blob's own (id >= first).
func (b *BTF) record(id TypeID) []byte {
	return b.types[b.offsets[id-b.first]:]
}

// nameOff returns the name offset of record id, one of the blob's own.
func (b *BTF) nameOff(id TypeID) uint32 {
	return binary.LittleEndian.Uint32(b.names[4*(id-b.first):])
}

// kindOf returns the kind of type id (not void).
func (b *BTF) kindOf(id TypeID) Kind {
	if id < b.first {
		return b.base.kindOf(id)
	}
	return Kind(binary.LittleEndian.Uint32(b.record(id)[4:]) >> 24 & 0x1f)
}

// IDsByName returns the IDs of the types called name, of any kind: a
// module's own first, then its base's, each in ascending order.
func (b *BTF) IDsByName(name string) []TypeID {
	b.mu.Lock()
	ids, ok := b.named[name]
	b.mu.Unlock()
	if ok {
		return slices.Clone(ids)
	}
	ids = b.idsNamed(b.offsetsOf(name, true))
	b.mu.Lock()
	b.named[name] = ids
	b.mu.Unlock()
	return slices.Clone(ids)
}

// idsNamed returns the IDs of the types whose name is at one of offs
// (ascending), b's own first, then its base's.
func (b *BTF) idsNamed(offs []uint32) []TypeID {
	if len(offs) == 0 {
		return nil
	}
	var ids []TypeID
	for _, o := range offs { // one offset a blob (offsetsOf's whole names): a scan each
		ids = append(ids, b.idsNamedAt(o)...)
	}
	slices.Sort(ids)
	if b.base != nil {
		below := 0
		for below < len(offs) && offs[below] < b.strBase {
			below++
		}
		ids = append(ids, b.base.idsNamed(offs[:below])...)
	}
	return ids
}

// idsNamedAt returns the IDs of b's own types whose name is at off, in
// ascending order.
func (b *BTF) idsNamedAt(off uint32) []TypeID {
	var ids []TypeID
	want := binary.LittleEndian.AppendUint32(nil, off)
	for from := 0; ; {
		i := bytes.Index(b.names[from:], want)
		if i < 0 {
			return ids
		}
		at := from + i
		if at%4 != 0 { // the bytes of two neighbours' offsets
			from = at + 1
			continue
		}
		ids = append(ids, b.first+TypeID(at/4))
		from = at + 4
	}
}

// TypeByName returns the type of kind k called name (the first one: vmlinux
// BTF is deduplicated, so a name rarely has two types of one kind, and a
// forward declaration is of another kind; a module's own type comes before
// the kernel's of the same name).
func (b *BTF) TypeByName(name string, k Kind) (*Type, error) {
	for _, id := range b.IDsByName(name) {
		if b.kindOf(id) == k {
			return b.Type(id)
		}
	}
	if b.base != nil {
		return nil, fmt.Errorf("no %s %q in %s or the kernel's", k, name, b.what)
	}
	return nil, fmt.Errorf("no %s %q in %s", k, name, b.what)
}

// NamesWithPrefix returns every type name that starts with one of the
// prefixes, with the IDs of the types carrying it, in one pass over the records.
func (b *BTF) NamesWithPrefix(prefixes ...string) map[string][]TypeID {
	names := map[uint32]string{}
	marked := make([]uint64, b.strEnd()/64+1) // bit per string offset: is it in names?
	for _, prefix := range prefixes {
		for _, off := range b.offsetsOf(prefix, false) {
			names[off] = b.str(off)
			marked[off/64] |= 1 << (off % 64)
		}
	}
	found := map[string][]TypeID{}
	for o := b; o != nil; o = o.base { // a module's own types, then the kernel's
		for i := range len(o.names) / 4 {
			off := binary.LittleEndian.Uint32(o.names[4*i:])
			if off < o.strEnd() && marked[off/64]&(1<<(off%64)) != 0 {
				found[names[off]] = append(found[names[off]], o.first+TypeID(i))
			}
		}
	}
	return found
}

// offsetsOf returns the offsets of the strings that equal s (whole) or start
// with it (!whole), in ascending order, the base's first. A prefix is
// searched for itself, each match then checked to start a string: much
// faster than searching for "\x00s", whose first byte is everywhere. A
// whole name is searched for as "\x00s\x00", whose bytes after the first
// make the search skip ahead: its first match ends the search, since the
// table is deduplicated (pahole's, and cilium's that package debuginfo
// writes with): a whole name has one offset.
func (b *BTF) offsetsOf(s string, whole bool) []uint32 {
	var offs []uint32
	if b.base != nil {
		offs = b.base.offsetsOf(s, whole)
	}
	switch {
	case s == "":
		return offs
	case whole:
		if off, ok := b.offsetOf(s); ok {
			offs = append(offs, off)
		}
		return offs
	}
	// A split blob's first string may start at 0; vmlinux's is empty.
	for from := 0; from < len(b.strings); {
		i := bytes.Index(b.strings[from:], []byte(s))
		if i < 0 {
			break
		}
		at := from + i
		from = at + 1
		if at > 0 && b.strings[at-1] != 0 {
			continue
		}
		offs = append(offs, b.strBase+uint32(at))
	}
	return offs
}

// offsetOf returns the offset of string s of b's own table. It searches
// for "\x00s\x00" from its rarest byte on (rarest): a search from a byte
// that starts many strings, as '\x00' or '_' do, stops at each of them.
func (b *BTF) offsetOf(s string) (uint32, bool) {
	if len(b.strings) > len(s) && string(b.strings[:len(s)]) == s && b.strings[len(s)] == 0 {
		return b.strBase, true // the first string (a split blob's)
	}
	whole := []byte("\x00" + s + "\x00")
	k := rarest(s) + 1 // the anchor's index in whole
	for from := k; from < len(b.strings); {
		i := bytes.Index(b.strings[from:], whole[k:])
		if i < 0 {
			return 0, false
		}
		at := from + i - k // where whole would start
		if bytes.Equal(b.strings[at:at+k], whole[:k]) {
			return b.strBase + uint32(at+1), true
		}
		from += i + 1
	}
	return 0, false
}

// rarest returns the index of the byte of s that the names of BTF
// strings use the least, by a rough ranking of identifier characters
// (a byte not ranked, as '.' or '$', is rarer still).
func rarest(s string) int {
	best, bestRank := 0, len(byFrequency)
	for i := range len(s) {
		if r := strings.IndexByte(byFrequency, s[i]); r < bestRank { // -1, rarest, when not ranked
			best, bestRank = i, r
		}
	}
	return best
}

// byFrequency ranks the bytes of identifiers from the rarest in the
// kernel's BTF strings to the most common.
const byFrequency = "QJZXKVWYBHGFMUPDLCOAISNRTEqjzx98765kvwy4310hg2bfmupdlcoaisnrte_"

// Name is how a copy of a program kept across runs names this BTF
// (internal/sema's snapshot): "vmlinux" for Kernel()'s, the module's
// name for Module's; a BTF parsed from elsewhere (a user binary's, one
// made of DWARF) has none.
func (b *BTF) Name() (string, error) {
	if b.module == "" {
		if k, err := Kernel(); err == nil && k == b {
			return "vmlinux", nil
		}
	} else if m, err := Module(b.module); err == nil && m == b {
		return b.module, nil
	}
	return "", fmt.Errorf("%s has no name to be found again by", b.what)
}

// Named returns the BTF Name named.
func Named(name string) (*BTF, error) {
	if name == "vmlinux" {
		return Kernel()
	}
	return Module(name)
}
