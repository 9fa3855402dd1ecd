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
//	values: V V*N ...        (N copies of V; several lines allowed)
//	-- output --
//	the exact rendering, up to the end of the file
//
// Files named example-* are histograms printed in the output samples of
// SystemTap's example scripts (/usr/share/systemtap/examples), langref-* come
// from the language reference; the others were computed by hand from the rules
// of runtime/stat-common.c.
func TestHistGoldens(t *testing.T) {
	files, err := filepath.Glob("testdata/hist/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no histogram goldens", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, want := readHistGolden(t, file)
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

func readHistGolden(t *testing.T, file string) (*Stat, string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, want, ok := strings.Cut(string(data), "-- output --\n")
	if !ok {
		t.Fatal("no -- output -- line")
	}
	var s *Stat
	for _, line := range strings.Split(head, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "log":
			s = NewStat(LogHist, 0)
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
		default:
			t.Fatalf("bad line %q", line)
		}
	}
	if s == nil {
		t.Fatal("no histogram layout")
	}
	return s, want
}

func atoi(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
