package kernelside

import (
	"bytes"
	"slices"
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
// their text (groupKeys).
func (g mapArray) group() []keyGroup { return g.groupKeys(g.keys(), nil, g.cached()) }

// keyGroup is the packed keys that hold one element: those whose texts
// read alike (one key, unless it has a stack's text), the one its text
// packs to first, with the value copies each had when listed (nil
// unlisted, or listed without values).
type keyGroup struct {
	key     interp.Key
	members [][]byte
	values  [][][]byte
}

// groupKeys groups the packed keys of the map, keys (with their value
// copies, values[i] those of keys[i], when values is not nil), then the
// caches' keys the map lacks, by their text; the groups of keys with a
// stack's text become the index. The groups are in the order of keys.
func (g mapArray) groupKeys(keys [][]byte, values [][][]byte, cached []cacheEntry) []keyGroup {
	groups := make([]keyGroup, 0, len(keys)+len(cached))
	// each group's first member and its values, in one allocation each
	members, copies := make([][]byte, 0, cap(groups)), make([][][]byte, 0, cap(groups))
	stackGroups := map[string]int{} // text → index in groups
	add := func(key []byte, vs [][]byte) {
		k := g.unpackKey(key)
		if g.stackKeyed(k) {
			t := textKey(k)
			if i, ok := stackGroups[t]; ok {
				groups[i].members = append(groups[i].members, key)
				groups[i].values = append(groups[i].values, vs)
				return
			}
			stackGroups[t] = len(groups)
		}
		n := len(members)
		members, copies = append(members, key), append(copies, vs)
		groups = append(groups, keyGroup{key: k, members: members[n : n+1 : n+1], values: copies[n : n+1 : n+1]})
	}
	for i, key := range keys {
		var vs [][]byte
		if values != nil {
			vs = values[i]
		}
		add(key, vs)
	}
	for i, c := range cached {
		if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, c.key) }) &&
			!slices.ContainsFunc(cached[:i], func(o cacheEntry) bool { return bytes.Equal(o.key, c.key) }) {
			add(c.key, nil)
		}
	}
	index := &keyIndex{handler: *g.handlers, groups: make(map[string][][]byte, len(stackGroups))}
	for t, i := range stackGroups {
		if len(groups[i].members) > 1 {
			g.packedFirst(&groups[i])
		}
		index.groups[t] = groups[i].members
	}
	g.index = index
	return groups
}

// packedFirst moves the member grp's key packs to (its first tokens) to
// the front of the group, whose string value is the first member's.
func (g mapArray) packedFirst(grp *keyGroup) {
	key, err := g.packKey(grp.key)
	if err != nil {
		return
	}
	for i, m := range grp.members {
		if bytes.Equal(m, key) {
			grp.members[0], grp.members[i] = grp.members[i], grp.members[0]
			grp.values[0], grp.values[i] = grp.values[i], grp.values[0]
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
