// Command bpftap-tau turns the tables of examples/thread_profile.stp into
// TAU's profile files, which ParaProf and pprof read: one file a thread,
// profile.0.0.N (node 0, context 0, thread N, numbered in the order the
// tables come: the order of each thread's first event).
//
// The tables give, per thread, its lifetime, its time in system calls and
// each call's time and count (milliseconds to the microsecond). Each file
// is TAU's text profile of one metric, TIME, in microseconds: the line
// "N templated_functions_MULTI_TIME", the column header
// "# Name Calls Subrs Excl Incl ProfileCalls" followed by a metadata block
// (the thread's TID and lifetime), then a line per timer:
//
//	".TAU application" 1 CALLS LIFETIME-SYSCALLS LIFETIME 0 GROUP="TAU_DEFAULT"
//	"futex" 1990 0 598210 598210 0 GROUP="SYSCALL"
//
// a synthetic ".TAU application" timer, as TAU's own measurement has, that
// spans the thread's lifetime and calls every system call (its Subrs), so
// that its exclusive time is the time outside system calls; and a timer
// per call, with no callees (exclusive = inclusive). Then "0 aggregates";
// no user events, whose lines TAU too leaves out when it has none.
//
// The folded form (-G folded=1) is not read: it has neither the counts nor
// the lifetimes a TAU profile needs.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const usage = `usage: bpftap-tau [-d DIR] [FILE]

Reads the tables of examples/thread_profile.stp from FILE, or standard input
without it, and writes TAU's profile files, profile.0.0.N for the N-th
thread, into DIR (the current directory without -d), for ParaProf and pprof:

  bpftap -o omp.prof examples/thread_profile.stp -c ./omp_prog
  bpftap-tau -d omp.tau omp.prof
  cd omp.tau && pprof        # or: paraprof omp.tau

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command on its arguments: 0 when the files are written, 1 on
// an input or output error, 2 on a bad command line (after the usage).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("bpftap-tau", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("d", ".", "the `DIR`ectory to write the profile files into (made if missing)")
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), usage)
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(stdout)
			flags.Usage()
			return 0
		}
		return 2
	}
	if flags.NArg() > 1 {
		fmt.Fprintf(stderr, "bpftap-tau: one input file at most, not %d\n", flags.NArg())
		flags.Usage()
		return 2
	}
	if err := convert(flags.Args(), *dir, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "bpftap-tau:", err)
		return 1
	}
	return 0
}

// convert reads the tables from the file named in args (stdin without one)
// and writes a profile a thread into dir, naming each file and its thread
// on stdout.
func convert(args []string, dir string, stdin io.Reader, stdout io.Writer) error {
	in := stdin
	if len(args) == 1 {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	threads, err := readTables(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for n, th := range threads {
		name := fmt.Sprintf("profile.0.0.%d", n)
		if err := writeFile(filepath.Join(dir, name), th); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: TID %d\n", name, th.tid)
	}
	return nil
}

// writeFile writes th's profile to path.
func writeFile(path string, th thread) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	writeProfile(w, th)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
