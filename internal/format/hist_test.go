package format

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each testdata/hist/*.txt file is a histogram golden:
//
//	# comments
//	log | linear START STOP INTERVAL
//	shift N                  (optional: @variance's bit shift)
//	values: V V*N ...        (N copies of V)
//	loop FROM TO M...        (key*M for each M, for key from FROM to TO-1)
//	pow2 FROM TO +|-         (±2^i for i from FROM to TO-1, wrapping)
//	stats: count=N sum=N ... (optional: expected @count, @sum, ... of the total)
//	-- output --
//	the exact rendering, up to the end of the file
//
// Value lines may repeat and add in order. Files named example-* are histograms
// printed in the output samples of SystemTap's example scripts
// (/usr/share/systemtap/examples), langref-* come from the language reference,
// testsuite-* from SystemTap's own testsuite (systemtap.maps); the others were
// computed by hand from the rules of runtime/stat-common.c.
func TestHistGoldens(t *testing.T) {
	files, err := filepath.Glob("testdata/hist/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no histogram goldens", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := readHistGolden(t, file)
			s := Total(g.stat)
			for _, kv := range g.stats {
				op, want, _ := strings.Cut(kv, "=")
				if got, err := s.Get(op); err != nil || got != atoi(t, want) {
					t.Errorf("@%s = %d, %v; want %s", op, got, err, want)
				}
			}
			want := g.output
			got, err := s.AppendHist(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

type histGolden struct {
	stat   *Stat
	stats  []string // op=value
	output string
}

func readHistGolden(t *testing.T, file string) histGolden {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, want, ok := strings.Cut(string(data), "-- output --\n")
	if !ok {
		t.Fatal("no -- output -- line")
	}
	var s *Stat
	var g histGolden
	for _, line := range strings.Split(head, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "log":
			s = NewStat(LogHist, 0)
		case f[0] == "shift" && len(f) == 2 && s != nil:
			s.Shift = uint(atoi(t, f[1]))
		case f[0] == "linear" && len(f) == 4:
			h, err := LinearHist(atoi(t, f[1]), atoi(t, f[2]), atoi(t, f[3]))
			if err != nil {
				t.Fatal(err)
			}
			s = NewStat(h, 0)
		case f[0] == "values:" && s != nil:
			for _, v := range f[1:] {
				val, n, _ := strings.Cut(v, "*")
				times := int64(1)
				if n != "" {
					times = atoi(t, n)
				}
				for range times {
					s.Add(atoi(t, val))
				}
			}
		case f[0] == "loop" && len(f) > 3 && s != nil:
			for key := atoi(t, f[1]); key < atoi(t, f[2]); key++ {
				for _, m := range f[3:] {
					s.Add(key * atoi(t, m))
				}
			}
		case f[0] == "pow2" && len(f) == 4 && s != nil:
			for i := atoi(t, f[1]); i < atoi(t, f[2]); i++ {
				v := int64(1) << i
				if f[3] == "-" {
					v = -v
				}
				s.Add(v)
			}
		case f[0] == "stats:":
			g.stats = f[1:]
		default:
			t.Fatalf("bad line %q", line)
		}
	}
	if s == nil {
		t.Fatal("no histogram layout")
	}
	g.stat, g.output = s, want
	return g
}

func atoi(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
