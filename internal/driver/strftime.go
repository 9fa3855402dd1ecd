package driver

import (
	"fmt"
	"strings"
	"time"
)

// strftime expands the conversions of C's strftime(3) in format for t,
// which staprun applies to -o FILE (stap(1): "This supports strftime(3)
// formats for FILE") each time it opens a file. Those of the C locale are
// known; any other is left as written.
func strftime(format string, t time.Time) string {
	if !strings.Contains(format, "%") {
		return format
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		if s, ok := conversion(format[i], t); ok {
			b.WriteString(s)
		} else {
			b.WriteString(format[i-1 : i+1])
		}
	}
	return b.String()
}

// conversion is the text of %c for t.
func conversion(c byte, t time.Time) (string, bool) {
	layouts := map[byte]string{
		'a': "Mon", 'A': "Monday", 'b': "Jan", 'h': "Jan", 'B': "January", 'd': "02", 'e': "_2",
		'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'S': "05", 'y': "06", 'Y': "2006",
		'Z': "MST", 'z': "-0700", 'F': "2006-01-02", 'T': "15:04:05", 'D': "01/02/06", 'R': "15:04",
		'c': "Mon Jan _2 15:04:05 2006", 'x': "01/02/06", 'X': "15:04:05",
	}
	if l, ok := layouts[c]; ok {
		return t.Format(l), true
	}
	switch c {
	case '%':
		return "%", true
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay()), true
	case 's':
		return fmt.Sprint(t.Unix()), true
	case 'u':
		return fmt.Sprint((int(t.Weekday())+6)%7 + 1), true
	case 'w':
		return fmt.Sprint(int(t.Weekday())), true
	case 'n':
		return "\n", true
	case 't':
		return "\t", true
	}
	return "", false
}
