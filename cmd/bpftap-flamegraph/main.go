// Command bpftap-flamegraph draws folded lines ("main;work;hot 123": names
// joined by ";", a space, a whole number) as an SVG: a flame graph of
// stacks (-chart flame, the default; examples/flamegraph.stp prints them,
// as does any tool that writes Brendan Gregg's folded format), or a
// stacked bar chart of "THREAD;CATEGORY VALUE" lines (-chart bars: a bar
// per thread, a segment per category). It reads a file or standard input
// and writes the SVG on standard output; -title sets its title, -unit
// names what the values count, -h prints the usage.
//
// Flame graph: the stacks are merged into a tree of frames, a frame's
// width the samples under it; the roots stand at the bottom, callees above
// their callers, siblings in name order (a flame graph, not a time line).
// Each frame carries a tooltip with its name, samples and share. A script
// inside the SVG (flame.js) zooms to a clicked frame and searches frames
// for a regular expression; without scripts the drawing is the same,
// static. Debian packages no flame-graph renderer (no flamegraph.pl, no
// inferno), hence this one.
//
// Bar chart (bars.go): threads ordered by their total, longest bar first,
// all bars on one scale; categories in the order of their totals over all
// threads, each with one color in every bar and in the legend; a
// segment's tooltip gives its value and its share of the thread's total.
//
// Both charts share the reading of folded lines (folded.go) and the
// writing of the SVG (svg.go): the document, escaping, the boxes (frames,
// segments) with their tooltips and labels, the colors.
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// options are what the command line says of the drawing.
type options struct {
	title string
	unit  string // of the values
}

// chart is a kind of drawing: how it is drawn, and its title and unit
// where the command line gives none.
type chart struct {
	draw        func(r io.Reader, w io.Writer, o options) error
	title, unit string
}

var charts = map[string]chart{
	"flame": {draw: drawFlame, title: "Flame Graph", unit: "samples"},
	"bars":  {draw: drawBars, title: "Bar Chart"},
}

const usage = `usage: bpftap-flamegraph [-chart flame|bars] [-title TITLE] [-unit UNIT] [FILE]

Reads folded lines from FILE, or standard input without it, and writes an
SVG on standard output. -chart flame (the default) draws a flame graph of
stacks ("main;work;hot 123" lines, as examples/flamegraph.stp prints them;
click a frame to zoom, Search or Ctrl-F to search):

  bpftap -o prog.folded examples/flamegraph.stp -c ./prog
  bpftap-flamegraph -title prog prog.folded > prog.svg

-chart bars draws a bar per thread, a segment per category, from
"THREAD;CATEGORY VALUE" lines ("tid 4242;read 123456"):

  bpftap-flamegraph -chart bars -unit ns -title prog threads.folded > threads.svg

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command on its arguments: 0 when the SVG is written, 1 on an
// input or output error, 2 on a bad command line (after the usage).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	kind, o, files, status := parseArgs(args, stdout, stderr)
	if status >= 0 {
		return status
	}
	in := stdin
	if len(files) == 1 {
		f, err := os.Open(files[0])
		if err != nil {
			fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	w := bufio.NewWriter(stdout)
	err := kind.draw(in, w, o)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
		return 1
	}
	return 0
}

// parseArgs reads the command line: the chart, its options and the input
// files, or the exit status when there is nothing to draw (0 after -h, 2
// after a usage error; -1 otherwise).
func parseArgs(args []string, stdout, stderr io.Writer) (kind chart, o options, files []string, status int) {
	flags := flag.NewFlagSet("bpftap-flamegraph", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {} // printed below, on the right stream
	kind = charts["flame"]
	flags.Func("chart", "the kind of `CHART`: flame (a flame graph of stacks) or bars (a bar per thread)", func(name string) error {
		c, ok := charts[name]
		if !ok {
			return errors.New("not flame or bars")
		}
		kind = c
		return nil
	})
	flags.StringVar(&o.title, "title", "", "the `TITLE` drawn above the chart (default \"Flame Graph\", or \"Bar Chart\")")
	flags.StringVar(&o.unit, "unit", "", "what the values count, for tooltips and totals (`UNIT`, e.g. ns; default samples in a flame graph, none in a bar chart)")
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, usage)
		flags.SetOutput(w)
		flags.PrintDefaults()
	}
	err := flags.Parse(args)
	switch {
	case err == flag.ErrHelp:
		printUsage(stdout)
		return kind, o, nil, 0
	case err != nil: // the flag package has said what is wrong
		printUsage(stderr)
		return kind, o, nil, 2
	case flags.NArg() > 1:
		fmt.Fprintf(stderr, "bpftap-flamegraph: one input file at most, not %d\n", flags.NArg())
		printUsage(stderr)
		return kind, o, nil, 2
	}
	o.title = cmp.Or(o.title, kind.title)
	o.unit = cmp.Or(o.unit, kind.unit)
	return kind, o, flags.Args(), -1
}
