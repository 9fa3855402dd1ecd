// Command bpftap-flamegraph draws a flame graph: it reads folded stacks
// ("main;work;hot 123" lines, as examples/flamegraph.stp prints them, or
// any tool that writes Brendan Gregg's folded format) from a file or
// standard input and writes an SVG on standard output (-title sets its
// title; -h prints the usage).
//
// The stacks are merged into a tree of frames, a frame's width the samples
// under it; the roots stand at the bottom, callees above their callers,
// siblings in name order (a flame graph, not a time line). Each frame
// carries a tooltip with its name, samples and share. Debian packages no
// flame-graph renderer (no flamegraph.pl, no inferno), hence this one.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

const (
	width       = 1200.0 // of the drawing, in pixels
	frameHeight = 16.0
	margin      = 10.0
	titleHeight = 30.0
	minWidth    = 0.1 // narrower frames are left out
)

// frame is a node of the tree: a function and the samples in it and its
// callees along one path.
type frame struct {
	name     string
	samples  int64
	children map[string]*frame
}

const usage = `usage: bpftap-flamegraph [-title TITLE] [FILE]

Reads folded stacks ("main;work;hot 123" lines, as examples/flamegraph.stp
prints them) from FILE, or standard input without it, and writes an SVG
flame graph on standard output:

  bpftap -o prog.folded examples/flamegraph.stp -c ./prog
  bpftap-flamegraph -title prog prog.folded > prog.svg

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command on its arguments: 0 when the SVG is written, 1 on an
// input or output error, 2 on a bad command line (after the usage).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("bpftap-flamegraph", flag.ContinueOnError)
	flags.SetOutput(stderr)
	title := flags.String("title", "Flame Graph", "the `TITLE` drawn above the graph")
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), usage)
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if err == flag.ErrHelp {
			flags.SetOutput(stdout)
			flags.Usage()
			return 0
		}
		return 2
	}
	if flags.NArg() > 1 {
		fmt.Fprintf(stderr, "bpftap-flamegraph: one input file at most, not %d\n", flags.NArg())
		flags.Usage()
		return 2
	}
	in := stdin
	if flags.NArg() == 1 {
		f, err := os.Open(flags.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	root, err := parse(in)
	if err != nil {
		fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	render(w, root, *title)
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
		return 1
	}
	return 0
}

// parse reads folded stacks into a tree; a line that is not "STACK
// COUNT" is an error naming its number.
func parse(r io.Reader) (*frame, error) {
	root := &frame{name: "all"}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		count, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil || count < 0 {
			return nil, fmt.Errorf("line %d: not \"STACK COUNT\": %q", n, line)
		}
		root.add(strings.Split(line[:i], ";"), count)
	}
	return root, sc.Err()
}

// add counts samples along the path of names under f.
func (f *frame) add(names []string, samples int64) {
	f.samples += samples
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
	child.add(names[1:], samples)
}

// depth is the height of the tree under f, f included.
func (f *frame) depth() int {
	d := 0
	for _, c := range f.children {
		d = max(d, c.depth())
	}
	return d + 1
}

// render writes the SVG of the tree.
func render(w io.Writer, root *frame, title string) {
	height := titleHeight + float64(root.depth())*frameHeight + 2*margin
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Verdana, sans-serif" font-size="12">
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text x="%.0f" y="20" text-anchor="middle" font-size="17">%s</text>
`, width, height, width, height, width/2, html.EscapeString(title))
	if root.samples > 0 {
		scale := (width - 2*margin) / float64(root.samples)
		drawFrame(w, root, root.samples, margin, height-margin-frameHeight, scale)
	}
	fmt.Fprintln(w, "</svg>")
}

// drawFrame draws f at (x, y) and its callees above it, in name order.
func drawFrame(w io.Writer, f *frame, total int64, x, y, scale float64) {
	fw := float64(f.samples) * scale
	if fw < minWidth {
		return
	}
	name := html.EscapeString(f.name)
	fmt.Fprintf(w, `<g><title>%s (%d samples, %.2f%%)</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" rx="2"/>`,
		name, f.samples, 100*float64(f.samples)/float64(total), x, y, fw, frameHeight-1, color(f.name))
	if label := fit(f.name, fw); label != "" {
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`, x+3, y+frameHeight-4, html.EscapeString(label))
	}
	fmt.Fprintln(w, "</g>")
	names := make([]string, 0, len(f.children))
	for n := range f.children {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := f.children[n]
		drawFrame(w, c, total, x, y-frameHeight, scale)
		x += float64(c.samples) * scale
	}
}

// fit is as much of name as a frame fw pixels wide shows (7 pixels a
// character), cut with "..", or "" when not even three characters fit.
func fit(name string, fw float64) string {
	n := int((fw - 6) / 7)
	switch {
	case n >= len(name):
		return name
	case n < 3:
		return ""
	}
	return name[:n-2] + ".."
}

// color is a warm color chosen by the name, the same on every drawing.
func color(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+v%50, 80+(v>>8)%150, (v>>16)%55)
}
