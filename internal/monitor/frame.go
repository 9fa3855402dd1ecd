package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/interp"
	"github.com/bpftap/bpftap/internal/output"
)

// view is what one frame of the screen shows.
type view struct {
	uptime   time.Duration
	module   string
	uid      int
	interval time.Duration
	// readEvery is how often the run is read (a multiple of interval,
	// where a read costs more than the budget) and readCost what the
	// last read cost.
	readEvery, readCost time.Duration
	paused              bool
	// outputOnly hides the status ('x'): the output takes the screen.
	outputOnly bool
	sort       column
	probes     []output.Hit
	globals    []interp.Glance
	output     []string // the last lines of the run's output, as written
	noKeys     string   // why the screen reads no keys, "" when it does
	note       string   // what the last key did
}

// row is one line of the screen; inverse rows (the first and the last)
// are drawn in inverse video.
type row struct {
	text    string
	inverse bool
}

// column is a column of the probe table.
type column int

const (
	colIndex column = iota
	colState
	colHits
	colMin
	colAvg
	colMax
	colName
	numColumns
)

var columnNames = [numColumns]string{"index", "state", "hits", "min", "avg", "max", "name"}

// sortRotation is the order in which 's' moves the sort column: stap's,
// but for the state, which a pause sets for every probe at once.
var sortRotation = []column{colIndex, colHits, colMin, colAvg, colMax, colName}

// next is the sort column after c.
func (c column) next() column {
	i := slices.Index(sortRotation, c)
	return sortRotation[(i+1)%len(sortRotation)]
}

// arrayTop is how many elements of each array the status shows at most
// (as many as fit the width).
const arrayTop = 5

// frame lays v out on a screen of width×height: the status (the header,
// the globals, the probe table), a separator, the last lines of the
// output, and the keys at the bottom. The output gets up to half of the
// screen when the status needs the rest, and what the status leaves.
func (v *view) frame(width, height int) []row {
	avail := height - 2 // the separator and the keys
	if avail < 0 {
		return []row{v.footer()}
	}
	var status []row
	if !v.outputOnly {
		status = v.status(width)
		status = status[:min(len(status), avail-min(len(v.output), avail/2))]
	}
	rows := append(status, row{text: "-- output " + strings.Repeat("-", max(width-10, 0))})
	lines := v.output[max(0, len(v.output)-(avail-len(status))):]
	for _, l := range lines {
		rows = append(rows, row{text: l})
	}
	for len(rows) < height-1 {
		rows = append(rows, row{})
	}
	return append(rows, v.footer())
}

// status is the header, the globals and the probe table.
func (v *view) status(width int) []row {
	head := fmt.Sprintf("uptime %s  module %s  uid %d  probes %d  refresh %s", clock(v.uptime), v.module, v.uid, len(v.probes), v.interval)
	if v.readEvery > v.interval {
		head += fmt.Sprintf(" (read every %s: %.1f ms of CPU a read)", v.readEvery, float64(v.readCost)/float64(time.Millisecond))
	}
	if v.paused {
		head += "  PAUSED"
	}
	rows := []row{{text: head, inverse: true}}
	rows = append(rows, globalRows(v.globals, width)...)
	return append(rows, probeRows(v.probes, v.sort, v.paused)...)
}

// footer is the last row: the keys, and what the last one did.
func (v *view) footer() row {
	text := "q quit  s sort  p pause  r resume  c reset  x status"
	if v.noKeys != "" {
		text = v.noKeys + ": Ctrl-C ends the run"
	}
	if v.note != "" {
		text += "  | " + v.note
	}
	return row{text: text, inverse: true}
}

// clock renders d as stap's monitor shows the uptime, HH:MM:SS.
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s%3600/60, s%60)
}

// globalRows packs the scalars' values into rows, then gives each array
// a row: its size and its first elements, as many as fit.
func globalRows(globals []interp.Glance, width int) []row {
	var rows []row
	var scalars []string
	for _, g := range globals {
		if g.Keys == nil {
			scalars = append(scalars, output.ElementText(g.Global, &g.Elements[0]))
		}
	}
	rows = append(rows, pack(scalars, width)...)
	for _, g := range globals {
		switch {
		case g.Keys == nil:
		case g.Unlisted:
			rows = append(rows, row{text: g.Name + ": kept per thread, not listed"})
		default:
			items := []string{fmt.Sprintf("%s: %s", g.Name, output.Plural(g.Len, "key"))}
			for i := range g.Elements {
				items = append(items, output.ElementText(g.Global, &g.Elements[i]))
			}
			rows = append(rows, row{text: firstRow(items, width)})
		}
	}
	return rows
}

// pack puts items into rows of at most width columns, two spaces apart;
// an item wider than the row has one of its own, cut.
func pack(items []string, width int) []row {
	var rows []row
	line := ""
	for _, it := range items {
		if line != "" && utf8.RuneCountInString(line)+2+utf8.RuneCountInString(it) > width {
			rows = append(rows, row{text: line})
			line = ""
		}
		if line != "" {
			line += "  "
		}
		line += it
	}
	if line != "" {
		rows = append(rows, row{text: line})
	}
	return rows
}

// firstRow is the first row pack makes of items.
func firstRow(items []string, width int) string {
	return pack(items, width)[0].text
}

// probeRows is the probe table: a header marking the sort column with a
// star, as stap's does, then a row per probe in that order.
func probeRows(hits []output.Hit, sortBy column, paused bool) []row {
	state := "on"
	if paused {
		state = "off"
	}
	cells := make([][numColumns]string, 0, len(hits)+1)
	var head [numColumns]string
	for c := range numColumns {
		head[c] = columnNames[c]
		if c == sortBy {
			head[c] += "*"
		}
	}
	cells = append(cells, head)
	for _, h := range sortedHits(hits, sortBy) {
		cells = append(cells, [numColumns]string{strconv.Itoa(h.Index), state, itoa(h.Hits), itoa(h.Min), itoa(h.Avg), itoa(h.Max), h.Probe})
	}
	var widths [numColumns]int
	for _, r := range cells {
		for c, s := range r {
			widths[c] = max(widths[c], utf8.RuneCountInString(s))
		}
	}
	rows := make([]row, len(cells))
	for i, r := range cells {
		var b strings.Builder
		for c := range colName {
			fmt.Fprintf(&b, "%*s  ", widths[c], r[c])
		}
		rows[i] = row{text: b.String() + r[colName]}
	}
	return rows
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sortedHits orders the probes by column c, as stap's monitor: the index
// and the name ascending, the counts descending; ties by index.
func sortedHits(hits []output.Hit, c column) []output.Hit {
	sorted := slices.Clone(hits)
	by := map[column]func(h output.Hit) int64{
		colHits: func(h output.Hit) int64 { return h.Hits },
		colMin:  func(h output.Hit) int64 { return h.Min },
		colAvg:  func(h output.Hit) int64 { return h.Avg },
		colMax:  func(h output.Hit) int64 { return h.Max },
	}
	slices.SortStableFunc(sorted, func(a, b output.Hit) int {
		var d int
		switch {
		case c == colName:
			d = strings.Compare(a.Probe, b.Probe)
		case by[c] != nil:
			d = cmp.Compare(by[c](b), by[c](a))
		}
		return cmp.Or(d, cmp.Compare(a.Index, b.Index))
	})
	return sorted
}

// render draws rows on the terminal, from its top left corner: each row
// fitted to the width (the last one a column short, so that no terminal
// scrolls), the rest of its line and of the screen cleared.
func render(rows []row, width int) []byte {
	b := []byte(home)
	for i, r := range rows {
		w := width
		if i > 0 {
			b = append(b, "\r\n"...)
		}
		if i == len(rows)-1 {
			w--
		}
		if r.inverse {
			b = append(b, inverse...)
		}
		b = append(b, fit(r.text, w)...)
		b = append(b, plain+clearLine...)
	}
	return append(b, clearBelow...)
}

// The terminal's escape sequences (ECMA-48 and xterm's).
const (
	enterScreen = "\x1b[?1049h\x1b[?25l" // the alternate screen, no cursor
	// leaveScreen brings the cursor back and the main screen, after CAN,
	// which ends a sequence a frame left unfinished (Ctrl-Z and Ctrl-C
	// flush the terminal's output, wherever a frame's bytes are)
	leaveScreen = "\x18\x1b[m\x1b[?25h\x1b[?1049l"
	home        = "\x1b[H"
	inverse     = "\x1b[7m"
	plain       = "\x1b[m"
	clearLine   = "\x1b[K"
	clearBelow  = "\x1b[J"
)

// fit makes text one row of at most width columns: tabs expanded,
// escape sequences dropped (the script's colors would upset the layout),
// other control characters and invalid bytes shown as '?', the rest cut.
func fit(text string, width int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(text) && n < width; {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == '\t':
			for pad := 8 - n%8; pad > 0 && n < width; pad-- {
				b.WriteByte(' ')
				n++
			}
			continue
		case r == 0x1b:
			i += escapeLength(text[i:])
			continue
		case r == '\r' || r == '\n':
			continue
		case r == utf8.RuneError && size == 1, r < 0x20, r >= 0x7f && r < 0xa0:
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// escapeLength is the length of the rest of an escape sequence after
// its ESC: a control sequence (CSI: '[', parameters, a final byte from
// '@' to '~'), or one character.
func escapeLength(s string) int {
	if s == "" {
		return 0
	}
	if s[0] != '[' {
		return 1
	}
	for i := 1; i < len(s); i++ {
		if s[i] >= '@' && s[i] <= '~' {
			return i + 1
		}
	}
	return len(s)
}
