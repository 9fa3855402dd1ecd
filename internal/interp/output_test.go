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

// recorder is an output.Writer that notes every event it receives, and what
// system() commands write to Stdout, in one list.
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

func (r *recorder) Write(p []byte) (int, error) {
	r.note("stdout %q", p)
	return len(p), nil
}

// runRecorded runs script with a recorder as its output writer and Stdout.
func runRecorded(t *testing.T, script string) []string {
	t.Helper()
	prog := elaborate(t, script)
	rec := &recorder{}
	var stderr bytes.Buffer
	in, err := New(prog, Config{Output: rec, Stdout: rec, Stderr: &stderr})
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
		`print "1 a\n"`, `log "msg"`, `hist count=1`, `print "21\n"`, `flush`, `stdout "hi\n"`,
		`flush`, // End flushes before the end probes
		`print "1"`, `flush`,
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
	})
}
