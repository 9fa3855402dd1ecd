package interp

import (
	"math"
	"math/big"
	"strings"
)

// The fp_* functions of stap's floating-point tapset: a long holds the
// bits of an IEEE-754 double (binary64). stap computes them with Berkeley
// SoftFloat, whose default rounding is round-to-nearest-even, as Go's
// float64 arithmetic is; so Go computes the same bits. Where SoftFloat's
// x86 flavour picks a NaN, so does fpResult: the NaN of an operand, made
// quiet, else the default NaN. string_to_fp and fp_to_string follow the
// steps of stap's runtime (a decimal read digit by digit into a double; a
// double written digit by digit), not strconv's, so that their roundings
// match stap's.
var fpBuiltins = map[string]builtinFunc{
	"fp_add": fpBinary(func(a, b float64) float64 { return a + b }),
	"fp_sub": fpBinary(func(a, b float64) float64 { return a - b }),
	"fp_mul": fpBinary(func(a, b float64) float64 { return a * b }),
	"fp_div": fpBinary(func(a, b float64) float64 { return a / b }),
	"fp_rem": fpBinary(math.Remainder),
	"fp_sqrt": func(_ *callContext, a []Value) Value {
		return long(fpResult(math.Sqrt(fpOf(a[0])), a[0]))
	},
	"fp_eq": fpCompare(func(a, b float64) bool { return a == b }),
	"fp_le": fpCompare(func(a, b float64) bool { return a <= b }),
	"fp_lt": fpCompare(func(a, b float64) bool { return a < b }),
	"long_to_fp": func(_ *callContext, a []Value) Value {
		return long(int64(math.Float64bits(float64(a[0].Int))))
	},
	"fp32_to_fp64": func(_ *callContext, a []Value) Value {
		f := float64(math.Float32frombits(uint32(a[0].Int)))
		return long(int64(math.Float64bits(f)))
	},
	"fp_to_long": func(_ *callContext, a []Value) Value {
		return long(fpToLong(fpOf(a[0]), a[1].Int))
	},
	"fp_to_string": func(_ *callContext, a []Value) Value {
		return str(fpToString(fpOf(a[0]), a[1].Int))
	},
	"string_to_fp": func(cc *callContext, a []Value) Value {
		f, ok := stringToFP(a[0].Str)
		if !ok {
			cc.fail("invalid format")
		}
		return long(int64(math.Float64bits(f)))
	},
}

// fpDefaultNaN is SoftFloat's default NaN on x86 (defaultNaNF64UI).
const fpDefaultNaN int64 = -1 << 51 // 0xFFF8000000000000

// fpQuiet is the quiet-NaN bit of a double.
const fpQuiet = 1 << 51

func fpOf(v Value) float64 { return math.Float64frombits(uint64(v.Int)) }

// fpResult is the bits of r, an operation's result on operands: a NaN
// result is the first NaN operand made quiet, or the default NaN.
func fpResult(r float64, operands ...Value) int64 {
	if !math.IsNaN(r) {
		return int64(math.Float64bits(r))
	}
	for _, o := range operands {
		if math.IsNaN(fpOf(o)) {
			return o.Int | fpQuiet
		}
	}
	return fpDefaultNaN
}

func fpBinary(op func(a, b float64) float64) builtinFunc {
	return func(_ *callContext, a []Value) Value {
		return long(fpResult(op(fpOf(a[0]), fpOf(a[1])), a[0], a[1]))
	}
}

func fpCompare(op func(a, b float64) bool) builtinFunc {
	return func(_ *callContext, a []Value) Value { return boolean(op(fpOf(a[0]), fpOf(a[1]))) }
}

// fpToLong is SoftFloat's f64_to_i64 in rounding mode mode: 0 to nearest
// (ties to even), 1 toward zero, 2 down, 3 up, 4 to nearest (ties away),
// 6 to odd; other modes truncate, as SoftFloat does. A NaN gives 0, a value
// out of range the end of the range on its side.
func fpToLong(f float64, mode int64) int64 {
	if math.IsNaN(f) {
		return 0
	}
	var r float64
	switch mode {
	case 0:
		r = math.RoundToEven(f)
	case 2:
		r = math.Floor(f)
	case 3:
		r = math.Ceil(f)
	case 4:
		r = math.Round(f)
	default:
		r = math.Trunc(f)
	}
	switch {
	case r >= 1<<63:
		return math.MaxInt64
	case r < -(1 << 63):
		return math.MinInt64
	}
	n := int64(r)
	if mode == 6 && r != f && n%2 == 0 {
		// to odd: the odd neighbour away from zero
		n += int64(math.Copysign(1, f))
	}
	return n
}

// fpToString writes f as stap's fp_to_string does: its integer part, a
// point, and max(precision, 1) digits of its fraction, the last of them
// rounded half up by the digit after it (a carry ripples to the left,
// where stap's runtime would print "10" for the last digit). The digits
// are exact: a double's fraction is a finite binary fraction.
func fpToString(f float64, precision int64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	digits := int(max(precision, 1))
	exact := new(big.Rat).SetFloat64(math.Abs(f))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits+1)), nil)
	// scaled: |f| with digits+1 fraction digits, truncated
	scaled := new(big.Int).Quo(new(big.Int).Mul(exact.Num(), scale), exact.Denom())
	next := new(big.Int)
	scaled.QuoRem(scaled, big.NewInt(10), next)
	if next.Int64() >= 5 {
		scaled.Add(scaled, big.NewInt(1))
	}
	text := scaled.String()
	if len(text) <= digits {
		text = strings.Repeat("0", digits-len(text)+1) + text
	}
	point := len(text) - digits
	sign := ""
	if math.Signbit(f) {
		sign = "-"
	}
	return sign + text[:point] + "." + text[point:]
}

// stringToFP reads s as stap's string_to_fp does: an optional sign,
// digits with an optional point, an optional exponent; the digits make an
// integer value, and the result is value / 10^(fraction digits), the
// power built by a multiplication (or division, for a positive exponent)
// by ten per exponent step. ok is false for anything else after the
// number. (An exponent stops counting once the power is 0 or infinite,
// which further steps would not change.)
func stringToFP(s string) (f float64, ok bool) {
	sign := 1.0
	if strings.HasPrefix(s, "-") {
		sign = -1
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	value, power := 0.0, 1.0
	s = fpDigits(s, func(d float64) { value = value*10 + d })
	s = strings.TrimPrefix(s, ".")
	s = fpDigits(s, func(d float64) { value = value*10 + d; power *= 10 })
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		negative := strings.HasPrefix(s, "-")
		if s != "" && (s[0] == '-' || s[0] == '+') {
			s = s[1:]
		}
		exponent := 0.0
		s = fpDigits(s, func(d float64) { exponent = exponent*10 + d })
		// a power gone to 0 or infinity stays there: stop early
		for ; exponent != 0 && power != 0 && !math.IsInf(power, 0); exponent-- {
			if negative {
				power *= 10
			} else {
				power /= 10
			}
		}
	}
	return sign * (value / power), s == ""
}

// fpDigits calls digit with each leading decimal digit of s and returns
// the rest.
func fpDigits(s string, digit func(float64)) string {
	for s != "" && s[0] >= '0' && s[0] <= '9' {
		digit(float64(s[0] - '0'))
		s = s[1:]
	}
	return s
}
