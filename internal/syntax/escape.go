package syntax

import "strings"

// decodeEscapes turns stap's string token content into the string's value:
// the C escapes the lexer kept (\a \b \t \n \v \f \r \\, \x hex, octal) are
// resolved; anything else stands for itself.
func decodeEscapes(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 == len(raw) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := raw[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(raw) && isHex(raw[i+1]) {
				i++
				v = v*16 + hexVal(raw[i])
				n++
			}
			if n == 0 {
				b.WriteString("\\x")
				continue
			}
			b.WriteByte(byte(v))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for n := 1; n < 3 && i+1 < len(raw) && raw[i+1] >= '0' && raw[i+1] <= '7'; n++ {
				i++
				v = v*8 + int(raw[i]-'0')
			}
			b.WriteByte(byte(v))
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool { return isDigit(int(c)) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// encodeEscapes spells a string value the way stap's lexer would keep it, for
// literals that were not read from a source.
func encodeEscapes(value string) string {
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteByte('\\')
				b.WriteByte('0' + c>>6&7)
				b.WriteByte('0' + c>>3&7)
				b.WriteByte('0' + c&7)
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}
