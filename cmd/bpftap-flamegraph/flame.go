package main

import (
	_ "embed"
	"fmt"
	"io"
	"slices"
)

const (
	frameHeight  = 16.0
	footerHeight = 20.0 // the line that names the frame under the mouse
	minWidth     = 0.1  // narrower frames are left out
)

// flameScript zooms and searches the drawing (see its comment).
//
//go:embed flame.js
var flameScript string

// frame is a node of the tree: a function and the value (samples) in it
// and its callees along one path.
type frame struct {
	name     string
	value    int64
	children map[string]*frame
}

// drawFlame reads folded stacks from r and writes their flame graph to w.
func drawFlame(r io.Reader, w io.Writer, o options) error {
	root := &frame{name: "all"}
	if err := readFolded(r, stackForm, root.add); err != nil {
		return err
	}
	height := titleHeight + float64(root.depth())*frameHeight + footerHeight + 2*margin
	beginSVG(w, height, o.title)
	writeControls(w, height)
	fmt.Fprintf(w, "<g id=\"frames\" data-x=\"%.0f\" data-width=\"%.0f\" data-unit=\"%s\">\n", margin, width-2*margin, esc(o.unit))
	if root.value > 0 {
		g := flameGeometry{scale: (width - 2*margin) / float64(root.value), total: root.value, unit: o.unit}
		g.draw(w, root, place{x: margin, y: height - margin - footerHeight - frameHeight})
	}
	fmt.Fprintf(w, "</g>\n<script><![CDATA[\n%s]]></script>\n", flameScript)
	endSVG(w)
	return nil
}

// writeControls writes what the script shows: the buttons (hidden until
// it runs), the line naming the frame under the mouse and the search's
// result, and the look of frames that take clicks.
func writeControls(w io.Writer, height float64) {
	fmt.Fprintf(w, `<style>.interactive g.frame, .control { cursor: pointer } .interactive g.frame:hover rect { stroke: #000; stroke-width: 0.5 }</style>
<text id="reset-zoom" class="control" x="%.0f" y="20" visibility="hidden">Reset zoom</text>
<text id="search" class="control" x="%.0f" y="20" text-anchor="end" visibility="hidden">Search</text>
<text id="details" x="%.0f" y="%.0f"></text>
<text id="matched" x="%.0f" y="%.0f" text-anchor="end"></text>
`, margin, width-margin, margin, height-margin-4, width-margin, height-margin-4)
}

// add counts value along the path of names under f.
func (f *frame) add(names []string, value int64) {
	f.value += value
	if len(names) == 0 {
		return
	}
	if f.children == nil {
		f.children = map[string]*frame{}
	}
	child := f.children[names[0]]
	if child == nil {
		child = &frame{name: names[0]}
		f.children[names[0]] = child
	}
	child.add(names[1:], value)
}

// depth is the height of the tree under f, f included.
func (f *frame) depth() int {
	d := 0
	for _, c := range f.children {
		d = max(d, c.depth())
	}
	return d + 1
}

// flameGeometry is how values become pixels: scale pixels a unit, and the
// total that shares are of.
type flameGeometry struct {
	scale float64
	total int64
	unit  string
}

// place is where a frame is drawn: its left and top in pixels, its depth
// (the root's is 0) and its start, the values left of it.
type place struct {
	x, y  float64
	depth int
	start int64
}

// draw draws f at p and its callees above it, in name order. Each frame
// carries what the script needs to redraw it: name, depth, start, value.
func (g flameGeometry) draw(w io.Writer, f *frame, p place) {
	fw := float64(f.value) * g.scale
	if fw < minWidth {
		return
	}
	attrs := fmt.Sprintf(` class="frame" data-name="%s" data-depth="%d" data-start="%d" data-value="%d"`, esc(f.name), p.depth, p.start, f.value)
	writeBox(w, attrs, box{
		x: p.x, y: p.y, w: fw, h: frameHeight - 1,
		fill:  warm(f.name),
		tip:   fmt.Sprintf("%s (%s, %s)", f.name, quantity(f.value, g.unit), share(f.value, g.total)),
		label: f.name,
	})
	names := make([]string, 0, len(f.children))
	for n := range f.children {
		names = append(names, n)
	}
	slices.Sort(names)
	callee := place{x: p.x, y: p.y - frameHeight, depth: p.depth + 1, start: p.start}
	for _, n := range names {
		c := f.children[n]
		g.draw(w, c, callee)
		callee.x += float64(c.value) * g.scale
		callee.start += c.value
	}
}
