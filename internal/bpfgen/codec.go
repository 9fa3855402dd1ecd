package bpfgen

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/bpftap/bpftap/internal/format"
)

// The Go side of the layouts of globals (globals.go): what user space
// needs to read and write a global's map as the programs do, without the
// interpreter. A long or a key column is 8 native-endian bytes, a string a
// NUL-padded field; a map value comes as copies, one per possible CPU in a
// per-CPU map (bpfrt.LookupValues), else one; statistics decode with their
// StatLayout; records with Module.Decode (record.go).

// PackKey packs the columns of an array key as the programs lay keys out;
// a string longer than its field cannot be a key of the map.
func (gl *Global) PackKey(columns []format.Arg) ([]byte, error) {
	key := make([]byte, gl.Spec.KeySize)
	for i, f := range gl.Keys {
		if f.Width == 0 {
			binary.NativeEndian.PutUint64(key[f.Offset:], uint64(columns[i].Int))
			continue
		}
		if len(columns[i].Str) >= f.Width {
			return nil, fmt.Errorf("key \"%s\" of %s is longer than the %d bytes its kernel map holds",
				columns[i].Str, gl.Var.Name, f.Width-1)
		}
		copy(key[f.Offset:], columns[i].Str)
	}
	return key, nil
}

// KeyColumn is column i of packed key key (PackKey's inverse).
func (gl *Global) KeyColumn(key []byte, i int) format.Arg {
	f := gl.Keys[i]
	if f.Width == 0 {
		return format.Long(int64(binary.NativeEndian.Uint64(key[f.Offset:])))
	}
	return format.String(cString(key[f.Offset : f.Offset+f.Width]))
}

// DecodeValue is the value of a long or string global or element from
// its copies: a long summed over them (the partials of a per-CPU value),
// a string from the first.
func (gl *Global) DecodeValue(copies [][]byte) format.Arg {
	if gl.Value.Width > 0 {
		return format.String(cString(copies[0]))
	}
	var sum int64
	for _, v := range copies {
		sum += int64(binary.NativeEndian.Uint64(v))
	}
	return format.Long(sum)
}

// EncodeValue makes n copies of a value holding v: v in the first, zero in
// the others (so that a per-CPU value sums to v).
func (gl *Global) EncodeValue(v format.Arg, n int) [][]byte {
	copies := gl.zeroCopies(n)
	if gl.Value.Width > 0 {
		copy(copies[0][:gl.Value.Width-1], v.Str)
	} else {
		binary.NativeEndian.PutUint64(copies[0], uint64(v.Int))
	}
	return copies
}

// EncodeStats makes n copies of a statistic's value, each partial empty
// as newStat makes it.
func (gl *Global) EncodeStats(n int, newStat func() *format.Stat) [][]byte {
	copies := gl.zeroCopies(n)
	for _, c := range copies {
		gl.Stat.Encode(newStat(), c)
	}
	return copies
}

func (gl *Global) zeroCopies(n int) [][]byte {
	copies := make([][]byte, n)
	for i := range copies {
		copies[i] = make([]byte, gl.Spec.ValueSize)
	}
	return copies
}

// CacheEntry splits one CPU's element of gl's last-key cache (cache.go)
// into its key and pending value; valid is false when the cache is empty.
func (gl *Global) CacheEntry(element []byte) (key, value []byte, valid bool) {
	keyEnd := gl.cacheValue()
	return element[cacheKey:keyEnd], element[keyEnd:], binary.NativeEndian.Uint64(element) != 0
}

// cString is b up to its first NUL byte.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
