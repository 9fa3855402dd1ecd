package kernelside

import (
	"encoding/binary"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/bpfgen"
	"github.com/bpftap/bpftap/internal/ksym"
	"github.com/cilium/ebpf"
)

// Stack tokens (bpfgen/stacks.go) become the text of their stack where
// user space reads a string the kernel made: record arguments, array keys
// and values. Each stack is read from the stack map and symbolized once;
// the text remembers its token, so that a key the interpreter looks up
// again (foreach, then s[k]) finds the kernel's element. Like stap's
// backtrace() the text is cut at MAXSTRINGLEN.
type stackTexts struct {
	m      *ebpf.Map // StackMap, nil when no program takes stacks
	maxStr int

	mu     sync.Mutex
	text   map[string]string // token → text
	tokens map[string]string // text → token
}

func newStackTexts(m *ebpf.Map, maxStr int) *stackTexts {
	return &stackTexts{m: m, maxStr: maxStr, text: map[string]string{}, tokens: map[string]string{}}
}

// expand returns s, or the text of the stack s is the token of.
func (st *stackTexts) expand(s string) string {
	if st == nil || st.m == nil || !strings.HasPrefix(s, "\x1b") {
		return s
	}
	form, id, valid, ok := bpfgen.ParseStackToken(s)
	if !ok {
		return s
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if t, ok := st.text[s]; ok {
		return t
	}
	var t string
	if valid {
		t = st.render(form, st.frames(id))
	}
	st.text[s] = t
	if _, taken := st.tokens[t]; !taken {
		st.tokens[t] = s
	}
	return t
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

// render is the text of a stack in form, cut at MAXSTRINGLEN.
func (st *stackTexts) render(form bpfgen.StackForm, addrs []uint64) string {
	limit := st.maxStr - 1
	if !form.User() {
		addrs = ksym.Kernel().TrimTracing(addrs)
	}
	switch form {
	case bpfgen.KernelText:
		return ksym.Lines(addrs, ksym.Kernel().SimpleLine, limit)
	case bpfgen.UserText:
		return ksym.Lines(addrs, func(a uint64) string { return ksym.Hex(a) + "\n" }, limit)
	}
	t := ksym.HexList(addrs)
	if len(t) > limit {
		t = t[:limit]
	}
	return t
}
