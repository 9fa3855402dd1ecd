package kernelside

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/usym"
	"github.com/cilium/ebpf"
)

// Stack tokens (bpfgen/stacks.go) and symbol tokens (bpfgen/usymbols.go)
// become their text where user space reads a string the kernel made:
// record arguments, array keys and values, wherever in the string a token
// stands (a concatenation holds several). Each stack is read from its map
// (StackMap, or the store of a stack kept by value: TaskStackMap for a
// kernel stack, laid out alike; UserStackMap for a user stack, its
// addresses and its build-id frames in one value) and symbolized once,
// each address once; the text remembers the first string that had it,
// so that a key the interpreter looks up again (foreach, then s[k])
// finds the kernel's element; the others with that text are found
// through the array's keys (keys.go). Like stap's backtrace() a stack's
// text is cut at MAXSTRINGLEN, and so is the whole string's, but for a
// whole stack's (bpfgen.StackForm.Whole: print_backtrace's frames).
type stackTexts struct {
	m        *ebpf.Map // StackMap, nil when no program takes stacks
	buildIDs *ebpf.Map // BuildIDStackMap, nil when no program takes user stacks
	tasks    *ebpf.Map // TaskStackMap, nil when no program keeps a kernel stack by value
	users    *ebpf.Map // UserStackMap, nil when no program takes user stacks
	syms     bool      // a program makes symbol tokens
	maxStr   int

	mu     sync.Mutex
	text   map[string]string // string with tokens → text
	tokens map[string]string // text → the first string read with it
}

// newStackTexts reads the stacks in the module's stack maps (shared, by
// name); syms tells whether its programs make symbol tokens.
func newStackTexts(shared map[string]*ebpf.Map, syms bool, maxStr int) *stackTexts {
	return &stackTexts{m: shared[bpfgen.StackMap], buildIDs: shared[bpfgen.BuildIDStackMap],
		tasks: shared[bpfgen.TaskStackMap], users: shared[bpfgen.UserStackMap],
		syms: syms, maxStr: maxStr, text: map[string]string{}, tokens: map[string]string{}}
}

// expand returns s with the text of each token in it in its place.
func (st *stackTexts) expand(s string) string {
	if st == nil || st.m == nil && st.tasks == nil && !st.syms || !strings.Contains(s, "\x1b") {
		return s
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if t, ok := st.text[s]; ok {
		return t
	}
	var b strings.Builder
	found, whole := false, false
	for rest := s; rest != ""; {
		i := strings.IndexByte(rest, 0x1b)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		t, n, ok, w := st.tokenText(rest[i:])
		b.WriteString(t)
		rest, found, whole = rest[i+n:], found || ok, whole || w
	}
	if !found {
		return s
	}
	t := b.String()
	if !whole {
		t = cut(t, st.maxStr-1)
	}
	st.text[s] = t
	if _, taken := st.tokens[t]; !taken {
		st.tokens[t] = s
	}
	return t
}

// tokenText is the text of the token at the start of s and its length;
// ok is false when no token starts there (the ESC byte is then itself);
// whole tells that the text is a whole stack, which nothing cuts.
func (st *stackTexts) tokenText(s string) (text string, n int, ok, whole bool) {
	if tok, ok := bpfgen.ParseSymToken(s); ok && st.syms {
		return symbolText(tok), bpfgen.SymTokenLen, true, false
	}
	tok, ok := bpfgen.ParseStackToken(s)
	if !ok || st.m == nil && st.tasks == nil {
		return s[:1], 1, false, false
	}
	switch {
	case !tok.Valid:
	case tok.Form.User():
		text = st.renderUser(tok, st.userFrames(tok))
	case tok.Stored:
		text = st.render(tok, frames(st.tasks, tok.ID))
	default:
		text = st.render(tok, frames(st.m, tok.ID))
	}
	return text, tok.Len(), true, tok.Form.Whole()
}

// symbolText is the text of a symbol token: the symbol of its build-id
// frame, or of its address in its process.
func symbolText(tok bpfgen.SymToken) string {
	var sym usym.Symbol
	ok := false
	if tok.Frame {
		sym, ok = usym.Default().Frame(string(tok.BuildID[:]), tok.Offset, tok.Addr)
	}
	if !ok {
		sym, ok = usym.Default().Address(int(tok.Tgid), tok.Addr)
	}
	switch tok.Form {
	case bpfgen.SymData:
		return usym.Data(tok.Addr, sym, ok)
	case bpfgen.SymModule:
		return usym.Module(sym, ok)
	case bpfgen.SymFile:
		return usym.File(tok.Addr, sym, ok)
	case bpfgen.SymLine:
		return usym.Line(tok.Addr, sym, ok)
	case bpfgen.SymFileLine:
		return usym.FileLine(tok.Addr, sym, ok)
	}
	return usym.Name(tok.Addr, sym, ok)
}

// isText tells whether s is the text of a stack token read so far.
func (st *stackTexts) isText(s string) bool {
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.tokens[s]
	return ok
}

// token returns the first token read whose text s is, or s.
func (st *stackTexts) token(s string) string {
	if st == nil {
		return s
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if tok, ok := st.tokens[s]; ok {
		return tok
	}
	return s
}

// frames reads the addresses of stack id of stack map m (none if it is
// gone).
func frames(m *ebpf.Map, id uint32) []uint64 {
	buf := make([]byte, 8*bpfgen.MaxBacktrace)
	if m == nil || m.Lookup(id, buf) != nil {
		return nil
	}
	return addresses(buf)
}

// storedUserStack reads user stack id of UserStackMap: it returns the
// addresses and copies the build-id frames into buildIDs (zeroed if the
// stack is gone).
func (st *stackTexts) storedUserStack(id uint32, buildIDs []byte) []uint64 {
	buf := make([]byte, bpfgen.UserStackFrameSize*bpfgen.MaxBacktrace)
	if st.users == nil || st.users.Lookup(id, buf) != nil {
		clear(buildIDs)
		return nil
	}
	copy(buildIDs, buf[8*bpfgen.MaxBacktrace:])
	return addresses(buf[:8*bpfgen.MaxBacktrace])
}

// addresses are the addresses of a stack's frames in buf, up to the
// first 0.
func addresses(buf []byte) []uint64 {
	var addrs []uint64
	for i := 0; i < len(buf); i += 8 {
		a := binary.NativeEndian.Uint64(buf[i:])
		if a == 0 {
			break
		}
		addrs = append(addrs, a)
	}
	return addrs
}

// userFrame is a frame of a user stack and its symbol.
type userFrame struct {
	addr uint64
	sym  usym.Symbol
	ok   bool
}

// userFrames reads a user stack: its addresses, each symbolized through
// the build-id frame the kernel took with it (a frame the kernel has only
// an address for is symbolized as an address).
func (st *stackTexts) userFrames(tok bpfgen.StackToken) []userFrame {
	var addrs []uint64
	buf := make([]byte, bpfgen.BuildIDFrameSize*bpfgen.MaxBacktrace)
	if tok.Stored {
		addrs = st.storedUserStack(tok.ID, buf)
	} else {
		addrs = frames(st.m, tok.ID)
		if !tok.BuildIDsValid || st.buildIDs.Lookup(tok.BuildIDs, buf) != nil {
			clear(buf)
		}
	}
	frames := make([]userFrame, len(addrs))
	for i, a := range addrs {
		frames[i] = userFrame{addr: a}
		b := buf[i*bpfgen.BuildIDFrameSize:]
		if binary.NativeEndian.Uint32(b) == bpfgen.BuildIDFrameValid {
			frames[i].sym, frames[i].ok = usym.Default().Frame(string(b[4:24]), binary.NativeEndian.Uint64(b[24:]), a)
		} else {
			frames[i].sym, frames[i].ok = usym.Default().Known(a)
		}
	}
	return frames
}

// renderUser is the text of a user stack in its token's form, cut at
// MAXSTRINGLEN (the lines of sprint_ubacktrace() whole) unless the form
// is whole.
func (st *stackTexts) renderUser(tok bpfgen.StackToken, frames []userFrame) string {
	addrs := make([]uint64, len(frames))
	symbols := make(map[uint64]userFrame, len(frames))
	for i, f := range frames {
		addrs[i], symbols[f.addr] = f.addr, f
	}
	switch tok.Form {
	case bpfgen.UserCallers:
		return st.callers(addrs, tok.Depth)
	case bpfgen.UserText:
		return ksym.Lines(addrs, func(a uint64) string {
			f := symbols[a]
			return usym.SimpleLine(a, f.sym, f.ok)
		}, st.maxStr-1)
	}
	return st.cutUnlessWhole(tok.Form, ksym.Lines(addrs, func(a uint64) string { return usym.Hex(a) + " " }, 0))
}

// render is the text of a kernel stack in its token's form, cut at
// MAXSTRINGLEN unless the form is whole.
func (st *stackTexts) render(tok bpfgen.StackToken, addrs []uint64) string {
	addrs = ksym.Kernel().TrimTracing(addrs)
	switch tok.Form {
	case bpfgen.KernelText:
		return ksym.Lines(addrs, ksym.Kernel().SimpleLine, st.maxStr-1)
	case bpfgen.KernelCallers:
		return st.callers(addrs, tok.Depth)
	}
	return st.cutUnlessWhole(tok.Form, ksym.HexList(addrs))
}

// callers is callers(n)'s text of a stack: its first depth addresses
// (every one for 0), "0x%x" each, separated by spaces, whole words while
// the text stays within MAXSTRINGLEN.
func (st *stackTexts) callers(addrs []uint64, depth int) string {
	if depth > 0 && depth < len(addrs) {
		addrs = addrs[:depth]
	}
	t := ksym.Lines(addrs, func(a uint64) string { return fmt.Sprintf(" %#x", a) }, st.maxStr)
	return strings.TrimPrefix(t, " ")
}

// cutUnlessWhole cuts t at MAXSTRINGLEN unless form is whole.
func (st *stackTexts) cutUnlessWhole(form bpfgen.StackForm, t string) string {
	if form.Whole() {
		return t
	}
	return cut(t, st.maxStr-1)
}

// cut cuts t to limit bytes.
func cut(t string, limit int) string {
	if len(t) > limit {
		return t[:limit]
	}
	return t
}

// fillRangeMaps fills the maps of address ranges the programs search:
// SymbolMap, ModuleMap, CodeMap.
func (s *Session) fillRangeMaps() error {
	for _, r := range []struct {
		name   string
		shape  bpfgen.RangeTable
		ranges func() []addrRange
		what   string
	}{
		{bpfgen.SymbolMap, s.mod.SymbolTable(), symbolRanges, "kernel symbols for symname()"},
		{bpfgen.ModuleMap, s.mod.ModuleTable(), moduleRanges, "kernel modules for modname()"},
		{bpfgen.CodeMap, s.mod.CodeTable(), codeRanges, "the kernel's text for stack()"},
	} {
		if m := s.objs.shared[r.name]; m != nil {
			if err := fillRanges(m, r.shape, r.ranges()); err != nil {
				return output.Failf("%s: %w", r.what, err)
			}
		}
	}
	return nil
}

// symbolTable is the shape of SymbolMap for the running kernel.
func symbolTable() bpfgen.RangeTable { return rangeTable(symbolRanges()) }

// moduleTable is the shape of ModuleMap for the running kernel.
func moduleTable() bpfgen.RangeTable { return rangeTable(moduleRanges()) }

// addrRange is an element of a map of address ranges: [start, end), name.
type addrRange struct {
	start, end uint64
	name       string
}

// symbolRanges are the kernel's symbols as ranges: a symbol of unknown
// size, the last of a module, holds its start alone, as ksym's Lookup has
// it. Built once: the map's shape and its contents both need them.
var symbolRanges = sync.OnceValue(func() []addrRange {
	syms := ksym.Kernel().Symbols()
	r := make([]addrRange, len(syms))
	for i, s := range syms {
		r[i] = addrRange{s.Addr, s.Addr + max(s.Size, 1), s.Name}
	}
	return r
})

// codeTable is the shape of CodeMap for the running kernel.
func codeTable() bpfgen.RangeTable { return rangeTable(codeRanges()) }

// codeRanges are the kernel's text outside the tracing machinery
// (ksym.UntracedRanges), unnamed. Built once, as symbolRanges.
var codeRanges = sync.OnceValue(func() []addrRange {
	rs := ksym.Kernel().UntracedRanges()
	r := make([]addrRange, len(rs))
	for i, x := range rs {
		r[i] = addrRange{start: x.Start, end: x.End}
	}
	return r
})

// moduleRanges are the ranges of the kernel and of its modules.
func moduleRanges() []addrRange {
	mods := ksym.Kernel().Modules()
	r := make([]addrRange, len(mods))
	for i, m := range mods {
		r[i] = addrRange{m.Start, m.End, m.Name}
	}
	return r
}

func rangeTable(ranges []addrRange) bpfgen.RangeTable {
	longest := 0
	for _, r := range ranges {
		longest = max(longest, len(r.name))
	}
	return bpfgen.RangeTable{Count: len(ranges), NameLen: (longest + 8) &^ 7}
}

// fillRanges writes ranges into a map shaped t (SymbolMap, ModuleMap),
// in one batch.
func fillRanges(m *ebpf.Map, t bpfgen.RangeTable, ranges []addrRange) error {
	if len(ranges) == 0 {
		return nil // every address is in none
	}
	size := t.ValueSize()
	// a slice of [size]byte, which the batch call takes as its values
	elems := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(size, reflect.TypeFor[byte]())), len(ranges), len(ranges))
	keys, values := make([]uint32, len(ranges)), unsafe.Slice((*byte)(elems.UnsafePointer()), len(ranges)*size)
	for i, r := range ranges {
		keys[i] = uint32(i)
		v := values[i*size:]
		binary.NativeEndian.PutUint64(v, r.start)
		binary.NativeEndian.PutUint64(v[8:], r.end)
		copy(v[16:size-1], r.name)
	}
	_, err := m.BatchUpdate(keys, elems.Interface(), nil)
	return err
}
