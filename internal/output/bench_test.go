package output

import (
	"io"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
)

// The cost of rendering one print record, text against JSON (bench/json.sh
// compares whole runs).
func BenchmarkPrint(b *testing.B) {
	f, err := format.Compile("%d %s: %s %d\n")
	if err != nil {
		b.Fatal(err)
	}
	args := []format.Arg{format.Long(12345), format.String("getppid"), format.String("sys_enter"), format.Long(-110)}
	for _, w := range []struct {
		name string
		w    Writer
	}{{"text", NewText(io.Discard, io.Discard)}, {"json", NewJSON(io.Discard)}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if err := w.w.Print(f, args, nil); err != nil {
					b.Fatal(err)
				}
			}
			w.w.Flush()
		})
	}
}
