package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// thread is one table of thread_profile.stp: a thread, its lifetime and
// its system calls, times in microseconds.
type thread struct {
	tid        int64
	start, end int64 // from the command's first system call
	lifetime   int64
	inCalls    int64 // time in system calls
	calls      int64 // how many it made
	syscalls   []syscallTime
}

// syscallTime is a row of a table: a call's time and count in the thread.
type syscallTime struct {
	name        string
	time, count int64
}

var (
	errFolded    = errors.New(`folded lines ("tid T;CALL NS", -G folded=1) carry no call counts or lifetimes: convert thread_profile.stp's tables (run it without -G folded=1)`)
	errSTaKTAU   = errors.New("STaKTAU's tables (-G staktau=1) carry no call counts or lifetimes: convert thread_profile.stp's own tables (run it without -G staktau=1)")
	errNotTables = errors.New("not a line of thread_profile.stp's tables (with -o FILE, the command's own output stays out of them)")
	errNoThreads = errors.New("no thread tables in the input (examples/thread_profile.stp's output)")
	errCounts    = errors.New("the calls of its rows do not add up to its total (is the table cut?)")
)

// lineError is an error at a line of the input.
type lineError struct {
	line int
	text string
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v: %q", e.line, e.err, e.text) }
func (e *lineError) Unwrap() error { return e.err }

// The lines of a table, in order: the thread, its lifetime, its time in
// system calls, the column names, then a row per call. Numbers have few
// enough digits to fit an int64 in microseconds (12 digits of ms: 31
// years).
var (
	tidLine    = regexp.MustCompile(`^----- TID (\d{1,10}) -----$`)
	headLines  = []*regexp.Regexp{lifetimeLine, totalLine, columnsLine}
	rowLine    = regexp.MustCompile(`^(\S+) +(\d{1,12}\.\d{3}) ms +(\d{1,15}) +\S+$`)
	foldedLine = regexp.MustCompile(`^tid \d+;\S+ \d+$`)

	lifetimeLine = regexp.MustCompile(`^lifetime +\+(\d{1,12}\.\d{3}) ms to \+(\d{1,12}\.\d{3}) ms: (\d{1,12}\.\d{3}) ms$`)
	totalLine    = regexp.MustCompile(`^system calls +(\d{1,12}\.\d{3}) ms in (\d{1,15}) calls: \S+ % of the lifetime$`)
	columnsLine  = regexp.MustCompile(`^call +time +calls +% lifetime$`)
)

// readTables reads thread_profile.stp's tables, a thread each, in order.
func readTables(r io.Reader) ([]thread, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var threads []thread
	for i := 0; i < len(lines); {
		th, next, err := readTable(lines, i)
		if err != nil {
			return nil, err
		}
		threads = append(threads, th)
		i = next
	}
	if len(threads) == 0 {
		return nil, errNoThreads
	}
	return threads, nil
}

// readTable reads the table that starts at lines[i] and returns it and
// the index of the line after it.
func readTable(lines []string, i int) (thread, int, error) {
	m := tidLine.FindStringSubmatch(lines[i])
	if m == nil {
		return thread{}, 0, &lineError{i + 1, lines[i], unexpected(lines[i])}
	}
	th := thread{tid: atoi(m[1])}
	for k, want := range headLines {
		j := i + 1 + k
		text := "(the end of the input)"
		if j < len(lines) {
			text = lines[j]
		}
		m := want.FindStringSubmatch(text)
		switch {
		case m == nil:
			return thread{}, 0, &lineError{j + 1, text, unexpected(text)}
		case want == lifetimeLine:
			th.start, th.end, th.lifetime = micros(m[1]), micros(m[2]), micros(m[3])
		case want == totalLine:
			th.inCalls, th.calls = micros(m[1]), atoi(m[2])
		}
	}
	j := i + 1 + len(headLines)
	for ; j < len(lines) && !tidLine.MatchString(lines[j]); j++ {
		row, err := readRow(lines[j], j+1)
		if err != nil {
			return thread{}, 0, err
		}
		th.syscalls = append(th.syscalls, row)
	}
	return th, j, checkCounts(th)
}

// readRow reads the row of a call, line n of the input.
func readRow(text string, n int) (syscallTime, error) {
	m := rowLine.FindStringSubmatch(text)
	if m == nil {
		return syscallTime{}, &lineError{n, text, unexpected(text)}
	}
	if strings.ContainsRune(m[1], '"') { // TAU's names are quoted
		return syscallTime{}, &lineError{n, text, errNotTables}
	}
	return syscallTime{name: m[1], time: micros(m[2]), count: atoi(m[3])}, nil
}

// checkCounts tells whether th's rows count the calls its head does.
func checkCounts(th thread) error {
	sum := int64(0)
	for _, s := range th.syscalls {
		sum += s.count
	}
	if sum != th.calls {
		return fmt.Errorf("TID %d: %w: %d calls in its rows, %d in its head", th.tid, errCounts, sum, th.calls)
	}
	return nil
}

// unexpected says what an unexpected line is: another form of
// thread_profile.stp's output, or none of its lines.
func unexpected(text string) error {
	switch {
	case foldedLine.MatchString(text):
		return errFolded
	case text == "call | time":
		return errSTaKTAU
	}
	return errNotTables
}

// micros is a number of milliseconds with three decimals ("12.345") as
// microseconds; the regular expressions have checked its form.
func micros(ms string) int64 {
	whole, frac, _ := strings.Cut(ms, ".")
	return atoi(whole)*1000 + atoi(frac)
}

// atoi is a string of digits as a number; the regular expressions have
// checked it has few enough to fit.
func atoi(digits string) int64 {
	v, _ := strconv.ParseInt(digits, 10, 64)
	return v
}
