package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/output"
	"github.com/bpftap/bpftap/internal/syntax"
)

// testView is a run with a scalar, a string, an array of 3 keys, a
// statistic and three probes.
func testView() view {
	long := func(name string, n int64) interp.Glance {
		return interp.Glance{Global: &output.Global{Name: name, Type: syntax.TypeLong, Elements: []output.Element{{Value: format.Arg{Int: n}}}}}
	}
	arr := interp.Glance{Len: 3, Global: &output.Global{Name: "calls", Type: syntax.TypeLong, Keys: []syntax.Type{syntax.TypeString},
		Elements: []output.Element{{Key: []format.Arg{{Str: "read"}}, Value: format.Arg{Int: 90}}, {Key: []format.Arg{{Str: "write"}}, Value: format.Arg{Int: 7}}}}}
	str := interp.Glance{Global: &output.Global{Name: "last", Type: syntax.TypeString, Elements: []output.Element{{Value: format.Arg{Str: "ls"}}}}}
	return view{
		uptime: 3723 * time.Second, module: "stap_42", uid: 0, interval: time.Second,
		globals: []interp.Glance{long("total", 97), str, arr},
		probes: []output.Hit{
			{Index: 0, Probe: "begin", Hits: 1, Min: 900, Avg: 900, Max: 900},
			{Index: 1, Probe: `kernel.trace("raw_syscalls:sys_enter")`, Hits: 97, Min: 80, Avg: 120, Max: 4000},
			{Index: 2, Probe: "timer.s(1)", Hits: 3, Min: 2000, Avg: 2500, Max: 3100},
		},
		output: []string{"one", "two\tthree", "four \x1b[31mred\x1b[m\x01"},
	}
}

func texts(rows []row) string {
	var lines []string
	for _, r := range rows {
		lines = append(lines, strings.TrimRight(fit(r.text, 1000), " "))
	}
	return strings.Join(lines, "\n")
}

// The frame: header, globals, probe table by index, separator, output,
// blank rows, keys.
func TestFrame(t *testing.T) {
	v := testView()
	got := texts(v.frame(70, 14))
	want := `uptime 01:02:03  module stap_42  uid 0  probes 3  refresh 1s
total=97  last="ls"
calls: 3 keys  calls["read"]=90  calls["write"]=7
index*  state  hits   min   avg   max  name
     0     on     1   900   900   900  begin
     1     on    97    80   120  4000  kernel.trace("raw_syscalls:sys_enter")
     2     on     3  2000  2500  3100  timer.s(1)
-- output ------------------------------------------------------------
one
two     three
four red?


q quit  s sort  p pause  r resume  c reset  x status`
	if got != want {
		t.Errorf("frame:\n%s\nwant:\n%s", got, want)
	}
}

// 's' moves the star and the order: hits, min, avg, max descending,
// name ascending, back to the index.
func TestSortRotation(t *testing.T) {
	v := testView()
	want := []struct {
		col   string
		order string
	}{
		{"hits*", "1 2 0"}, {"min*", "2 0 1"}, {"avg*", "2 0 1"}, {"max*", "1 2 0"}, {"name*", "0 1 2"}, {"index*", "0 1 2"},
	}
	for _, w := range want {
		v.sort = v.sort.next()
		rows := probeRows(v.probes, v.sort, false)
		if !strings.Contains(rows[0].text, w.col) {
			t.Errorf("header %q, want %s", rows[0].text, w.col)
		}
		var order []string
		for _, r := range rows[1:] {
			order = append(order, strings.Fields(r.text)[0])
		}
		if got := strings.Join(order, " "); got != w.order {
			t.Errorf("by %s: %s, want %s", w.col, got, w.order)
		}
	}
}

// On a short screen the output keeps half the rows and the status is
// cut; x gives the output the whole screen; a pause shows in the header
// and in the state column.
func TestFrameLayout(t *testing.T) {
	v := testView()
	v.paused = true
	rows := v.frame(200, 8)
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	if got := texts(rows[:3]); !strings.HasSuffix(strings.Split(got, "\n")[0], "PAUSED") || !strings.HasPrefix(rows[3].text, "-- output") {
		t.Errorf("paused, 8 rows:\n%s", texts(rows))
	}
	if got := texts(rows[4:7]); got != "one\ntwo     three\nfour red?" {
		t.Errorf("output rows:\n%s", got)
	}
	v.outputOnly = true
	rows = v.frame(200, 8)
	if !strings.HasPrefix(rows[0].text, "-- output") || rows[1].text != "one" {
		t.Errorf("output only:\n%s", texts(rows))
	}
	if got := probeRows(v.probes, colIndex, true)[1].text; !strings.Contains(got, " off ") {
		t.Errorf("paused probe row %q", got)
	}
}

// render draws from home, each row cleared to its end, the last one a
// column short, the rest of the screen cleared.
func TestRender(t *testing.T) {
	got := string(render([]row{{text: "abcdef", inverse: true}, {text: "ghijkl"}}, 4))
	want := home + inverse + "abcd" + plain + clearLine + "\r\n" + "ghi" + plain + clearLine + clearBelow
	if got != want {
		t.Errorf("render %q, want %q", got, want)
	}
}

func TestFit(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\tb", "a       b"},
		{"\x1b[1;31mred\x1b[0m!", "red!"},
		{"bell\a\xff", "bell??"},
		{"héllo wörld", "héllo wör"},
		{"line\r\n", "line"},
	} {
		if got := fit(c.in, 9); got != c.want {
			t.Errorf("fit(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A read that costs more than the budget of one interval is made every
// few intervals, which the header says.
func TestReadBudget(t *testing.T) {
	for _, c := range []struct {
		cost, interval time.Duration
		every          int
	}{
		{time.Millisecond, time.Second, 1},
		{5 * time.Millisecond, time.Second, 1},
		{5100 * time.Microsecond, time.Second, 2},
		{8 * time.Millisecond, time.Second, 2},
		{80 * time.Millisecond, time.Second, 16},
		{8 * time.Millisecond, 2 * time.Second, 1},
	} {
		if got := readsEvery(c.cost, c.interval); got != c.every {
			t.Errorf("a read of %s every %s: every %d intervals, want %d", c.cost, c.interval, got, c.every)
		}
	}
	v := testView()
	v.readEvery, v.readCost = 2*time.Second, 8100*time.Microsecond
	if got := v.status(200)[0].text; !strings.HasSuffix(got, "refresh 1s (read every 2s: 8.1 ms of CPU a read)") {
		t.Errorf("header %q", got)
	}
}
