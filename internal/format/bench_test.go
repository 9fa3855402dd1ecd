package format

import "testing"

func BenchmarkAppend(b *testing.B) {
	cases := []struct {
		name   string
		format string
		args   []Arg
	}{
		{"literal", "hello, world\n", nil},
		{"d", "%d\n", []Arg{Long(-123456789)}},
		{"syscount", "%-20s %10d %#x\n", []Arg{String("nginx"), Long(4821), Long(0x7ffd1234)}},
		{"padded", "%5d|%-8s|%08x|%c|%.3s\n", []Arg{Long(42), String("abc"), Long(48879), Long(65), String("abcdef")}},
	}
	for _, c := range cases {
		f, err := Compile(c.format)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				buf = f.Append(buf[:0], c.args)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("%-20s %10d %#x\n"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHist(b *testing.B) {
	s := NewStat(LogHist, 0)
	for i := range int64(10000) {
		s.Add(i * i)
	}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = s.AppendHist(buf[:0])
	}
}

func BenchmarkStatAdd(b *testing.B) {
	s := NewStat(LogHist, 0)
	for b.Loop() {
		s.Add(12345)
	}
}
