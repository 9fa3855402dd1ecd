package kernelside

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/interp"
)

// Keys that share a text. Kernel probes key arrays by stack tokens
// (stacks.go), and two tokens can have one text: the same stack taken by
// two programs (their own frames differ, and TrimTracing drops them),
// stacks that differ only beyond MAXSTRINGLEN's cut or in frames the text
// does not show, a user stack of one program in two processes
// (sprint_ubacktrace's text), the empty text of every stack the kernel
// could not keep. stap keys its arrays by the text, so user space does
// too: the packed keys of an array whose keys read alike are one element,
// its value the merge of theirs (longs summed, statistics merged partial
// by partial, a string the first member's). Every read of the interpreter
// goes through the group:
//
//   - Elements lists the array and groups its keys by their text;
//   - Get, Stat and `in` read every member of the key's group, Delete
//     deletes them all, Set stores into one member and deletes the others,
//     Add adds to one;
//   - a key's group is found in an index of the array's groups, listed
//     again at most once per user-side handler (Session.HandlerStart: the
//     kernel adds keys meanwhile) and by every Elements, and only for a
//     key that has a stack's text in a string column: other keys are
//     looked up alone, as before. The member named by the key's first
//     tokens (stackTexts.token) is always among them, even when the
//     kernel made it after the index was listed.
//
// Kernel probes are not served by this: a kernel probe's s[backtrace()],
// `in` and delete use its own token, the element of that stack id alone.

// keyIndex is an array's packed keys grouped by the text of their key,
// as listed during handler number handler.
type keyIndex struct {
	handler uint64
	groups  map[string][][]byte // textKey → packed keys
}

// textKey encodes the text of a key: the columns, each ended by a NUL
// (which no string holds).
func textKey(k interp.Key) string {
	var b strings.Builder
	for _, v := range k {
		b.WriteString(strconv.FormatInt(v.Int, 10))
		b.WriteByte(0)
		b.WriteString(v.Str)
		b.WriteByte(0)
	}
	return b.String()
}

// stackKeyed tells whether a string column of k holds the text of a stack
// user space has read: only then can k be the text of several keys.
func (g mapArray) stackKeyed(k interp.Key) bool {
	for i, f := range g.gl.Keys {
		if f.Width > 0 && g.stacks.isText(k[i].Str) {
			return true
		}
	}
	return false
}

// group lists the array (map and caches) and groups its packed keys by
// their text, which becomes the index; it returns the keys' texts, one per
// group in the order of the listing.
func (g mapArray) group() []interp.Key {
	groups := map[string][][]byte{}
	var texts []interp.Key
	for _, key := range g.allKeys() {
		k := g.unpackKey(key)
		t := textKey(k)
		if groups[t] == nil {
			texts = append(texts, k)
		}
		groups[t] = append(groups[t], key)
	}
	for _, k := range texts {
		if members := groups[textKey(k)]; len(members) > 1 {
			g.packedFirst(k, members)
		}
	}
	g.index = &keyIndex{handler: *g.handlers, groups: groups}
	return texts
}

// packedFirst moves the member k packs to (its first tokens) to the front
// of its group, whose string value is the first member's.
func (g mapArray) packedFirst(k interp.Key, members [][]byte) {
	key, err := g.packKey(k)
	if err != nil {
		return
	}
	for i, m := range members {
		if bytes.Equal(m, key) {
			members[0], members[i] = members[i], members[0]
			return
		}
	}
}

// members returns the packed keys that hold element k: k packed (its
// stack texts as their first tokens) and, for a key with a stack's text,
// the other keys of its group.
func (g mapArray) members(k interp.Key) ([][]byte, error) {
	key, err := g.packKey(k)
	if err != nil {
		return nil, err
	}
	if !g.stackKeyed(k) {
		return [][]byte{key}, nil
	}
	if g.index == nil || g.index.handler != *g.handlers {
		g.group()
	}
	group := g.index.groups[textKey(k)]
	if len(group) > 0 && bytes.Equal(group[0], key) {
		return group, nil
	}
	return append([][]byte{key}, group...), nil // made since the listing, or absent
}

// home is the member of a group that a store goes to: the first that
// exists, so that a store into an element that exists never needs room
// for another; the first when none does.
func (g mapArray) home(members [][]byte) []byte {
	if len(members) == 1 {
		return members[0]
	}
	for _, key := range members {
		if vs, pending := g.element(key); vs != nil || pending != nil {
			return key
		}
	}
	return members[0]
}

// groupElement is the copies and pending values of every member, in the
// members' order (nil, nil when none exists).
func (g mapArray) groupElement(members [][]byte) (vs, pending [][]byte) {
	for _, key := range members {
		v, p := g.element(key)
		vs, pending = append(vs, v...), append(pending, p...)
	}
	return vs, pending
}
