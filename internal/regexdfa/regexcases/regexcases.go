// Package regexcases reads the patterns and subjects that the tests of
// package regexdfa and of the BPF code generator (whose kernel answers
// must equal Go's regexp on them) share: regexdfa/testdata/cases.txt,
// one `pattern "..."` or `subject "..."` a line (Go string literals),
// other lines ignored.
package regexcases

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Load reads the case file at path.
func Load(path string) (patterns, subjects []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		kind, q, _ := strings.Cut(line, " ")
		if kind != "pattern" && kind != "subject" {
			continue
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", line, err)
		}
		if kind == "pattern" {
			patterns = append(patterns, s)
		} else {
			subjects = append(subjects, s)
		}
	}
	return patterns, subjects, nil
}
