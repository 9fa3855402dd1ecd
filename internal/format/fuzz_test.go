package format

import (
	"encoding/binary"
	"testing"
)

// FuzzFormat checks that no format string, argument list, room or memory
// failure makes the engine panic, and that a call never writes past its room.
func FuzzFormat(f *testing.F) {
	for _, seed := range []string{"%d", "%-5s|%*.*x", "%#c%b%.3M", "%08.3p%%", "%", "%-", "%l", "abc%.m",
		"%4294967295d", "%.4294967295s", "%*b%.*m"} {
		f.Add(seed, []byte{1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0x80, 0, 0x10}, uint16(100))
	}
	f.Fuzz(func(t *testing.T, format string, raw []byte, room uint16) {
		c, err := Compile(format)
		if err != nil {
			return
		}
		_ = c.String()
		args := make([]Arg, 0, len(c.Args()))
		for i, k := range c.Args() {
			var v int64
			if len(raw) >= 8*(i+1) {
				v = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			} else if i < len(raw) {
				v = int64(int8(raw[i]))
			}
			if k == KindString {
				args = append(args, String(string(raw[min(i, len(raw)):])))
			} else {
				args = append(args, Long(v))
			}
		}
		out, _ := c.Exec(nil, args, testMemory{}, int(room))
		limit := int(room)
		if limit == 0 {
			limit = BufferSize
		}
		if len(out) > limit {
			t.Fatalf("%q wrote %d bytes, room %d", format, len(out), limit)
		}
		// too few arguments read as zero
		if s, _ := c.Sprint(args[:len(args)/2], nil, int(room)); len(s) > max(int(room)-1, 0) {
			t.Fatalf("%q: sprint wrote %d bytes, MAXSTRINGLEN %d", format, len(s), room)
		}
	})
}

// FuzzText checks the tapset string helpers on arbitrary bytes.
func FuzzText(f *testing.F) {
	for _, seed := range []string{"abc", "é\x01\"\\", "\xf0\x9f\x98\x80\xc3", ""} {
		f.Add(seed, int64(8), int64(1), uint16(DefaultMaxStringLen))
	}
	f.Fuzz(func(t *testing.T, s string, n, quoted int64, maxLen uint16) {
		m := int(maxLen)
		for _, out := range []string{TextStr(s, m), TextStrN(s, n, quoted, m), StringQuoted(s, m)} {
			if len(out) > max(m-1, 0) {
				t.Fatalf("%q: %d bytes, MAXSTRINGLEN %d", s, len(out), m)
			}
		}
	})
}

// FuzzStat checks statistics and histogram rendering on arbitrary values and
// linear layouts.
func FuzzStat(f *testing.F) {
	f.Add(int64(0), int64(100), int64(10), []byte{1, 2, 3, 200, 0x80})
	f.Add(int64(-1<<31), int64(1<<31-1), int64(-7), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, start, stop, interval int64, raw []byte) {
		hists := []*Hist{LogHist}
		if h, err := LinearHist(start, stop, interval); err == nil {
			hists = append(hists, h)
		}
		for _, h := range hists {
			a, b := NewStat(h, uint(len(raw)%9)), NewStat(h, uint(len(raw)%9))
			for i := 0; i+8 <= len(raw); i += 4 {
				a.Add(int64(binary.LittleEndian.Uint64(raw[i:])))
				b.Add(int64(int8(raw[i])))
			}
			for _, s := range []*Stat{Total(a, b), arrayRead(a, b)} {
				for _, op := range []string{OpCount, OpSum, OpMin, OpMax, OpAvg, OpVariance} {
					_, _ = s.Get(op)
				}
				_, _ = s.AppendHist(nil)
			}
		}
	})
}
