package main

import (
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	width       = 1200.0 // of every drawing, in pixels
	margin      = 10.0
	titleHeight = 30.0
	charWidth   = 7.0 // of a character of the 12-pixel font, about
)

// beginSVG writes the start of a drawing: the document, a background and
// the title; the chart's elements follow, then endSVG.
func beginSVG(w io.Writer, height float64, title string) {
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Verdana, sans-serif" font-size="12">
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text x="%.0f" y="20" text-anchor="middle" font-size="17">%s</text>
`, width, height, width, height, width/2, esc(title))
}

// endSVG writes the end of a drawing.
func endSVG(w io.Writer) {
	fmt.Fprintln(w, "</svg>")
}

// esc is s as XML text or attribute value: markup characters escaped,
// and what XML cannot hold (invalid UTF-8, control characters) replaced
// by U+FFFD.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // writes to a strings.Builder: no error
	return b.String()
}

// box is a rectangle with a tooltip and, where it fits, a label inside: a
// frame of a flame graph, a segment of a bar.
type box struct {
	x, y, w, h       float64
	fill, tip, label string
}

// writeBox writes b as a group carrying attrs (escaped already, each
// with a leading space).
func writeBox(w io.Writer, attrs string, b box) {
	fmt.Fprintf(w, `<g%s><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" rx="2"/>`,
		attrs, esc(b.tip), b.x, b.y, b.w, b.h, b.fill)
	if label := fit(b.label, b.w); label != "" {
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`, b.x+3, b.y+b.h-4, esc(label))
	}
	fmt.Fprintln(w, "</g>")
}

// fit is as much of name as a box w pixels wide shows, cut with "..", or
// "" when not even three characters fit.
func fit(name string, w float64) string {
	n := int((w - 6) / charWidth)
	switch {
	case n >= utf8.RuneCountInString(name):
		return name
	case n < 3:
		return ""
	}
	return string([]rune(name)[:n-2]) + ".."
}

// quantity is v in unit, "123 ns", or "123" without a unit.
func quantity(v int64, unit string) string {
	if unit == "" {
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprintf("%d %s", v, unit)
}

// share is part as a percentage of whole, "12.34%".
func share(part, whole int64) string {
	if whole == 0 {
		return "0.00%"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(part)/float64(whole))
}

// warm is a warm color chosen by the name, the same on every drawing.
func warm(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+v%50, 80+(v>>8)%150, (v>>16)%55)
}

// distinct is the i-th of a series of colors that tell their neighbors
// apart: hues a golden angle (137.5°) apart, lightness alternating.
func distinct(i int) string {
	hue := math.Mod(float64(i)*137.508, 360)
	light := []float64{0.55, 0.42, 0.68}[i%3]
	return hsl(hue, 0.65, light)
}

// hsl is the color of hue (degrees), saturation and lightness (0..1) as
// "rgb(R,G,B)": what every SVG viewer reads.
func hsl(hue, sat, light float64) string {
	chroma := (1 - math.Abs(2*light-1)) * sat
	second := chroma * (1 - math.Abs(math.Mod(hue/60, 2)-1))
	var r, g, b float64
	switch sector := int(hue / 60); sector {
	case 0:
		r, g = chroma, second
	case 1:
		r, g = second, chroma
	case 2:
		g, b = chroma, second
	case 3:
		g, b = second, chroma
	case 4:
		r, b = second, chroma
	default:
		r, b = chroma, second
	}
	m := light - chroma/2
	channel := func(v float64) int { return int(math.Round(255 * (v + m))) }
	return fmt.Sprintf("rgb(%d,%d,%d)", channel(r), channel(g), channel(b))
}
