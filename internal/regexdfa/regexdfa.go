// Package regexdfa compiles the pattern of a `=~` match into a
// deterministic automaton small enough to run in a BPF program: a table
// indexed by state and character class, stepped once per character of the
// subject, with no backtracking and no memory beyond the current state.
// It also checks a pattern against SystemTap's own grammar, which the
// elaborator reports as stap does (CheckStapSyntax, stapsyntax.go).
//
// # Semantics
//
// The automaton answers exactly what the interpreter answers (package
// interp: Go's regexp on "(?s)"+pattern, unanchored search), whether the
// pattern matches anywhere in the subject. Only that yes or no is
// computed, not where the match lies, so leftmost-longest and leftmost-first
// agree and captures are not tracked (matched(n) stays in user space).
// Characters are what Go's regexp reads: UTF-8 sequences decoded to runes,
// each byte of an invalid sequence one U+FFFD, as utf8.DecodeRune does.
//
// # Construction
//
// The pattern is parsed and compiled with regexp/syntax, with the flags
// regexp.Compile uses, into Go's NFA program (syntax.Prog). Its rune
// instructions divide the runes into intervals within which every
// instruction answers alike; intervals that every instruction (and, when the
// program tests them, the word-character and newline properties) treats
// alike form one class. A DFA state is a set of NFA program counters (those
// reached through Alt, Nop and Capture; zero-width assertions stay pending)
// together with what the previous character was (none yet, a newline, a
// word character, another), which is all ^, $, \b and (?m) anchors look at
// besides the next character. The transition of a state on a class
// first settles the pending assertions with the context of the previous and
// the next character (syntax.EmptyOpContext), follows the instructions that
// accept the class, and adds the program's start again: the search is
// unanchored, a match may start at every position. Reaching the program's
// Match instruction during that closure means the subject matches: the
// transition goes to the absorbing state Match. End of text is one more
// class, whose transition goes to Match or to Dead. States from which Match
// cannot be reached become Dead, so a search can stop early (after the
// first character of a failed "^abc" for instance). States are explored
// breadth first, at most MaxStates of them.
package regexdfa

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Limits of an automaton that a BPF program indexes.
const (
	// MaxStates bounds the live states (Dead and Match aside).
	MaxStates = 500
	// MaxClasses bounds the character classes, end of text included; a
	// class index doubled fits a byte.
	MaxClasses = 127
	// MaxUpper bounds the intervals of non-ASCII runes, each a comparison
	// in the program.
	MaxUpper = 16
	// MaxTable bounds the transition table in bytes (two per entry), so a
	// row offset fits 16 bits.
	MaxTable = 65535
)

// The two absorbing states.
const (
	Dead  = 0
	Match = 1
)

// DFA is a compiled pattern.
type DFA struct {
	// Classes is the number of character classes; class Classes is the end
	// of text.
	Classes int
	// ASCII is the class of each rune below 0x80.
	ASCII [utf8.RuneSelf]uint8
	// Upper are the classes of the runes from 0x80 on: consecutive
	// intervals, the last ending at unicode.MaxRune.
	Upper []Interval
	// Next holds, for state s and class c (Classes for end of text), the
	// next state at Next[s*(Classes+1)+c]. States Dead and Match lead to
	// themselves.
	Next []uint16
	// Start is the state before the subject's first character.
	Start int
}

// Interval is a run of runes, Lo to Hi inclusive, of one class.
type Interval struct {
	Lo, Hi rune
	Class  uint8
}

// States is the number of states, Dead and Match included.
func (d *DFA) States() int { return len(d.Next) / (d.Classes + 1) }

// Class is the class of rune r.
func (d *DFA) Class(r rune) int {
	if r < utf8.RuneSelf {
		return int(d.ASCII[r])
	}
	for _, iv := range d.Upper {
		if r <= iv.Hi {
			return int(iv.Class)
		}
	}
	return int(d.Upper[len(d.Upper)-1].Class)
}

// MatchString runs the automaton on s as the BPF program does: rune by
// rune, decoded as Go's regexp decodes them, until s ends or the state is
// Dead or Match.
func (d *DFA) MatchString(s string) bool {
	st, n := d.Start, d.Classes+1
	for _, r := range s {
		if st = int(d.Next[st*n+d.Class(r)]); st == Dead || st == Match {
			return st == Match
		}
	}
	return d.Next[st*n+d.Classes] == Match
}

// Error is a pattern that cannot become an automaton.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

var cache sync.Map // pattern → *result

type result struct {
	dfa *DFA
	err error
}

// Compile compiles pattern, as the interpreter does, into an automaton.
// Results are cached: the elaborator and the code generator both ask.
func Compile(pattern string) (*DFA, error) {
	if r, ok := cache.Load(pattern); ok {
		return r.(*result).dfa, r.(*result).err
	}
	d, err := compile(pattern)
	cache.Store(pattern, &result{d, err})
	return d, err
}

func compile(pattern string) (*DFA, error) {
	re, err := syntax.Parse(pattern, syntax.Perl|syntax.DotNL) // "(?s)"+pattern
	if err != nil {
		return nil, &Error{fmt.Sprintf("invalid regular expression: %v", err)}
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, &Error{fmt.Sprintf("invalid regular expression: %v", err)}
	}
	b := &builder{prog: prog, index: map[string]int{}}
	if err := b.classes(); err != nil {
		return nil, err
	}
	if err := b.states(); err != nil {
		return nil, err
	}
	return b.finish(), nil
}

// What the previous character was, as far as assertions care; the rune
// that stands for it in syntax.EmptyOpContext.
const (
	prevNone  = iota // the start of the text
	prevOther        // a character that is neither of the next two
	prevNL
	prevWord
)

var prevRune = [...]rune{prevNone: -1, prevOther: ' ', prevNL: '\n', prevWord: 'a'}

type builder struct {
	prog *syntax.Prog
	// lines and words tell whether the program tests for newlines
	// (BeginLine, EndLine) and word characters (\b, \B).
	lines, words bool
	ncls         int
	reps         []rune // a rune of each class
	ascii        [utf8.RuneSelf]uint8
	upper        []Interval
	// The states found so far: their pc sets and previous-character kinds,
	// and the index of each by key.
	sets  [][]uint32
	prevs []int
	index map[string]int
	next  [][]int // per state, per class (end last)
}

// ranges returns the runes a rune instruction accepts, as intervals whose
// bounds are all the boundaries its answer can change at.
func ranges(inst *syntax.Inst) [][2]rune {
	switch inst.Op {
	case syntax.InstRune1:
		return [][2]rune{{inst.Rune[0], inst.Rune[0]}}
	case syntax.InstRuneAny:
		return [][2]rune{{0, unicode.MaxRune}}
	case syntax.InstRuneAnyNotNL:
		return [][2]rune{{0, '\n' - 1}, {'\n' + 1, unicode.MaxRune}}
	case syntax.InstRune:
		if len(inst.Rune) == 1 {
			r0 := inst.Rune[0]
			out := [][2]rune{{r0, r0}}
			if syntax.Flags(inst.Arg)&syntax.FoldCase != 0 {
				for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
					out = append(out, [2]rune{r, r})
				}
			}
			return out
		}
		var out [][2]rune
		for i := 0; i+1 < len(inst.Rune); i += 2 {
			out = append(out, [2]rune{inst.Rune[i], inst.Rune[i+1]})
		}
		return out
	}
	return nil
}

// accepts tells whether rune instruction inst accepts r (Inst.MatchRune
// knows InstRune and InstRune1 only).
func accepts(inst *syntax.Inst, r rune) bool {
	switch inst.Op {
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return inst.MatchRune(r)
}

func isRune(op syntax.InstOp) bool {
	return op == syntax.InstRune || op == syntax.InstRune1 || op == syntax.InstRuneAny || op == syntax.InstRuneAnyNotNL
}

// classes partitions the runes into classes.
func (b *builder) classes() error {
	cuts := map[rune]bool{0: true, utf8.RuneSelf: true, unicode.MaxRune + 1: true}
	cut := func(lo, hi rune) { cuts[lo], cuts[hi+1] = true, true }
	var runeInsts []*syntax.Inst
	for i := range b.prog.Inst {
		inst := &b.prog.Inst[i]
		if isRune(inst.Op) {
			runeInsts = append(runeInsts, inst)
			for _, r := range ranges(inst) {
				cut(r[0], r[1])
			}
		}
		if inst.Op == syntax.InstEmptyWidth {
			op := syntax.EmptyOp(inst.Arg)
			b.lines = b.lines || op&(syntax.EmptyBeginLine|syntax.EmptyEndLine) != 0
			b.words = b.words || op&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0
		}
	}
	if b.lines {
		cut('\n', '\n')
	}
	if b.words {
		cut('0', '9')
		cut('A', 'Z')
		cut('_', '_')
		cut('a', 'z')
	}
	bounds := make([]rune, 0, len(cuts))
	for r := range cuts {
		bounds = append(bounds, r)
	}
	slices.Sort(bounds)
	sig := map[string]int{}
	for k := 0; k+1 < len(bounds); k++ {
		lo, hi := bounds[k], bounds[k+1]-1
		var key strings.Builder
		for _, inst := range runeInsts {
			key.WriteByte(byte('0' + b2i(accepts(inst, lo))))
		}
		key.WriteByte(byte('0' + b.prevKind(lo)))
		c, ok := sig[key.String()]
		if !ok {
			c = len(b.reps)
			if c+1 > MaxClasses {
				return &Error{fmt.Sprintf("regular expression needs more than %d character classes in a kernel probe", MaxClasses)}
			}
			sig[key.String()] = c
			b.reps = append(b.reps, lo)
		}
		if lo < utf8.RuneSelf {
			for r := lo; r <= hi; r++ {
				b.ascii[r] = uint8(c)
			}
		} else if n := len(b.upper); n > 0 && b.upper[n-1].Class == uint8(c) {
			b.upper[n-1].Hi = hi
		} else {
			b.upper = append(b.upper, Interval{lo, hi, uint8(c)})
		}
	}
	b.ncls = len(b.reps)
	if len(b.upper) > MaxUpper {
		return &Error{fmt.Sprintf("regular expression divides the non-ASCII characters into %d ranges; a kernel probe allows %d", len(b.upper), MaxUpper)}
	}
	return nil
}

// prevKind is what the assertions see of r as the previous character.
func (b *builder) prevKind(r rune) int {
	switch {
	case b.words && syntax.IsWordChar(r):
		return prevWord
	case b.lines && r == '\n':
		return prevNL
	}
	return prevOther
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// closure adds to set the pcs reachable from pc through Alt, Nop and
// Capture, and through the assertions ctx satisfies when settle is set;
// it reports whether Match was reached.
func (b *builder) closure(pc uint32, set map[uint32]bool, settle bool, ctx syntax.EmptyOp) bool {
	if set[pc] {
		return false
	}
	set[pc] = true
	inst := &b.prog.Inst[pc]
	switch inst.Op {
	case syntax.InstMatch:
		return true
	case syntax.InstAlt, syntax.InstAltMatch:
		m := b.closure(inst.Out, set, settle, ctx)
		return b.closure(inst.Arg, set, settle, ctx) || m
	case syntax.InstNop, syntax.InstCapture:
		return b.closure(inst.Out, set, settle, ctx)
	case syntax.InstEmptyWidth:
		if settle && syntax.EmptyOp(inst.Arg)&^ctx == 0 {
			return b.closure(inst.Out, set, settle, ctx)
		}
	}
	return false
}

// state returns the index of the state of pcs (a closure without
// settling) after a character of kind prev, adding it if new; -1 when that
// would pass MaxStates.
func (b *builder) state(pcs map[uint32]bool, prev int) int {
	var set []uint32
	for pc := range pcs {
		switch op := b.prog.Inst[pc].Op; {
		case isRune(op), op == syntax.InstEmptyWidth, op == syntax.InstMatch:
			set = append(set, pc)
		}
	}
	slices.Sort(set)
	key := fmt.Sprint(prev, set)
	if i, ok := b.index[key]; ok {
		return i
	}
	if len(b.sets)-2 >= MaxStates {
		return -1
	}
	b.index[key] = len(b.sets)
	b.sets = append(b.sets, set)
	b.prevs = append(b.prevs, prev)
	return len(b.sets) - 1
}

// states explores the states reachable from the start.
func (b *builder) states() error {
	b.sets, b.prevs = [][]uint32{nil, nil}, []int{prevNone, prevNone} // Dead, Match
	start := map[uint32]bool{}
	b.closure(uint32(b.prog.Start), start, false, 0)
	b.state(start, prevNone)
	for s := 2; s < len(b.sets); s++ {
		row := make([]int, b.ncls+1)
		for c := 0; c <= b.ncls; c++ {
			next := rune(-1) // end of text
			if c < b.ncls {
				next = b.reps[c]
			}
			ctx := syntax.EmptyOpContext(prevRune[b.prevs[s]], next)
			settled := map[uint32]bool{}
			matched := false
			for _, pc := range b.sets[s] {
				matched = b.closure(pc, settled, true, ctx) || matched
			}
			switch {
			case matched:
				row[c] = Match
			case c == b.ncls:
				row[c] = Dead
			default:
				after := map[uint32]bool{}
				for pc := range settled {
					if inst := &b.prog.Inst[pc]; isRune(inst.Op) && accepts(inst, next) {
						b.closure(inst.Out, after, false, 0)
					}
				}
				b.closure(uint32(b.prog.Start), after, false, 0)
				if row[c] = b.state(after, b.prevKind(next)); row[c] < 0 {
					return &Error{fmt.Sprintf("regular expression needs more than %d DFA states in a kernel probe", MaxStates)}
				}
			}
		}
		b.next = append(b.next, row)
	}
	if n := len(b.sets) * (b.ncls + 1) * 2; n > MaxTable {
		return &Error{fmt.Sprintf("regular expression needs a %d-byte DFA table in a kernel probe, more than %d", n, MaxTable)}
	}
	return nil
}

// finish turns the states that cannot reach Match into Dead and lays out
// the table.
func (b *builder) finish() *DFA {
	n := b.ncls + 1
	live := make([]bool, len(b.sets))
	live[Match] = true
	for changed := true; changed; {
		changed = false
		for s := 2; s < len(b.sets); s++ {
			if !live[s] && slices.ContainsFunc(b.next[s-2], func(t int) bool { return live[t] }) {
				live[s], changed = true, true
			}
		}
	}
	d := &DFA{Classes: b.ncls, ASCII: b.ascii, Upper: b.upper, Next: make([]uint16, len(b.sets)*n), Start: 2}
	for c := 0; c < n; c++ {
		d.Next[Match*n+c] = Match
	}
	for s := 2; s < len(b.sets); s++ {
		for c, t := range b.next[s-2] {
			if !live[t] {
				t = Dead
			}
			d.Next[s*n+c] = uint16(t)
		}
	}
	if !live[2] {
		d.Start = Dead
	}
	return d
}
