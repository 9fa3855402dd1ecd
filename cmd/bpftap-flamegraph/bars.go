package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

const (
	barHeight      = 16.0
	rowHeight      = 20.0 // a bar and the gap to the next
	maxLabelWidth  = 300.0
	swatchSize     = 12.0
	legendGap      = 10.0 // between the last bar and the legend
	legendRowSpace = 20.0
)

// bar is one thread's: its total and its value in each category.
type bar struct {
	name  string
	total int64
	parts map[string]int64
}

// barChart is the chart's data: the bars by thread, the categories with
// their totals over all threads.
type barChart struct {
	bars       map[string]*bar
	categories map[string]int64
	total      int64
}

// drawBars reads "THREAD;CATEGORY VALUE" lines from r and writes a
// stacked bar chart to w: a bar per thread, longest first, a segment per
// category, in the same order and color in every bar (the categories'
// order is by their total over all threads), a legend below.
func drawBars(r io.Reader, w io.Writer, o options) error {
	c := barChart{bars: map[string]*bar{}, categories: map[string]int64{}}
	if err := readFolded(r, barForm, c.add); err != nil {
		return err
	}
	var bars []*bar
	for _, name := range sortedByTotal(c.bars, func(b *bar) int64 { return b.total }) {
		bars = append(bars, c.bars[name])
	}
	categories := sortedByTotal(c.categories, func(v int64) int64 { return v })
	l := layoutBars(bars, o.unit)
	legend := layoutLegend(categories, c.categories, c.total, l.legendTop(len(bars)))
	beginSVG(w, legend.bottom+margin, o.title)
	colors := map[string]string{}
	for i, name := range categories {
		colors[name] = distinct(i)
	}
	for i, b := range bars {
		l.drawBar(w, b, categories, colors, titleHeight+margin+float64(i)*rowHeight)
	}
	legend.draw(w, colors)
	endSVG(w)
	return nil
}

// add counts value for the thread and category names holds.
func (c *barChart) add(names []string, value int64) {
	thread, category := names[0], names[1]
	b := c.bars[thread]
	if b == nil {
		b = &bar{name: thread, parts: map[string]int64{}}
		c.bars[thread] = b
	}
	b.parts[category] += value
	b.total += value
	c.categories[category] += value
	c.total += value
}

// sortedByTotal is the keys of m, the largest total first, ties in name
// order.
func sortedByTotal[V any](m map[string]V, total func(V) int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(total(m[b]), total(m[a])), cmp.Compare(a, b))
	})
	return keys
}

// barLayout is where bars go: thread names in a column left of them,
// totals right of them, scale pixels a unit.
type barLayout struct {
	labelWidth, left, scale float64
	unit                    string
}

// layoutBars fits the names, the longest bar (the first) and its total
// in the width.
func layoutBars(bars []*bar, unit string) barLayout {
	l := barLayout{unit: unit}
	for _, b := range bars {
		l.labelWidth = max(l.labelWidth, textWidth(b.name)+10)
	}
	l.labelWidth = min(l.labelWidth, maxLabelWidth)
	l.left = margin + l.labelWidth
	if len(bars) > 0 && bars[0].total > 0 {
		longest := bars[0].total
		l.scale = (width - margin - l.left - textWidth(quantity(longest, unit)) - 10) / float64(longest)
	}
	return l
}

// legendTop is the top of the legend under n bars.
func (l barLayout) legendTop(n int) float64 {
	return titleHeight + margin + float64(n)*rowHeight + legendGap
}

// textWidth is about how wide s is drawn, in pixels.
func textWidth(s string) float64 {
	return float64(utf8.RuneCountInString(s)) * charWidth
}

// drawBar draws b at the height y: its name, a segment per category it
// has (with a tooltip: the value and its share of the thread's total),
// its total.
func (l barLayout) drawBar(w io.Writer, b *bar, categories []string, colors map[string]string, y float64) {
	total := quantity(b.total, l.unit)
	fmt.Fprintf(w, `<g class="thread"><title>%s: %s</title><text x="%.1f" y="%.1f" text-anchor="end">%s</text></g>`+"\n",
		esc(b.name), esc(total), l.left-6, y+barHeight-4, esc(fit(b.name, l.labelWidth)))
	x := l.left
	for _, category := range categories {
		v, ok := b.parts[category]
		if !ok {
			continue
		}
		sw := float64(v) * l.scale
		writeBox(w, fmt.Sprintf(` class="segment" data-category="%s"`, esc(category)), box{
			x: x, y: y, w: sw, h: barHeight, fill: colors[category],
			tip:   fmt.Sprintf("%s: %s %s, %s of %s", b.name, category, quantity(v, l.unit), share(v, b.total), total),
			label: category,
		})
		x += sw
	}
	fmt.Fprintf(w, `<text class="total" x="%.1f" y="%.1f">%s</text>`+"\n", x+6, y+barHeight-4, esc(total))
}

// legend is the key to the colors: an entry per category, in rows.
type legend struct {
	entries []legendEntry
	bottom  float64
}

// legendEntry is a category's swatch and name at (x, y), with its share
// of all the values.
type legendEntry struct {
	category, text string
	x, y           float64
}

// layoutLegend places the categories' entries from top down, left to
// right, a new row when one is full.
func layoutLegend(categories []string, totals map[string]int64, total int64, top float64) legend {
	var l legend
	x, y := margin, top
	for _, c := range categories {
		text := fmt.Sprintf("%s %s", c, share(totals[c], total))
		entryWidth := swatchSize + 6 + textWidth(text) + 18
		if x > margin && x+entryWidth > width-margin {
			x, y = margin, y+legendRowSpace
		}
		l.entries = append(l.entries, legendEntry{category: c, text: text, x: x, y: y})
		x += entryWidth
	}
	l.bottom = y + legendRowSpace
	return l
}

// draw writes the legend.
func (l legend) draw(w io.Writer, colors map[string]string) {
	for _, e := range l.entries {
		fmt.Fprintf(w, `<g class="legend" data-category="%s"><rect x="%.1f" y="%.1f" width="%.0f" height="%.0f" fill="%s"/><text x="%.1f" y="%.1f">%s</text></g>`+"\n",
			esc(e.category), e.x, e.y, swatchSize, swatchSize, colors[e.category], e.x+swatchSize+6, e.y+swatchSize-1, esc(e.text))
	}
}
