package probes

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/bpftap/bpftap/internal/kernel"
	"github.com/bpftap/bpftap/internal/probes/attach"
	"github.com/bpftap/bpftap/internal/syntax"
)

// Arrays of classic tracepoints. A classic tracepoint's field that is an
// array (char next_comm[16], under --compatible=4.1 and older) has a C
// type from its format file and no BTF type: its value is its address in
// the trace record, which kernel_string reads as a string, and an index
// reads one element, as stap's BPF runtime has it: $next_comm[0] is the
// first character's code. The element's size is the field's size over its
// length; its sign, the C type's.

// arrayType splits a format file's array type, "char[16]".
var arrayType = regexp.MustCompile(`^(.*\S)\s*\[(\d+)\]$`)

// classicIndex resolves $field[index] for classic array field p, the
// argument i of the point.
func classicIndex(i int, p attach.Arg, comps []*syntax.TargetComponent) (*Access, *ContextError) {
	m := arrayType.FindStringSubmatch(p.CType)
	n, _ := strconv.Atoi(m[2])
	if len(comps) != 1 || comps[0].Kind == syntax.ComponentMember || n == 0 {
		return nil, ctxErr(0, "'%s' is an array of the trace record (%s): only one index applies to it", p.Name, p.CType)
	}
	elem := p.Loc.Size / n
	if elem != 1 && elem != 2 && elem != 4 && elem != 8 {
		return nil, ctxErr(0, "cannot index '%s' (%s): elements of %d bytes", p.Name, p.CType, elem)
	}
	path := &kernel.Path{Offsets: []int64{0}, Kind: kernel.ValueInt, Size: uint32(elem), Signed: signedCType(m[1])}
	a := &Access{Param: i, Path: path, Type: syntax.TypeLong}
	lit, ok := comps[0].Index.(*syntax.NumberLit)
	switch {
	case !ok:
		path.Scales = []kernel.Scale{{At: 0, Size: int64(elem)}}
		a.Indexes = []syntax.Expr{comps[0].Index}
	case lit.Value < 0 || lit.Value >= int64(n):
		return nil, ctxErr(0, "index %d out of bounds of %s", lit.Value, p.CType)
	default:
		path.Offsets[0] = lit.Value * int64(elem)
	}
	return a, nil
}

// signedCType tells whether an integer C type of a format file is signed.
func signedCType(t string) bool {
	t = strings.TrimPrefix(strings.TrimPrefix(t, "const "), "volatile ")
	return !strings.HasPrefix(t, "unsigned") && !strings.HasPrefix(t, "u") && !strings.HasPrefix(t, "__u") && t != "bool" && t != "_Bool"
}
