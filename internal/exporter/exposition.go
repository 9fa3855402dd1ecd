package exporter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// /metrics serves several scripts' expositions as one. The text format
// (version 0.0.4) wants each metric family once, its HELP and TYPE lines
// before its samples and all its samples together, and each series once:
// pasting two answers together breaks that as soon as they share a family.
// So each script's answer is parsed into its families (parseExposition),
// and the families are merged (merged.add): a family two scripts serve is
// written once, with the samples of both, when they agree on its type and
// help and serve no series twice. A script whose answer does not parse, or
// clashes with what is merged already, is left out whole (the caller says
// so in bpftap_script_up): Prometheus fails a whole scrape on one bad line,
// and takes a family split in two, or a series twice, for whatever its
// parser makes of them.

// A family is one metric family of an exposition: its HELP and TYPE lines
// and its samples, in the order served.
type family struct {
	name    string
	help    string // the HELP line's text as served (escaped)
	hasHelp bool
	typ     string // the TYPE line's type; "" without one (untyped)
	from    string // the script that served it first; "" for the exporter's own
	samples []sample
}

// A sample is one line of a family.
type sample struct {
	name   string // its metric name: NAME_bucket of a histogram NAME
	series string // its metric name and labels, sorted: the series it is a value of
	line   string
}

// claims are the metric names f's samples may have: the family's name,
// and a histogram's or summary's suffixed names.
func (f *family) claims() []string {
	names := []string{f.name}
	for _, suffix := range familySuffixes[f.typ] {
		names = append(names, f.name+suffix)
	}
	return names
}

var familySuffixes = map[string][]string{
	"histogram": {"_bucket", "_sum", "_count"},
	"summary":   {"_sum", "_count"},
}

var metricTypes = []string{"counter", "gauge", "histogram", "summary", "untyped"}

// A syntaxError says where a script's answer is not in the text format.
type syntaxError struct {
	line int
	what string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("its answer is not in Prometheus's text format: line %d: %s", e.line, e.what)
}

// parseExposition parses a prometheus probe's answer into its families, in
// the order of their first line. It refuses what Prometheus's parser
// refuses (a scrape of /metrics with such a line would fail whole) and the
// ambiguities it lets through: a second HELP or TYPE line for a family, a
// TYPE after the family's samples, a label twice.
func parseExposition(text string) ([]*family, error) {
	if !utf8.ValidString(text) {
		return nil, &syntaxError{line: 1 + strings.Count(text[:invalidUTF8(text)], "\n"), what: "not UTF-8"}
	}
	p := &expositionParser{byName: map[string]*family{}}
	for i, line := range strings.Split(text, "\n") {
		if err := p.line(strings.Trim(line, " \t")); err != "" {
			return nil, &syntaxError{line: i + 1, what: err}
		}
	}
	return p.families, nil
}

// invalidUTF8 is the offset of the first byte of s that is not UTF-8.
func invalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(s)
}

type expositionParser struct {
	families []*family
	byName   map[string]*family
	labels   []string // a sample's, reused
}

func (p *expositionParser) family(name string) *family {
	f := p.byName[name]
	if f == nil {
		f = &family{name: name}
		p.byName[name] = f
		p.families = append(p.families, f)
	}
	return f
}

// line parses one line, blanks around it trimmed; it returns what is wrong
// with it, "" if nothing.
func (p *expositionParser) line(line string) string {
	switch {
	case line == "":
		return ""
	case line[0] == '#':
		return p.comment(strings.TrimLeft(line[1:], " \t"))
	}
	s, err := p.sample(line)
	if err != "" {
		return err
	}
	f := p.family(p.familyOf(s.name))
	f.samples = append(f.samples, s)
	return ""
}

// comment parses a HELP or TYPE line (after its '#'); other comments are
// dropped.
func (p *expositionParser) comment(c string) string {
	keyword, rest := cutBlank(c)
	if keyword != "HELP" && keyword != "TYPE" {
		return ""
	}
	name, text := cutBlank(rest)
	if !isMetricName(name) {
		return keyword + " line without a valid metric name"
	}
	f := p.family(name)
	if keyword == "HELP" {
		if f.hasHelp {
			return "a second HELP line for " + name
		}
		f.help, f.hasHelp = text, true
		return ""
	}
	if f.typ != "" || len(f.samples) > 0 {
		return "a second TYPE line for " + name + ", or one after its samples"
	}
	if !slices.Contains(metricTypes, text) {
		return "TYPE " + name + " is not one of " + strings.Join(metricTypes, ", ")
	}
	f.typ = text
	return ""
}

// familyOf is the family of a sample named name: a histogram's or
// summary's whose TYPE came before, else its own.
func (p *expositionParser) familyOf(name string) string {
	for typ, suffixes := range familySuffixes {
		for _, suffix := range suffixes {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				if f := p.byName[base]; f != nil && f.typ == typ {
					return base
				}
			}
		}
	}
	return name
}

// sample parses a sample line: NAME{LABEL="VALUE",...} VALUE [TIMESTAMP].
func (p *expositionParser) sample(line string) (sample, string) {
	n := metricNameLen(line)
	if n == 0 {
		return sample{}, "expected a metric name"
	}
	s := sample{name: line[:n], line: line}
	rest := line[n:]
	labels := p.labels[:0]
	if strings.HasPrefix(rest, "{") {
		var err string
		labels, rest, err = parseLabels(rest[1:], labels)
		if err != "" {
			return s, err
		}
	}
	p.labels = labels
	s.series = seriesKey(line, s.name, labels)
	fields := strings.FieldsFunc(rest, isBlank)
	if len(fields) == 0 || len(fields) > 2 || rest == strings.TrimLeft(rest, " \t") {
		return s, "expected a blank, a value and at most a timestamp after the metric"
	}
	if _, err := strconv.ParseFloat(fields[0], 64); err != nil || strings.ContainsAny(fields[0], "pP_") {
		return s, "the value is not a number"
	}
	if len(fields) == 2 {
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			return s, "the timestamp is not an integer"
		}
	}
	return s, ""
}

// seriesKey is the series of a sample: its name, and its labels sorted
// between braces (the name alone without labels). A line whose labels are
// written so already is its own key (a 20,000-line answer makes no
// 20,000 strings more).
func seriesKey(line, name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	slices.Sort(labels)
	written := line[len(name):]
	for i, l := range labels {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		if !strings.HasPrefix(written, sep) || !strings.HasPrefix(written[1:], l) {
			return name + "{" + strings.Join(labels, ",") + "}"
		}
		written = written[1+len(l):]
	}
	if !strings.HasPrefix(written, "}") {
		return name + "{" + strings.Join(labels, ",") + "}"
	}
	return line[:len(line)-len(written)+1]
}

// parseLabels parses the labels after a '{' up to its '}', appends them to
// labels as NAME="VALUE" (the value as served, escaped), and returns them
// and what follows.
func parseLabels(s string, labels []string) ([]string, string, string) {
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], ""
		}
		n := labelNameLen(s)
		name := s[:n]
		if n == 0 || name == "__name__" {
			return nil, "", "expected a label name"
		}
		if hasLabel(labels, name) {
			return nil, "", "label " + name + " twice"
		}
		label := s
		s = strings.TrimLeft(s[n:], " \t")
		if !strings.HasPrefix(s, "=") {
			return nil, "", "expected '=' after a label name"
		}
		s = strings.TrimLeft(s[1:], " \t")
		v := quotedLen(s)
		if v == 0 {
			return nil, "", "expected a label value in double quotes"
		}
		if len(label)-len(s) == n+1 { // name="value", as it is written
			labels = append(labels, label[:n+1+v])
		} else {
			labels = append(labels, name+"="+s[:v])
		}
		s = strings.TrimLeft(s[v:], " \t")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case !strings.HasPrefix(s, "}"):
			return nil, "", "expected ',' or '}' after a label"
		}
	}
}

// hasLabel tells whether labels, NAME="VALUE" each, have one named name.
func hasLabel(labels []string, name string) bool {
	for _, l := range labels {
		if len(l) > len(name) && l[len(name)] == '=' && l[:len(name)] == name {
			return true
		}
	}
	return false
}

// quotedLen is the length of the quoted string s starts with, quotes
// included, 0 if it starts with none.
func quotedLen(s string) int {
	if !strings.HasPrefix(s, `"`) {
		return 0
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return 0
}

func metricNameLen(s string) int {
	return nameLen(s, func(c byte) bool { return c == ':' || isLabelByte(c) })
}

func labelNameLen(s string) int { return nameLen(s, isLabelByte) }

// nameLen is the length of the name s starts with: bytes that pass ok,
// the first not a digit.
func nameLen(s string, ok func(byte) bool) int {
	n := 0
	for n < len(s) && ok(s[n]) && (n > 0 || s[n] < '0' || s[n] > '9') {
		n++
	}
	return n
}

func isLabelByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isMetricName(s string) bool { return s != "" && metricNameLen(s) == len(s) }

func isBlank(r rune) bool { return r == ' ' || r == '\t' }

// cutBlank cuts s at its first run of blanks.
func cutBlank(s string) (string, string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// A conflictError is why a script's families stay out of /metrics: they
// clash with families already merged, or among themselves.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

func conflict(format string, args ...any) error {
	return &conflictError{msg: fmt.Sprintf(format, args...)}
}

// merged is the exposition of /metrics, built one script at a time.
type merged struct {
	families []*family
	byName   map[string]*family
	owner    map[string]*family // a metric name → the family it is a sample name of
	servedBy map[string]string  // a series → the script that served it
}

func newMerged() *merged {
	return &merged{byName: map[string]*family{}, owner: map[string]*family{}, servedBy: map[string]string{}}
}

// addText merges script's answer, text: all its families or, when it does
// not parse (syntaxError) or clashes with what is merged (conflictError),
// none.
func (m *merged) addText(script, text string) error {
	fams, err := parseExposition(text)
	if err != nil {
		return err
	}
	return m.add(script, fams)
}

// add merges the families of script, all of them or, when they clash,
// none (the conflictError says how).
func (m *merged) add(script string, fams []*family) error {
	if err := m.check(fams); err != nil {
		return err
	}
	for _, f := range fams {
		g := m.byName[f.name]
		if g == nil {
			g = &family{name: f.name, from: script}
			m.byName[f.name] = g
			m.families = append(m.families, g)
		}
		if !g.hasHelp {
			g.help, g.hasHelp = f.help, f.hasHelp
		}
		if g.typ == "" {
			g.typ = f.typ
		}
		for _, name := range g.claims() {
			m.owner[name] = g
		}
		g.samples = append(g.samples, f.samples...)
		for _, s := range f.samples {
			m.servedBy[s.series] = script
		}
	}
	return nil
}

// check tells whether fams, one script's families, can be merged.
func (m *merged) check(fams []*family) error {
	owner := map[string]string{} // of the script's own families
	n := 0
	for _, f := range fams {
		n += len(f.samples)
	}
	series := make(map[string]bool, n)
	for _, f := range fams {
		if err := m.checkFamily(f); err != nil {
			return err
		}
		for _, name := range f.claims() {
			if o, ok := owner[name]; ok && o != f.name {
				return conflict("%s is a metric of families %s and %s", name, o, f.name)
			}
			owner[name] = f.name
		}
		for _, s := range f.samples {
			if by, ok := m.servedBy[s.series]; ok {
				return conflict("series %s is served by %s too", s.series, by)
			}
			if series[s.series] {
				return conflict("series %s twice", s.series)
			}
			series[s.series] = true
		}
	}
	return nil
}

// checkFamily tells whether f agrees with the merged family of its name,
// and whether its metric names belong to no other family.
func (m *merged) checkFamily(f *family) error {
	if g := m.byName[f.name]; g != nil {
		switch {
		case g.from == "":
			return conflict("family %s is the exporter's own", f.name)
		case typeName(g.typ) != typeName(f.typ):
			return conflict("family %s is %s here, %s in %s", f.name, aType(f.typ), aType(g.typ), g.from)
		case g.hasHelp && f.hasHelp && g.help != f.help:
			return conflict("family %s has another HELP in %s", f.name, g.from)
		}
	}
	for _, name := range f.claims() {
		if g := m.owner[name]; g != nil && g.name != f.name {
			if g.from == "" {
				return conflict("%s is a metric of the exporter's own family %s", name, g.name)
			}
			return conflict("%s is a metric of family %s in %s", name, g.name, g.from)
		}
	}
	return nil
}

func typeName(typ string) string {
	if typ == "" {
		return "untyped"
	}
	return typ
}

// aType is what a family of type typ is: "a counter", "untyped".
func aType(typ string) string {
	if typ = typeName(typ); typ != "untyped" {
		return "a " + typ
	}
	return typ
}

// reserve adds the exporter's own family f: no script may serve it.
func (m *merged) reserve(f *family) {
	m.byName[f.name] = f
	m.families = append(m.families, f)
	for _, name := range f.claims() {
		m.owner[name] = f
	}
}

// text writes the merged exposition: each family's HELP and TYPE lines,
// then its samples.
func (m *merged) text() string {
	var b strings.Builder
	for _, f := range m.families {
		if f.hasHelp {
			fmt.Fprintf(&b, "# HELP %s %s\n", f.name, f.help)
		}
		if f.typ != "" {
			fmt.Fprintf(&b, "# TYPE %s %s\n", f.name, f.typ)
		}
		for _, s := range f.samples {
			b.WriteString(s.line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
