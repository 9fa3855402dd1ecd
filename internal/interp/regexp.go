package interp

import (
	"fmt"
	"regexp"

	"github.com/bpftap/bpftap/internal/syntax"
)

// regexpProg is a compiled `=~` pattern. stap's regular expressions are POSIX
// EREs matched leftmost-longest anywhere in the string, where '.' matches any
// byte but NUL (a newline too); Go's engine in longest mode with (?s) does the same.
type regexpProg struct {
	re *regexp.Regexp
}

func (in *Interp) compileRegexp(n *syntax.Binary) error {
	lit, ok := n.Y.(*syntax.StringLit)
	if !ok {
		return fmt.Errorf("%s: regular expression must be a literal string", n.Pos)
	}
	re, err := regexp.Compile("(?s)" + lit.Value)
	if err != nil {
		return fmt.Errorf("%s: invalid regex: %w", lit.Pos, err)
	}
	re.Longest()
	in.regexps[n] = &regexpProg{re: re}
	return nil
}

// matchState is the last match, which matched() and ngroups() read.
type matchState struct {
	ok      bool
	subject string
	groups  []int // start/end pairs, -1 for groups that did not take part
}

func (in *Interp) regexpMatch(e *syntax.Binary) int64 {
	subject := in.evalStr(e.X)
	prog := in.regexps[e]
	loc := prog.re.FindStringSubmatchIndex(subject)
	in.match = matchState{ok: loc != nil, subject: subject, groups: loc}
	if loc == nil {
		in.match.groups = make([]int, 2*(prog.re.NumSubexp()+1))
	}
	matched := loc != nil
	if e.Op == "!~" {
		matched = !matched
	}
	return b2i(matched)
}

// group is matched(n): the text of subexpression n of the last match.
func (m *matchState) group(cc *callContext, n int64) string {
	if !m.ok {
		cc.fail(fmt.Sprintf("Attempted to get subexpression %d from failed match", n))
	}
	if n < 0 || 2*n+1 >= int64(len(m.groups)) {
		cc.fail(fmt.Sprintf("Attempted to get nonexistent subexpression %d", n))
	}
	start, end := m.groups[2*n], m.groups[2*n+1]
	if start < 0 || end < 0 {
		return ""
	}
	return m.subject[start:end]
}

// count is ngroups(): the number of subexpressions, the whole match included.
func (m *matchState) count(cc *callContext) int64 {
	if !m.ok {
		cc.fail("Attempted to get subexpression count from failed match")
	}
	return int64(len(m.groups) / 2)
}
