package exporter

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bpftap/bpftap/internal/httpserve"
)

// The index page (GET /) lists the scripts of the directory and those
// that ran, each with its state, its restarts, whether /metrics serves
// it, and its last failure in the line a client of /NAME.stp got: never
// a line of a script or of its output, never a file outside the
// directory (a script that is a symbolic link shows its name only). The
// names come from whoever can write the directory: the HTML page escapes
// them (html/template: as text, and as a link's path, percent-encoded),
// the text page quotes a name that is not one printable word.

// index answers GET /: HTML to a client that accepts it (a browser),
// text otherwise (curl).
func (x *Exporter) index(r *http.Request) httpserve.Answer {
	states := x.states()
	h := http.Header{}
	h.Set("Vary", "Accept")
	h.Set("X-Content-Type-Options", "nosniff")
	if !strings.Contains(strings.Join(r.Header.Values("Accept"), ","), "text/html") {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		return httpserve.Answer{Status: http.StatusOK, Header: h, Body: indexText(states)}
	}
	var b strings.Builder
	if err := indexPage.Execute(&b, states); err != nil {
		fmt.Fprintf(x.log, "bpftap exporter: the index page: %v\n", err)
		return httpserve.Text(http.StatusInternalServerError, "internal error")
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'")
	return httpserve.Answer{Status: http.StatusOK, Header: h, Body: b.String()}
}

// states are the states of the scripts of the directory, and of those
// that ran and are gone from it, by name.
func (x *Exporter) states() []scriptState {
	var names []string
	entries, _ := os.ReadDir(x.cfg.Dir)
	for _, e := range entries {
		if x.isScript(e.Name()) {
			names = append(names, e.Name())
		}
	}
	x.mu.Lock()
	scripts := make(map[string]*script, len(x.byID))
	for name, s := range x.byID {
		scripts[name] = s
		names = append(names, name)
	}
	x.mu.Unlock()
	slices.Sort(names)
	var states []scriptState
	for _, name := range slices.Compact(names) {
		if s := scripts[name]; s != nil {
			states = append(states, s.state())
		} else {
			states = append(states, scriptState{Name: name, State: runState(nil)})
		}
	}
	return states
}

// Shown is the script's name as the index shows it: as it is when it is
// one word of printable UTF-8, else quoted as Go quotes a string.
func (st scriptState) Shown() string {
	for _, r := range st.Name {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || r == '\\' || r == utf8.RuneError {
			return strconv.Quote(st.Name)
		}
	}
	return st.Name
}

// Link is the path of the script's page, percent-encoded.
func (st scriptState) Link() string { return "/" + url.PathEscape(st.Name) }

// OnMetrics says whether the last scrape of /metrics served the script.
func (st scriptState) OnMetrics() string {
	switch {
	case !st.Metrics:
		return ""
	case st.Left != "":
		return "no: " + st.Left
	default:
		return "yes"
	}
}

// Failure is the script's last failure, when and what, "" if none.
func (st scriptState) Failure() string {
	if st.LastError == "" {
		return ""
	}
	return st.LastAt.Format(time.RFC3339) + " " + st.LastError
}

// indexText is the text index: a line a script, NAME STATE restarts=N,
// then metrics=yes or metrics="no: WHY" if /metrics serves it, and
// last-error="WHEN WHAT" if it failed.
func indexText(states []scriptState) string {
	var b strings.Builder
	b.WriteString("# bpftap exporter: GET /NAME.stp serves a script's series; GET /metrics those of the scripts with metrics=, merged\n")
	for _, st := range states {
		fmt.Fprintf(&b, "%s %s restarts=%d", st.Shown(), st.State, st.Restarts)
		if on := st.OnMetrics(); on == "yes" {
			b.WriteString(" metrics=yes")
		} else if on != "" {
			b.WriteString(" metrics=" + strconv.Quote(on))
		}
		if f := st.Failure(); f != "" {
			b.WriteString(" last-error=" + strconv.Quote(f))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>bpftap exporter</title></head>
<body>
<h1>bpftap exporter</h1>
<p><a href="/metrics">/metrics</a> serves the series of the scripts marked below, merged,
and <code>bpftap_script_up</code> for each; <code>/NAME.stp</code> serves one script's.</p>
<table>
<thead><tr><th>script</th><th>state</th><th>restarts</th><th>on /metrics</th><th>last error</th></tr></thead>
<tbody>
{{- range .}}
<tr><td><a href="{{.Link}}">{{.Shown}}</a></td><td>{{.State}}</td><td>{{.Restarts}}</td><td>{{.OnMetrics}}</td><td>{{.Failure}}</td></tr>
{{- else}}
<tr><td colspan="5">no script in the directory</td></tr>
{{- end}}
</tbody>
</table>
</body>
</html>
`))
