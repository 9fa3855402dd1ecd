package driver

import (
	"bytes"
	"encoding/xml"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUserSymbolsInPrints samples the hot program (main calls work, which
// calls hot, where its time goes) and prints, from the kernel probe,
// usymname(uaddr()) of every sample and print_ubacktrace() of the 50th to
// the 55th (one in clock_gettime, in the vDSO, has no hot frame; 6 % do):
// the name printed most is hot, and a stack shows hot and main in
// stap's form (" 0xADDR : name+0xOFF/0xSIZE [path]").
func TestUserSymbolsInPrints(t *testing.T) {
	requireFeature(t, "bpf")
	script := `global n
probe timer.profile {
	if (pid() != target()) next
	printf("name %s\n", usymname(uaddr()))
	if (++n >= 50) print_ubacktrace()
	if (n == 55) exit()
}`
	var stdout, stderr bytes.Buffer
	status := Main([]string{"-e", script, "-c", filepath.Join(cPrograms(), "hot") + " 2000"},
		strings.NewReader(""), &stdout, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	names := map[string]int{}
	samples := regexp.MustCompile(`(?m)^name (.*)$`).FindAllStringSubmatch(stdout.String(), -1)
	for _, m := range samples {
		names[m[1]]++
	}
	if names["hot"] < len(samples)/2 {
		t.Errorf("usymname(uaddr()) named hot in %d of %d samples:\n%s", names["hot"], len(samples), stdout.String())
	}
	for _, fn := range []string{"hot", "main"} {
		frame := regexp.MustCompile(`(?m)^ 0x[0-9a-f]+ : ` + fn + `\+0x[0-9a-f]+/0x[0-9a-f]+ \[/\S*/hot\]$`)
		if !frame.MatchString(stdout.String()) {
			t.Errorf("print_ubacktrace() shows no %s frame:\n%s", fn, stdout.String())
		}
	}
}

// TestFlamegraphExample profiles the hot program (main calls work, which
// calls hot, where its time goes) with examples/flamegraph.stp: the
// heaviest folded stack ends in main;work;hot, and bpftap-flamegraph draws
// a well-formed SVG naming hot.
func TestFlamegraphExample(t *testing.T) {
	requireFeature(t, "bpf")
	var folded, stderr bytes.Buffer
	status := Main([]string{"-c", filepath.Join(cPrograms(), "hot") + " 400", "../../examples/flamegraph.stp"},
		strings.NewReader(""), &folded, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("exit status %d, stderr:\n%s", status, stderr.String())
	}
	heaviest, _, _ := strings.Cut(folded.String(), "\n")
	if stack, _, _ := strings.Cut(heaviest, " "); !strings.HasSuffix(stack, "main;work;hot") {
		t.Errorf("heaviest stack %q, want one ending in main;work;hot; folded stacks:\n%s", heaviest, folded.String())
	}
	render := exec.Command("go", "run", "../../cmd/bpftap-flamegraph")
	render.Stdin = &folded
	svg, err := render.Output()
	if err != nil {
		t.Fatalf("bpftap-flamegraph: %v", err)
	}
	if err := wellFormed(svg); err != nil {
		t.Errorf("SVG not well-formed: %v", err)
	}
	if !bytes.Contains(svg, []byte("<title>hot (")) {
		t.Errorf("SVG names no frame hot:\n%s", svg)
	}
}

// wellFormed parses an XML document to its end.
func wellFormed(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := d.Token(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
