package driver

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/exporter"
)

// syscallsScript counts the system calls of the test's copy of ls
// (listName) by name, in the kernel.
var syscallsScript = `global calls, prom
probe syscall_any {
	if (execname() == "` + listName + `")
		calls[name] <<< 1
}
probe prometheus {
	foreach (n in calls)
		prom[n] = @count(calls[n])
	@prometheus_dump_array1(prom, "test_syscalls", "name")
	delete prom
}
`

// promScript is a script whose prometheus probe serves text.
func promScript(text string) string {
	return fmt.Sprintf("probe prometheus { $value = %q }\n", text)
}

// TestExporterMetrics serves GET /metrics from directories of scripts,
// some with kernel probes: the series of the scripts it serves (the
// autostart ones, or --metrics's) in one valid exposition, a family two
// scripts share written once, and bpftap_script_up{script="NAME"}, 1 for
// each script whose series are there, 0 for each left out (it failed, or
// its answer does not parse, or clashes with a script before it), the
// log saying why. Nothing is left out silently: a script whose up is 0
// has no series in the answer, one whose up is 1 all of its own.
func TestExporterMetrics(t *testing.T) {
	requireBPF(t)
	for _, c := range []struct {
		name    string
		scripts map[string]string
		metrics []string       // --metrics; nil: none given
		up      map[string]int // bpftap_script_up by script
		series  []string       // regexps of lines the answer has, once ls ran
		absent  []string       // regexps of lines it has not
		logged  []string
	}{{
		name: "autostart scripts, a family shared",
		scripts: map[string]string{
			"calls_autostart.stp": syscallsScript,
			"errno_autostart.stp": errnoScript,
			// first by name: the family errno_autostart.stp adds to is
			// not the last one when it comes
			"a_more_autostart.stp": promScript("# HELP syscall_error_count failed system calls\n# TYPE syscall_error_count untyped\n" +
				`syscall_error_count{pid="0",errno="0",name="none"} 0` + "\n"),
			"plain.stp": promScript("plain 1\n"),
		},
		up: map[string]int{"calls_autostart.stp": 1, "errno_autostart.stp": 1, "a_more_autostart.stp": 1},
		series: []string{`^test_syscalls\{name="openat"\} [1-9]`, `^syscall_error_count\{pid="\d+",errno="-2",name="\w+"\} [1-9]`,
			`^syscall_error_count\{pid="0",errno="0",name="none"\} 0$`},
		absent: []string{`^plain`},
	}, {
		name: "--metrics picks and orders: the first wins a clash",
		scripts: map[string]string{
			"hist.stp":            histScript,
			"clash.stp":           promScript("# TYPE write_size counter\nwrite_size 1\nclash_only 1\n"),
			"other_autostart.stp": promScript("other 1\n"),
		},
		metrics: []string{"hist.stp", "clash.stp", "hist.stp"},
		up:      map[string]int{"hist.stp": 1, "clash.stp": 0},
		series:  []string{`^# TYPE write_size histogram$`, `^write_size_bucket\{what="none",le="\+Inf"\} 2$`},
		absent:  []string{`^clash_only`, `^write_size 1`, `^other`, `other_autostart`},
		logged:  []string{"bpftap exporter: /metrics leaves clash.stp out: family write_size is a counter here, a histogram in hist.stp"},
	}, {
		name: "scripts that fail, or serve what Prometheus would refuse",
		scripts: map[string]string{
			"ok_autostart.stp":       promScript("ok 1\n"),
			"broken_autostart.stp":   "probe begin { x = }\n",
			"noprom_autostart.stp":   "global n\nprobe timer.s(100) { n++ }\n",
			"half_autostart.stp":     "global zero\nprobe prometheus { $value = \"half 1\\n\"; $value .= sprintf(\"b %d\\n\", 1 / zero) }\n",
			"unquoted_autostart.stp": "global a\nprobe begin { a[\"x\"] = 1 }\nprobe prometheus { @prometheus_dump_array1_map_unquoted(a, \"unq\", \"k\", sprint, sprint) }\n",
			"spoof_autostart.stp":    promScript(`bpftap_script_up{script="broken_autostart.stp"} 1` + "\nspoof 1\n"),
		},
		up: map[string]int{"ok_autostart.stp": 1, "broken_autostart.stp": 0, "noprom_autostart.stp": 0, "half_autostart.stp": 0,
			"unquoted_autostart.stp": 0, "spoof_autostart.stp": 0},
		series: []string{`^ok 1$`},
		absent: []string{`^half`, `^b `, `^unq`, `^spoof`},
		logged: []string{
			"/metrics leaves broken_autostart.stp out: broken_autostart.stp failed to start (exit status 1)",
			"/metrics leaves noprom_autostart.stp out: noprom_autostart.stp: the script has no probe prometheus",
			"/metrics leaves half_autostart.stp out: half_autostart.stp: the probe's handler failed",
			"half_autostart.stp: ERROR: division by 0",
			"/metrics leaves unquoted_autostart.stp out: its answer is not in Prometheus's text format: line 1: expected a label value in double quotes",
			"/metrics leaves spoof_autostart.stp out: family bpftap_script_up is the exporter's own",
		},
	}, {
		name:    "--metrics '': none",
		scripts: map[string]string{"one_autostart.stp": promScript("one 1\n")},
		metrics: []string{},
		up:      map[string]int{},
		absent:  []string{`^one`},
	}} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeScripts(t, c.scripts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			log := &lockedBuffer{}
			defer func() {
				if t.Failed() {
					t.Log(log.String())
				}
			}()
			base := serveExporter(t, ctx, exporter.Config{Dir: dir, Metrics: c.metrics}, log)
			text := scrapeUntil(t, base, c.up, 60*time.Second)
			if len(c.series) > 0 {
				failToList(t, dir, 3)
				text = scrapeUntil(t, base, c.up, 0) // the kernel's counts now folded in
			}
			for _, re := range c.series {
				if !regexp.MustCompile("(?m)" + re).MatchString(text) {
					t.Errorf("/metrics has no line matching %s:\n%s", re, text)
				}
			}
			for _, re := range c.absent {
				if regexp.MustCompile("(?m)" + re).MatchString(text) {
					t.Errorf("/metrics has a line matching %s:\n%s", re, text)
				}
			}
			checkGrouped(t, text)
			// a script may be starting still at the first scrapes, which
			// left it out for that
			for deadline := time.Now().Add(60 * time.Second); !allLogged(log.String(), c.logged); time.Sleep(200 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("after 60 s, the log has not all of %q", c.logged)
				}
				scrapeUntil(t, base, c.up, 0)
			}
		})
	}
}

func allLogged(log string, lines []string) bool {
	for _, line := range lines {
		if !strings.Contains(log, line) {
			return false
		}
	}
	return true
}

var upLine = regexp.MustCompile(`(?m)^bpftap_script_up\{script="([^"]*)"\} (\d)$`)

// scrapeUntil scrapes /metrics until its bpftap_script_up values are up
// (scripts start in the background, and restart), for at most wait, and
// returns the last answer, checked: 200, the Content-Type Prometheus 3
// needs, and valid for promtool.
func scrapeUntil(t *testing.T, base string, up map[string]int, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		status, header, text := get(t, base+"/metrics")
		if status != http.StatusOK || header.Get("Content-Type") != exporter.ContentType {
			t.Fatalf("GET /metrics: %d, Content-Type %q: %s", status, header.Get("Content-Type"), text)
		}
		got := map[string]int{}
		for _, m := range upLine.FindAllStringSubmatch(text, -1) {
			got[m[1]], _ = strconv.Atoi(m[2])
		}
		if fmt.Sprint(got) == fmt.Sprint(up) {
			checkPromtool(t, text)
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("bpftap_script_up: %v, want %v:\n%s", got, up, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkGrouped checks that each family of an exposition is one group of
// lines, its HELP and TYPE first, each once, and each series once.
func checkGrouped(t *testing.T, text string) {
	t.Helper()
	done := map[string]bool{} // families whose group ended
	seen := map[string]bool{} // series and HELP/TYPE lines
	typed := map[string]string{}
	current := ""
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var fam, key string
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" {
			fam, key = f[2], f[1]+" "+f[2]
			if f[1] == "TYPE" {
				typed[fam] = f[3]
			}
		} else {
			key, _, _ = strings.Cut(line, " ")
			fam, _, _ = strings.Cut(key, "{")
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(fam, suffix); ok && (typed[base] == "histogram" || typed[base] == "summary") {
					fam = base
				}
			}
		}
		if seen[key] {
			t.Errorf("%q twice in:\n%s", key, text)
		}
		seen[key] = true
		if fam != current {
			if done[fam] {
				t.Errorf("family %s in two groups:\n%s", fam, text)
			}
			done[current], current = true, fam
		}
	}
}

// checkPromtool has promtool (Prometheus's) parse an exposition, where it
// is installed (CI installs it, with Prometheus).
func checkPromtool(t *testing.T, text string) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("BPFTAP_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("promtool is not installed (apt-get install prometheus)")
		}
		return
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, _ := cmd.CombinedOutput() // exit status 3: lint problems (no HELP), not errors
	if strings.Contains(string(out), "error while linting") {
		t.Errorf("promtool: %s\n%s", out, text)
	}
}

// TestExporterIndex asks for the index page of a directory whose scripts
// have the names someone who can write it could give them (HTML, quotes,
// a newline, bytes that are not UTF-8, 255 bytes, a '%'), a script that
// is a symbolic link to /etc/passwd, one to a directory, a directory of
// scripts, a hidden one: the HTML page has no tag but its own, and every
// link leads to its script; the text page has a line a script, a name
// that is not one printable word quoted; neither lists what is not a
// script of the directory, nor shows a line of a script or of
// /etc/passwd.
func TestExporterIndex(t *testing.T) {
	shown := map[string]string{ // by name: as the index shows it
		`<img src=x onerror=alert(1)>.stp`: `"<img src=x onerror=alert(1)>.stp"`,
		`<script>alert(1)<b>.stp`:          `<script>alert(1)<b>.stp`,
		`q"uo'te.stp`:                      `"q\"uo'te.stp"`,
		"new\nline.stp":                    `"new\nline.stp"`,
		"\xff\xfe.stp":                     `"\xff\xfe.stp"`,
		strings.Repeat("l", 251) + ".stp":  strings.Repeat("l", 251) + ".stp",
		"sp ace&amp;.stp":                  `"sp ace&amp;.stp"`,
		"javascript:alert(1).stp":          "javascript:alert(1).stp",
		"%2e%2e.stp":                       "%2e%2e.stp",
		"broken.stp":                       "broken.stp",
		"passwd.stp":                       "passwd.stp",
		"never.stp":                        "never.stp",
	}
	var odd []string
	for name := range shown {
		if !strings.HasPrefix(name, "broken") && !strings.HasPrefix(name, "passwd") && !strings.HasPrefix(name, "never") {
			odd = append(odd, name)
		}
	}
	scripts := map[string]string{"broken.stp": "probe begin { x = } // bpftap-secret-source-line", "never.stp": promScript("never 1\n"),
		".hidden.stp": promScript("hidden 1\n"), "notes.txt": "not a script", "sub/inner.stp": promScript("inner 1\n")}
	for _, name := range odd {
		scripts[name] = promScript("odd 1\n")
	}
	dir := t.TempDir()
	for name, text := range scripts {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"passwd.stp": "/etc/passwd", "etc.stp": "/etc"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	secrets := []string{strings.SplitN(string(passwd), "\n", 2)[0], "bpftap-secret-source-line", "probe prometheus"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := serveExporter(t, ctx, exporter.Config{Dir: dir}, &lockedBuffer{})
	for _, name := range append(odd, "broken.stp", "passwd.stp") {
		get(t, base+"/"+url.PathEscape(name)) // starts it: running, or failed
	}

	page := indexOf(t, base, "text/html,application/xhtml+xml")
	for _, tag := range regexp.MustCompile(`</?([!a-zA-Z0-9]*)`).FindAllStringSubmatch(page, -1) {
		if !slices.Contains([]string{"!DOCTYPE", "html", "head", "meta", "title", "body", "h1", "p", "a", "code",
			"table", "thead", "tbody", "tr", "th", "td"}, tag[1]) {
			t.Errorf("the index page has a tag <%s> of a script's:\n%s", tag[1], page)
		}
	}
	visible := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, "\t"))
	for name, shown := range shown {
		if !strings.Contains(visible, "\t"+shown+"\t") {
			t.Errorf("the index page does not list %q as %s", name, shown)
		}
	}
	text := indexOf(t, base, "*/*")
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:] {
		name, rest := line, ""
		if q, err := strconv.QuotedPrefix(line); err == nil {
			name, _ = strconv.Unquote(q)
			rest = line[len(q):]
		} else {
			name, rest, _ = strings.Cut(line, " ")
			rest = " " + rest
		}
		states[name] = rest
	}
	for name := range shown {
		if _, ok := states[name]; !ok {
			t.Errorf("the text index does not list %q:\n%s", name, text)
		}
	}
	if len(states) != len(shown) {
		t.Errorf("the text index lists %d scripts, want %d:\n%s", len(states), len(shown), text)
	}
	for name, want := range map[string]string{
		"broken.stp":                       ` failed restarts=0 last-error="` + time.Now().Format("2006-01-02"),
		"passwd.stp":                       ` failed restarts=0 last-error=`,
		"never.stp":                        ` not started restarts=0`,
		`<img src=x onerror=alert(1)>.stp`: ` running restarts=0`,
		"\xff\xfe.stp":                     ` running restarts=0`,
		"new\nline.stp":                    ` running restarts=0`,
	} {
		if !strings.HasPrefix(states[name], want) {
			t.Errorf("%q: %q, want %q...", name, states[name], want)
		}
	}
	links := 0
	for _, href := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		path := html.UnescapeString(href[1])
		links++
		status, _, body := rawRequest(t, base, "GET "+path+" HTTP/1.1")
		if status == http.StatusNotFound || status == http.StatusOK && path != "/metrics" && !strings.HasSuffix(body, " 1\n") {
			t.Errorf("the link %s leads to %d %q", href[1], status, body)
		}
	}
	if links != len(shown)+1 {
		t.Errorf("%d links, want %d (/metrics and a script each)", links, len(shown)+1)
	}

	for _, answer := range []string{page, text} {
		for _, secret := range append(secrets, "hidden", "inner", "etc.stp", "notes.txt") {
			if strings.Contains(answer, secret) {
				t.Errorf("the index shows %q:\n%s", secret, answer)
			}
		}
	}
}

// indexOf is GET / with Accept: accept, checked (200, Vary: Accept).
func indexOf(t *testing.T, base, accept string) string {
	t.Helper()
	status, header, body := rawRequest(t, base, "GET / HTTP/1.1\r\nAccept: "+accept)
	want := "text/plain; charset=utf-8"
	if strings.Contains(accept, "text/html") {
		want = "text/html; charset=utf-8"
	}
	if status != http.StatusOK || header.Get("Content-Type") != want || header.Get("Vary") != "Accept" {
		t.Fatalf("GET / (Accept: %s): %d, %v", accept, status, header)
	}
	return body
}

// TestExporterPaths asks for what a client should not get, as one would
// write it on the wire: paths out of the directory, encoded or not,
// pages under pages, a script in a subdirectory, a link to a directory, a
// hidden script, a NUL, a path longer than a header may be; and methods
// other than GET and HEAD. Each is a 404 (a 405, a 431) of one line that
// does not repeat the path; HEAD answers as GET, without a body.
func TestExporterPaths(t *testing.T) {
	dir := writeScripts(t, map[string]string{"ok.stp": promScript("ok 1\n"), ".hidden.stp": promScript("hidden 1\n")})
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "inner.stp"), []byte(promScript("inner 1\n")), 0o644)
	os.Symlink("/etc", filepath.Join(dir, "etc.stp"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := serveExporter(t, ctx, exporter.Config{Dir: dir, Metrics: []string{"ok.stp"}}, &lockedBuffer{})
	long := strings.Repeat("a", 10000)
	for _, c := range []struct {
		request string
		status  int
		body    string
	}{
		{"GET /metrics/../ok.stp", 404, ""},
		{"GET /%2e%2e/ HTTP/1.1", 404, ""},
		{"GET /%2e%2e%2fetc%2fpasswd", 404, ""},
		{"GET /..%2f" + filepath.Base(dir) + "%2fok.stp", 404, ""},
		{"GET /sub/inner.stp", 404, ""},
		{"GET /sub%2finner.stp", 404, ""},
		{"GET /etc.stp", 404, ""},
		{"GET /.hidden.stp", 404, ""},
		{"GET //metrics", 404, ""},
		{"GET /metrics/", 404, ""},
		{"GET /ok.stp/", 404, ""},
		{"GET /ok%00.stp", 404, ""},
		{"GET /ok.stp%00", 404, ""},
		{"GET /index.html", 404, ""},
		{"GET /" + long + ".stp", 404, ""},
		{"GET /" + long + long + long, 431, ""},
		{"POST /metrics", 405, ""},
		{"PUT /", 405, ""},
		{"DELETE /ok.stp", 405, ""},
		{"OPTIONS /metrics", 405, ""},
		{"POST /nosuch.stp", 404, ""},
		{"GET /ok.stp", 200, "ok 1\n"},
		{"GET /metrics?x=<y>", 200, "ok 1\n"},
		{"GET http://elsewhere/metrics", 200, "ok 1\n"},
		{"HEAD /ok.stp", 200, ""},
		{"HEAD /metrics", 200, ""},
		{"HEAD /", 200, ""},
	} {
		request := c.request
		if !strings.HasSuffix(request, "HTTP/1.1") {
			request += " HTTP/1.1"
		}
		status, header, body := rawRequest(t, base, request)
		if status != c.status || !strings.Contains(body, c.body) || c.body == "" && status == 200 && body != "" {
			t.Errorf("%s: %d %q, want %d %q", clip(c.request), status, clip(body), c.status, c.body)
		}
		if status == 405 && header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow %q", c.request, header.Get("Allow"))
		}
		if status >= 400 && (strings.Count(body, "\n") > 1 || strings.Contains(body, "passwd") || strings.Contains(body, "aaaa")) {
			t.Errorf("%s: %q", clip(c.request), clip(body))
		}
	}
}

// rawRequest sends request (its first line and header lines, the Host
// and Connection headers added) to the exporter at base on a connection
// of its own, and returns the answer.
func rawRequest(t *testing.T, base, request string) (int, http.Header, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request+"\r\nHost: test\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s: %v", clip(request), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}
