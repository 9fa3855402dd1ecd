package interp

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/format"
	"github.com/bpftap/bpftap/internal/output"
)

// recorder is an output.Writer that notes every event it receives in one
// list.
type recorder struct{ events []string }

func (r *recorder) note(format string, args ...any) {
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) Print(f *format.Format, args []format.Arg, mem format.Memory) error {
	text, err := f.Exec(nil, args, mem, 0)
	r.note("print %q", text)
	return err
}

func (r *recorder) Hist(s *format.Stat) error {
	r.note("hist count=%d", s.Count)
	return nil
}

func (r *recorder) Log(msg string) { r.note("log %q", msg) }

func (r *recorder) Global(g *output.Global) {
	text := "global " + g.Name + " " + g.Type.String()
	if g.Keys != nil {
		text += fmt.Sprint(" ", g.Keys)
	}
	for _, e := range g.Elements {
		text += " " + elementString(e)
	}
	r.note("%s", text)
}

// elementString is `[KEY,...]=VALUE` or `[KEY,...]@count=N`, strings quoted.
func elementString(e output.Element) string {
	var keys []string
	for _, k := range e.Key {
		keys = append(keys, argString(k))
	}
	text := ""
	if keys != nil {
		text = "[" + strings.Join(keys, ",") + "]"
	}
	if e.Stat != nil {
		return text + fmt.Sprintf("@count=%d", e.Stat.Count)
	}
	return text + "=" + argString(e.Value)
}

func argString(a format.Arg) string {
	if a.Str != "" {
		return strconv.Quote(a.Str)
	}
	return strconv.FormatInt(a.Int, 10)
}

func (r *recorder) Flush() error {
	r.note("flush")
	return nil
}

func (r *recorder) Diagnostic(d *output.Diagnostic) {
	r.note("diagnostic %d %q near %q at %s", d.Severity, d.Msg, d.Near, d.At)
}

func (r *recorder) Loss(l *output.Loss) { r.note("loss %+v", *l) }

func (r *recorder) Summary(s *output.Summary) { r.note("summary %+v", *s) }

func (r *recorder) HitReport(h []output.Hit) { r.note("hits %d", len(h)) }

func (r *recorder) Attached(a *output.Attached) { r.note("attached %d", a.Programs) }

func (r *recorder) System(p []byte) { r.note("system %q", p) }

func (r *recorder) SwitchFile() error {
	r.note("switch")
	return nil
}

// runRecorded runs script with a recorder as its output writer.
func runRecorded(t *testing.T, script string) []string {
	t.Helper()
	prog := elaborate(t, script)
	rec := &recorder{}
	var stderr bytes.Buffer
	in, err := New(prog, Config{Output: rec, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	in.Begin()
	in.End()
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	return rec.events
}

func checkEvents(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The print family, log and histograms reach the writer as events; the s*
// forms do not; system() commands run after the handler's flush.
func TestOutputEvents(t *testing.T) {
	got := runRecorded(t, `global s
probe begin {
	printf("%d %s\n", 1, "a"); log("msg"); s <<< 3; print(@hist_log(s))
	x = sprintf("%d", 2); system("echo hi"); println(x, @count(s))
}
probe end { print(1) }
`)
	checkEvents(t, got, []string{
		`print "1 a\n"`, `log "msg"`, `hist count=1`, `print "21\n"`, `flush`, `system "hi\n"`,
		`flush`, // End flushes before the end probes
		`print "1"`, `flush`, `summary {Errors:0 Skipped:0 Reentrancy:false}`,
	})
}

// A global written and never read reaches the writer as one Global event,
// at the place of its display probe among the end probes.
func TestDisplayEvents(t *testing.T) {
	got := runRecorded(t, `global n, s, a, t
probe begin { n = 1; s <<< 4; a["x", 1] = "v"; a["y", 2] = "w"; t[7] <<< 1; t[8] <<< 1; t[8] <<< 2; exit() }
probe end { print("end") }
`)
	checkEvents(t, got, []string{
		`flush`, `flush`, `print "end"`, `flush`,
		`global n long =1`, `flush`,
		`global s stats @count=1`, `flush`,
		`global a string [string long] ["y",2]="w" ["x",1]="v"`, `flush`,
		`global t stats [long] [8]@count=2 [7]@count=1`, `flush`,
		`summary {Errors:0 Skipped:0 Reentrancy:false}`,
	})
}

// Errors and warnings reach the writer as Diagnostic events, with the
// token and position of an error; switch_file() as SwitchFile after the
// handler's output; the closing counts as a Summary.
func TestDiagnosticEvents(t *testing.T) {
	prog := elaborate(t, `probe begin { warn("careful"); warn("careful"); print("a"); switch_file(); x = 0; print(1 / x) }`)
	rec := &recorder{}
	in, err := New(prog, Config{Output: rec})
	if err != nil {
		t.Fatal(err)
	}
	in.Begin()
	in.End()
	checkEvents(t, rec.events, []string{
		`diagnostic 1 "careful" near "" at :0:0`,
		`print "a"`, `flush`, `switch`,
		`diagnostic 0 "division by 0" near "operator '/'" at <input>:1:91`,
		`flush`, `summary {Errors:1 Skipped:0 Reentrancy:false}`,
	})
}
