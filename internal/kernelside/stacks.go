package kernelside

import (
	"encoding/binary"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/bpftap/bpftap/internal/usym"
	"github.com/cilium/ebpf"
)

// Tokens — of stacks (bpfgen/stacks.go) and of kernel symbols
// (bpfgen/symbols.go) — become their text where user space reads a string
// the kernel made: record arguments, array keys and values, a token alone
// or inside a longer string ("k:" . symname(addr())). Each stack is read
// from the stack map and symbolized once; the text remembers the string
// it came from, so that a key the interpreter looks up again (foreach,
// then s[k]) finds the kernel's element. Like stap's backtrace() the text
// is cut at MAXSTRINGLEN.
type stackTexts struct {
	m        *ebpf.Map // StackMap, nil when no program takes stacks
	buildIDs *ebpf.Map // BuildIDStackMap, nil when no program takes user stacks
	maxStr   int

	mu     sync.Mutex
	text   map[string]string // kernel string → text
	tokens map[string]string // text → kernel string
}

func newStackTexts(m, buildIDs *ebpf.Map, maxStr int) *stackTexts {
	return &stackTexts{m: m, buildIDs: buildIDs, maxStr: maxStr, text: map[string]string{}, tokens: map[string]string{}}
}

// expand returns s with each token replaced by its text.
func (st *stackTexts) expand(s string) string {
	if st == nil || !strings.Contains(s, "\x1b") {
		return s
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if t, ok := st.text[s]; ok {
		return t
	}
	var b strings.Builder
	for rest := s; rest != ""; {
		i := strings.IndexByte(rest, 0x1b)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		n := bpfgen.TokenLen(rest)
		if n == 0 {
			b.WriteByte(rest[0])
			rest = rest[1:]
			continue
		}
		b.WriteString(st.tokenText(rest[:n]))
		rest = rest[n:]
	}
	t := cut(b.String(), st.maxStr-1)
	st.text[s] = t
	if _, taken := st.tokens[t]; !taken {
		st.tokens[t] = s
	}
	return t
}

// tokenText is the text of one token.
func (st *stackTexts) tokenText(s string) string {
	if addr, found, ok := bpfgen.ParseSymbolToken(s); ok {
		if found {
			return ksym.Kernel().Symname(addr)
		}
		return ksym.Hex(addr)
	}
	tok, ok := bpfgen.ParseStackToken(s)
	switch {
	case !ok || st.m == nil:
		return s
	case !tok.Valid:
		return ""
	case tok.Form.User():
		return st.renderUser(tok.Form, st.userFrames(tok))
	}
	return st.render(tok.Form, st.frames(tok.ID))
}

// token returns the token whose text s is, or s.
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

// frames reads stack id's addresses (none if it is gone).
func (st *stackTexts) frames(id uint32) []uint64 {
	buf := make([]byte, 8*bpfgen.MaxBacktrace)
	if err := st.m.Lookup(id, buf); err != nil {
		return nil
	}
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
	addrs := st.frames(tok.ID)
	buf := make([]byte, bpfgen.BuildIDFrameSize*bpfgen.MaxBacktrace)
	if !tok.BuildIDsValid || st.buildIDs.Lookup(tok.BuildIDs, buf) != nil {
		clear(buf)
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

// renderUser is the text of a user stack in form, cut at MAXSTRINGLEN
// (the lines of sprint_ubacktrace() whole).
func (st *stackTexts) renderUser(form bpfgen.StackForm, frames []userFrame) string {
	addrs := make([]uint64, len(frames))
	symbols := make(map[uint64]userFrame, len(frames))
	for i, f := range frames {
		addrs[i], symbols[f.addr] = f.addr, f
	}
	if form == bpfgen.UserHex {
		return cut(ksym.Lines(addrs, func(a uint64) string { return usym.Hex(a) + " " }, 0), st.maxStr-1)
	}
	return ksym.Lines(addrs, func(a uint64) string {
		f := symbols[a]
		return usym.SimpleLine(a, f.sym, f.ok)
	}, st.maxStr-1)
}

// render is the text of a kernel stack in form, cut at MAXSTRINGLEN.
func (st *stackTexts) render(form bpfgen.StackForm, addrs []uint64) string {
	limit := st.maxStr - 1
	addrs = ksym.Kernel().TrimTracing(addrs)
	if form == bpfgen.KernelText {
		return ksym.Lines(addrs, ksym.Kernel().SimpleLine, limit)
	}
	return cut(ksym.HexList(addrs), limit)
}

// cut cuts t to limit bytes.
func cut(t string, limit int) string {
	if len(t) > limit {
		return t[:limit]
	}
	return t
}

// fillSymbols writes the kernel's symbols into SymbolMap, in one batch.
func fillSymbols(m *ebpf.Map) error {
	rs := ksym.Kernel().Ranges()
	if len(rs) == 0 {
		return nil // every address is "no symbol"
	}
	keys := make([]uint32, len(rs))
	for i := range keys {
		keys[i] = uint32(i)
	}
	_, err := m.BatchUpdate(keys, rs, nil)
	return err
}
