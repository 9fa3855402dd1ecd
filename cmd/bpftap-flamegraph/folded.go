package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// form is a shape of folded line a chart reads: its description for
// messages ("STACK COUNT") and how many names a line must have (0: any).
type form struct {
	describe string
	names    int
}

var (
	stackForm = form{describe: "STACK COUNT"}
	barForm   = form{describe: "THREAD;CATEGORY VALUE", names: 2}
)

// lineError is an input line that is not of the chart's form.
type lineError struct {
	line int
	text string
	form form
}

func (e *lineError) Error() string {
	return fmt.Sprintf("line %d: not %q: %q", e.line, e.form.describe, e.text)
}

// overflowError is an input whose values add up past what a count holds.
type overflowError struct{ line int }

func (e *overflowError) Error() string {
	return fmt.Sprintf("line %d: the values add up past %d", e.line, int64(math.MaxInt64))
}

// readFolded calls add with the names (split at ";") and the value of
// each line of r that has the form f: names, a space, a whole number.
// Blank lines are skipped; any other line is a *lineError, and a total
// that overflows an int64 an *overflowError.
func readFolded(r io.Reader, f form, add func(names []string, value int64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var total int64
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		names, value, ok := splitFolded(line, f)
		if !ok {
			return &lineError{line: n, text: line, form: f}
		}
		if total > math.MaxInt64-value {
			return &overflowError{line: n}
		}
		total += value
		add(names, value)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the folded input: %w", err)
	}
	return nil
}

// splitFolded is line's names and value, ok when line has the form f.
func splitFolded(line string, f form) (names []string, value int64, ok bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return nil, 0, false
	}
	value, err := strconv.ParseInt(line[i+1:], 10, 64)
	if err != nil || value < 0 {
		return nil, 0, false
	}
	names = strings.Split(strings.TrimSpace(line[:i]), ";")
	if f.names != 0 && len(names) != f.names {
		return nil, 0, false
	}
	return names, value, true
}
