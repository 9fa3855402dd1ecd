package driver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// bpftap --json prints lines a JSON parser reads: a print record and the
// display of a statistic with its count and sum (issue 25's example).
func TestJSONOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	status := Main([]string{"--json", "-e", `global a; probe begin { a["x"] <<< 3; printf("hi\n"); exit() }`},
		strings.NewReader(""), &stdout, &stderr)
	if status != 0 || stderr.Len() > 0 {
		t.Fatalf("status %d, stderr %q", status, stderr.String())
	}
	var printed, stat bool
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var event struct {
			Type     string
			Data     string
			Name     string
			Elements []struct {
				Keys []string
				Stat struct{ Count, Sum int64 }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &event); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		switch {
		case event.Type == "print" && event.Data == "hi\n":
			printed = true
		case event.Type == "global" && event.Name == "a" && len(event.Elements) == 1:
			e := event.Elements[0]
			stat = len(e.Keys) == 1 && e.Keys[0] == "x" && e.Stat.Count == 1 && e.Stat.Sum == 3
		}
	}
	if !printed || !stat {
		t.Errorf("print record %v, statistic count 1 sum 3 %v in:\n%s", printed, stat, stdout.String())
	}
}
