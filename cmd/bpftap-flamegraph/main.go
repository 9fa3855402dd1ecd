// Command bpftap-flamegraph draws a flame graph: it reads folded stacks
// ("main;work;hot 123" lines, as examples/flamegraph.stp prints them, or
// any tool that writes Brendan Gregg's folded format) from a file or
// standard input and writes an SVG on standard output (-title sets its
// title; -h prints the usage).
//
// The stacks are merged into a tree of frames, a frame's width the samples
// under it; the roots stand at the bottom, callees above their callers,
// siblings in name order (a flame graph, not a time line). Each frame
// carries a tooltip with its name, samples and share. A script inside the
// SVG (flame.js) zooms to a clicked frame and searches frames for a
// regular expression; without scripts the drawing is the same, static.
// Debian packages no flame-graph renderer (no flamegraph.pl, no inferno),
// hence this one.
package main

import (
	"bufio"
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
	var o options
	flags.StringVar(&o.title, "title", "Flame Graph", "the `TITLE` drawn above the graph")
	flags.StringVar(&o.unit, "unit", "samples", "what the values count, in tooltips (`UNIT`: ns for times)")
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
	w := bufio.NewWriter(stdout)
	if err := drawFlame(in, w, o); err != nil {
		fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "bpftap-flamegraph:", err)
		return 1
	}
	return 0
}

