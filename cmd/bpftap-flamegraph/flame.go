package main

import (
	"fmt"
	"io"
	"slices"
)

const (
	frameHeight = 16.0
	minWidth    = 0.1 // narrower frames are left out
)

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
	height := titleHeight + float64(root.depth())*frameHeight + 2*margin
	beginSVG(w, height, o.title)
	if root.value > 0 {
		g := flameGeometry{scale: (width - 2*margin) / float64(root.value), total: root.value, unit: o.unit}
		g.draw(w, root, margin, height-margin-frameHeight)
	}
	endSVG(w)
	return nil
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

// draw draws f at (x, y) and its callees above it, in name order.
func (g flameGeometry) draw(w io.Writer, f *frame, x, y float64) {
	fw := float64(f.value) * g.scale
	if fw < minWidth {
		return
	}
	writeBox(w, "", box{
		x: x, y: y, w: fw, h: frameHeight - 1,
		fill:  warm(f.name),
		tip:   fmt.Sprintf("%s (%d %s, %s)", f.name, f.value, g.unit, share(f.value, g.total)),
		label: f.name,
	})
	names := make([]string, 0, len(f.children))
	for n := range f.children {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := f.children[n]
		g.draw(w, c, x, y-frameHeight)
		x += float64(c.value) * g.scale
	}
}
