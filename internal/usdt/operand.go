package usdt

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// Arg is one argument of a marker, parsed from its text.
type Arg struct {
	// Text is the argument as the note gives it: "-4@8(%rbp)".
	Text string
	// Size is the value's width in bytes (1, 2, 4 or 8); Signed when the
	// size was negative; Float for a floating-point value ("8f@...").
	Size    int
	Signed  bool
	Float   bool
	Operand Operand
	// Err says why the argument's operand does not parse (nil: it
	// does); the marker's other arguments can still be read.
	Err error
}

// OperandKind says what an operand is.
type OperandKind uint8

const (
	// Register: the value is in Operand.Reg ("%eax").
	Register OperandKind = iota + 1
	// Immediate: the value is Operand.Disp, or the address of
	// Operand.Symbol plus Disp ("$-5", "$buf+8").
	Immediate
	// Memory: the value is in memory at Disp (plus the address of Symbol)
	// plus the base register plus the index register times Scale
	// ("-16(%rbp)", "8(%rax,%rsi,4)", "counter+4(%rip)", "table(,%rsi,4)").
	Memory
)

// Operand is an operand as the assembler of the file's architecture
// writes it: x86-64 AT&T ("-16(%rbp)") or arm64 ("[sp, 16]").
type Operand struct {
	Kind OperandKind
	// Reg is the register of a Register operand and the base register of
	// a Memory one (nil: none; RIP for sym(%rip)); Index, times Scale,
	// is a Memory operand's index register (nil: none; always on arm64).
	Reg, Index *Reg
	Scale      int
	// Disp is an Immediate's value or a Memory operand's displacement,
	// relative to Symbol's address when Symbol is set.
	Disp   int64
	Symbol string
}

// ArgError is an argument that does not parse, or that a program cannot
// read from where it is.
type ArgError struct {
	// Operand is the operand's text, without its size.
	Operand string
	// Reason says what is wrong with it.
	Reason string
}

// Error gives stap's message for an operand it cannot parse.
func (e *ArgError) Error() string {
	return fmt.Sprintf("Can't parse SDT_V3 operand '%s' [man error::sdt]", e.Operand)
}

// operandParser parses one operand of an architecture's assembler, or
// says why it cannot.
type operandParser func(string) (Operand, string)

// parsers are the operand syntaxes by the ELF machine of the file whose
// markers they are: AT&T for x86 (an i386 file's operands are the
// 64-bit registers' low parts), arm64's for AArch64.
var parsers = map[elf.Machine]operandParser{
	elf.EM_X86_64: parseOperand, elf.EM_386: parseOperand,
	elf.EM_AARCH64: parseARM64Operand,
}

// ParseArgs parses the argument string of a marker in a file for
// machine: arguments separated by spaces outside brackets (arm64's
// "-4@[sp, 36]" is one). An argument that does not parse has its Err.
func ParseArgs(text string, machine elf.Machine) []Arg {
	var args []Arg
	for _, field := range argFields(text) {
		a, err := ParseArg(field, machine)
		a.Err = err
		args = append(args, a)
	}
	return args
}

// argFields splits an argument string at the spaces outside brackets.
func argFields(text string) []string {
	depth := 0
	return strings.FieldsFunc(text, func(c rune) bool {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		}
		return c == ' ' && depth <= 0
	})
}

// ParseArg parses one argument of a marker in a file for machine,
// [-]SIZE[f]@OPERAND. Without a size (the format of old sys/sdt.h
// versions) the value is a signed long.
func ParseArg(text string, machine elf.Machine) (Arg, error) {
	a := Arg{Text: text, Size: 8, Signed: true}
	size, operand, sized := splitSize(text)
	if sized {
		a.Signed = strings.HasPrefix(size, "-")
		size = strings.TrimPrefix(size, "-")
		size, a.Float = strings.CutSuffix(size, "f")
		a.Size, _ = strconv.Atoi(size)
		if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
			return a, &ArgError{operand, fmt.Sprintf("a value of %d bytes", a.Size)}
		}
	}
	parse := parsers[machine]
	if parse == nil {
		return a, &ArgError{operand, fmt.Sprintf("bpftap reads the operands of x86-64 and arm64 markers, not of %s", machine)}
	}
	op, reason := parse(operand)
	if reason != "" {
		return a, &ArgError{operand, reason}
	}
	a.Operand = op
	return a, nil
}

// splitSize splits an argument into its size, [-]DIGITS[f], and its
// operand; sized is false when it has no size.
func splitSize(text string) (size, operand string, sized bool) {
	size, operand, ok := strings.Cut(text, "@")
	digits := strings.TrimSuffix(strings.TrimPrefix(size, "-"), "f")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", text, false
	}
	return size, operand, true
}

// operandText is the argument's operand, without its size.
func (a Arg) operandText() string {
	_, operand, _ := splitSize(a.Text)
	return operand
}

// parseOperand parses an AT&T operand, or says why it cannot.
func parseOperand(s string) (Operand, string) {
	switch {
	case s == "":
		return Operand{}, "an empty operand"
	case s[0] == '%':
		r := registers[s[1:]]
		if r == nil {
			return Operand{}, fmt.Sprintf("%s is not a general-purpose register", s)
		}
		return Operand{Kind: Register, Reg: r}, ""
	case s[0] == '$':
		disp, sym, reason := parseDisp(s[1:])
		return Operand{Kind: Immediate, Disp: disp, Symbol: sym}, reason
	}
	return parseMemory(s)
}

// parseMemory parses DISP, DISP(BASE), DISP(BASE,INDEX[,SCALE]) and
// DISP(,INDEX[,SCALE]).
func parseMemory(s string) (Operand, string) {
	op := Operand{Kind: Memory}
	dispText, inner, hasRegs := strings.Cut(s, "(")
	var reason string
	if op.Disp, op.Symbol, reason = parseDisp(dispText); reason != "" {
		return op, reason
	}
	if !hasRegs {
		return op, ""
	}
	inner, closed := strings.CutSuffix(inner, ")")
	parts := strings.Split(inner, ",")
	if !closed || len(parts) > 3 {
		return op, "an address that is not DISP(BASE,INDEX,SCALE)"
	}
	if op.Reg, reason = addressRegister(parts[0], true); reason != "" {
		return op, reason
	}
	if len(parts) > 1 {
		if op.Index, reason = addressRegister(parts[1], false); reason != "" {
			return op, reason
		}
		op.Scale = 1
	}
	if len(parts) > 2 {
		if op.Scale, reason = parseScale(parts[2]); reason != "" {
			return op, reason
		}
	}
	return op, checkAddress(op)
}

// addressRegister parses a base (%rip allowed) or index register of an
// address: empty, or a 64-bit register.
func addressRegister(s string, base bool) (*Reg, string) {
	if s == "" {
		return nil, ""
	}
	name, ok := strings.CutPrefix(s, "%")
	r := registers[name]
	if name == "rip" && base {
		r = RIP
	}
	if !ok || r == nil || r.Size != 8 || r.High {
		return nil, fmt.Sprintf("%s is not a 64-bit register", s)
	}
	return r, ""
}

func parseScale(s string) (int, string) {
	switch s {
	case "1", "2", "4", "8":
		n, _ := strconv.Atoi(s)
		return n, ""
	}
	return 0, fmt.Sprintf("scale %q is not 1, 2, 4 or 8", s)
}

// checkAddress refuses what an address cannot be: none of its parts,
// %rip without a symbol (an offset from the next instruction, which a
// marker's nop does not have).
func checkAddress(op Operand) string {
	switch {
	case op.Reg == nil && op.Index == nil && op.Symbol == "" && op.Disp == 0:
		return "an empty address"
	case op.Reg == RIP && op.Symbol == "":
		return "a %rip-relative address without a symbol"
	case op.Reg == RIP && op.Index != nil:
		return "a %rip-relative address with an index"
	}
	return ""
}

// parseDisp parses a displacement or immediate: a number (decimal, 0x
// hex, 0 octal, negative), a symbol, or SYMBOL+N, SYMBOL-N, N+SYMBOL.
func parseDisp(s string) (int64, string, string) {
	if s == "" {
		return 0, "", ""
	}
	if n, ok := parseNumber(s); ok {
		return n, "", ""
	}
	sym, num := s, ""
	if i := strings.LastIndexAny(s, "+-"); i > 0 {
		sym, num = s[:i], s[i:]
		if s[i] == '+' {
			num = s[i+1:]
		}
	}
	if n, ok := parseNumber(sym); ok && num != "" && num[0] != '-' { // N+SYMBOL
		sym, num = num, strconv.FormatInt(n, 10)
	}
	n, ok := parseNumber(num)
	if num == "" {
		n, ok = 0, true
	}
	if !ok || !isSymbol(sym) {
		return 0, "", fmt.Sprintf("%q is not a number, a symbol or SYMBOL+NUMBER", s)
	}
	return n, sym, ""
}

// parseNumber parses an integer as the assembler writes it; values past
// the int64 range wrap, as 64-bit immediates do.
func parseNumber(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return n, true
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "-"), 0, 64)
	if err != nil {
		return 0, false
	}
	if strings.HasPrefix(s, "-") {
		u = -u
	}
	return int64(u), true
}

// isSymbol tells whether s is a plain symbol name; relocation operators
// (sym@GOTPCREL, sym@tpoff) are not.
func isSymbol(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '.' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
