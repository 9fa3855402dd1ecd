package exporter

import (
	"fmt"
	"strings"
	"testing"
)

// served is what one script's prometheus probe answered, for
// TestMergeExpositions.
type served struct{ script, text string }

// TestMergeExpositions merges the answers of scripts as /metrics does,
// in the order given: the merged exposition is want, each family once,
// its HELP and TYPE lines before all its samples; a script whose answer
// does not parse, or clashes, is left out whole, with the error left
// says (by script).
func TestMergeExpositions(t *testing.T) {
	for _, c := range []struct {
		name   string
		served []served
		want   string
		left   map[string]string
	}{{
		name:   "disjoint families, regrouped, comments dropped",
		served: []served{{"a.stp", "# a comment\nx{k=\"1\"} 1\n\ny 2\nx{k=\"2\"} 3\n"}, {"b.stp", "# HELP z the z\n# TYPE z counter\nz 4 1700000000000\n"}},
		want:   "x{k=\"1\"} 1\nx{k=\"2\"} 3\ny 2\n# HELP z the z\n# TYPE z counter\nz 4 1700000000000\n",
	}, {
		name: "a family of two scripts, once",
		served: []served{
			{"errno.stp", `syscall_error_count{pid="1",errno="-2",name="openat"} 3` + "\n"},
			{"other.stp", `syscall_error_count{pid="2",errno="-2",name="openat"} 5` + "\nother 1\n"},
		},
		want: `syscall_error_count{pid="1",errno="-2",name="openat"} 3` + "\n" + `syscall_error_count{pid="2",errno="-2",name="openat"} 5` + "\nother 1\n",
	}, {
		name: "histograms of two scripts, one TYPE and HELP",
		served: []served{
			{"a.stp", "# TYPE lat histogram\nlat_bucket{c=\"r\",le=\"1\"} 1\nlat_bucket{c=\"r\",le=\"+Inf\"} 1\nlat_sum{c=\"r\"} 1\nlat_count{c=\"r\"} 1\n"},
			{"b.stp", "# HELP lat latency\n# TYPE lat histogram\nlat_bucket{c=\"w\",le=\"+Inf\"} 2\nlat_sum{c=\"w\"} NaN\nlat_count{c=\"w\"} 2\n"},
		},
		want: "# HELP lat latency\n# TYPE lat histogram\nlat_bucket{c=\"r\",le=\"1\"} 1\nlat_bucket{c=\"r\",le=\"+Inf\"} 1\nlat_sum{c=\"r\"} 1\nlat_count{c=\"r\"} 1\n" +
			"lat_bucket{c=\"w\",le=\"+Inf\"} 2\nlat_sum{c=\"w\"} NaN\nlat_count{c=\"w\"} 2\n",
	}, {
		name:   "untyped and a counter do not",
		served: []served{{"a.stp", "# TYPE c counter\nc{a=\"1\"} 1\n"}, {"b.stp", "c{a=\"2\"} 2\n"}},
		want:   "# TYPE c counter\nc{a=\"1\"} 1\n",
		left:   map[string]string{"b.stp": "family c is untyped here, a counter in a.stp"},
	}, {
		name:   "untyped and TYPE untyped agree",
		served: []served{{"a.stp", "u{a=\"1\"} 1\n"}, {"b.stp", "# TYPE u untyped\nu{a=\"2\"} 2\n"}},
		want:   "# TYPE u untyped\nu{a=\"1\"} 1\nu{a=\"2\"} 2\n",
	}, {
		name:   "another TYPE: the later script is left out",
		served: []served{{"a.stp", "# TYPE n counter\nn 1\nkept 1\n"}, {"b.stp", "# TYPE n gauge\nn{x=\"1\"} 2\nlost 1\n"}},
		want:   "# TYPE n counter\nn 1\nkept 1\n",
		left:   map[string]string{"b.stp": "family n is a gauge here, a counter in a.stp"},
	}, {
		name:   "another HELP",
		served: []served{{"a.stp", "# HELP n one\nn 1\n"}, {"b.stp", "# HELP n two\nn{x=\"1\"} 2\n"}},
		want:   "# HELP n one\nn 1\n",
		left:   map[string]string{"b.stp": "family n has another HELP in a.stp"},
	}, {
		name:   "a series of two scripts, labels in another order",
		served: []served{{"a.stp", "s{a=\"1\",b=\"2\"} 1\n"}, {"b.stp", "s{b=\"2\", a=\"1\",} 2\n"}},
		want:   "s{a=\"1\",b=\"2\"} 1\n",
		left:   map[string]string{"b.stp": `series s{a="1",b="2"} is served by a.stp too`},
	}, {
		name:   "a series twice in one script",
		served: []served{{"a.stp", "s 1\ns{} 2\n"}, {"b.stp", "t 1\n"}},
		want:   "t 1\n",
		left:   map[string]string{"a.stp": "series s twice"},
	}, {
		name:   "a histogram's metric served untyped by another",
		served: []served{{"a.stp", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"}, {"b.stp", "h_sum{x=\"1\"} 3\n"}},
		want:   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		left:   map[string]string{"b.stp": "h_sum is a metric of family h in a.stp"},
	}, {
		name:   "a summary's metric, the other way round",
		served: []served{{"a.stp", "q_count 1\n"}, {"b.stp", "# TYPE q summary\nq_count 1\nq_sum 2\n"}},
		want:   "q_count 1\n",
		left:   map[string]string{"b.stp": "q_count is a metric of family q_count in a.stp"},
	}, {
		name:   "samples before their histogram's TYPE",
		served: []served{{"a.stp", "h_bucket{le=\"+Inf\"} 1\n# TYPE h histogram\nh_count 1\n"}},
		left:   map[string]string{"a.stp": "h_bucket is a metric of families h_bucket and h"},
	}, {
		name:   "the exporter's own family",
		served: []served{{"a.stp", "bpftap_script_up{script=\"b.stp\"} 1\n"}},
		left:   map[string]string{"a.stp": "family bpftap_script_up is the exporter's own"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			m := newMerged()
			m.reserve(&family{name: "bpftap_script_up", typ: "gauge"})
			left := map[string]string{}
			for _, s := range c.served {
				if err := m.addText(s.script, s.text); err != nil {
					left[s.script] = err.Error()
				}
			}
			if got := strings.TrimPrefix(m.text(), "# TYPE bpftap_script_up gauge\n"); got != c.want {
				t.Errorf("merged:\n%s\nwant:\n%s", got, c.want)
			}
			if fmt.Sprint(left) != fmt.Sprint(c.left) {
				t.Errorf("left out: %q, want %q", left, c.left)
			}
		})
	}
}

// TestExpositionSyntax: an answer Prometheus's parser refuses, or that is
// ambiguous, is a syntaxError at its line; one it takes parses.
func TestExpositionSyntax(t *testing.T) {
	for text, want := range map[string]string{
		// what the _map_unquoted macros make
		"ok 1\none_unq{key=a} 1\n":            "line 2: expected a label value in double quotes",
		"l{a=\"1\",a=\"2\"} 1":                "line 1: label a twice",
		"l{__name__=\"x\"} 1":                 "line 1: expected a label name",
		"l{a=\"1\" b=\"2\"} 1":                "line 1: expected ',' or '}' after a label",
		"l{a=\"1\"":                           "line 1: expected ',' or '}' after a label",
		"l{a=\"unterminated} 1":               "line 1: expected a label value in double quotes",
		"l{9a=\"1\"} 1":                       "line 1: expected a label name",
		"l":                                   "line 1: expected a blank, a value and at most a timestamp after the metric",
		"l{}1":                                "line 1: expected a blank, a value and at most a timestamp after the metric",
		"l 1 2 3":                             "line 1: expected a blank, a value and at most a timestamp after the metric",
		"l-x 1":                               "line 1: expected a blank, a value and at most a timestamp after the metric",
		"9l 1":                                "line 1: expected a metric name",
		"{a=\"1\"} 1":                         "line 1: expected a metric name",
		"l one":                               "line 1: the value is not a number",
		"l 0x1p3":                             "line 1: the value is not a number",
		"l 1_000":                             "line 1: the value is not a number",
		"l 1\r":                               "line 1: the value is not a number",
		"l 1 1.5":                             "line 1: the timestamp is not an integer",
		"# TYPE l counter\n# TYPE l gauge":    "line 2: a second TYPE line for l, or one after its samples",
		"l 1\n# TYPE l counter":               "line 2: a second TYPE line for l, or one after its samples",
		"# TYPE l enum":                       "line 1: TYPE l is not one of counter, gauge, histogram, summary, untyped",
		"# HELP l a\n# HELP l b":              "line 2: a second HELP line for l",
		"# HELP":                              "line 1: HELP line without a valid metric name",
		"# TYPE 1l counter":                   "line 1: TYPE line without a valid metric name",
		"ok 1\nl{a=\"\xff\"} 1":               "line 2: not UTF-8",
		"ok{a=\"\uFFFD\"} 1\nl{a=\"\xfe\"} 1": "line 2: not UTF-8",
	} {
		_, err := parseExposition(text)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	for _, text := range []string{
		"",
		"\n\n",
		"#\n#HELP x\n  x{a=\"\\\"q\\\\\\n\"}\t+Inf  \n",
		"# TYPE x:y gauge\nx:y{_a=\"é\",} -1e3 -5\n",
		"x NaN\ny -Inf\nz 1.5e-7\n",
		"# some comment with \xc3\xa9\n",
	} {
		if _, err := parseExposition(text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// BenchmarkMergeExposition merges the answer of bench/exporter's table
// (10,000 keys, 20,000 lines) as /metrics does, beside the scrape
// BenchmarkScrape (internal/driver) times.
func BenchmarkMergeExposition(b *testing.B) {
	var text strings.Builder
	for key := range 10000 {
		for _, op := range []string{"read", "write"} {
			fmt.Fprintf(&text, "table_count{key=\"%d\",op=\"%s\"} %d\n", key, op, key)
		}
	}
	for b.Loop() {
		m := newMerged()
		if err := m.addText("table.stp", text.String()); err != nil {
			b.Fatal(err)
		}
		m.text()
	}
}
