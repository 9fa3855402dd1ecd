package sema

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestElaborateOracle checks the expectations of the stap-made testdata
// files against SystemTap itself: each chunk's script through
// `stap -r TREE -p2 [flags]`, its output normalised as the files keep it.
// It runs when BPFTAP_STAP_P2 names stap's kernel tree (the stap-oracle
// tool builds one: /var/tmp/stap-oracle/kernel-tree); a full run takes
// minutes, so CI leaves it off. kernel.txt and listing.txt are bpftap's
// own (a fake kernel) and are not checked.
func TestElaborateOracle(t *testing.T) {
	tree := os.Getenv("BPFTAP_STAP_P2")
	if tree == "" {
		t.Skip("BPFTAP_STAP_P2 is not set to stap's kernel tree: the expectations are not checked against stap")
	}
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		if base := filepath.Base(file); base == "kernel.txt" || base == "listing.txt" {
			continue
		}
		for _, c := range readChunks(t, file) {
			t.Run(filepath.Base(file)+"/"+c.name, func(t *testing.T) {
				args := append(append([]string{"-r", tree, "-p2"}, c.flags...), "-e", c.script)
				out, _ := exec.Command("stap", args...).CombinedOutput()
				if got, want := stapNormal(string(out)), stapNormal(c.want); got != want {
					t.Errorf("script:\n%s\nstap:\n%s\nexpected:\n%s", c.script, got, want)
				}
			})
		}
	}
}

// stapLocal are the lines of stap's output the files leave out: pass
// lines, notes about this machine, the "suppressed" trailer.
var stapLocal = regexp.MustCompile(`^(Pass \d|WARNING: Kernel function symbol table missing|Tip: |Number of similar|Rerun with -v|Missing separate debuginfos)`)

// stapEmbedded is the embedded C a stap tapset function brings into the
// -p2 listing; bpftap's tapset has none.
var stapEmbedded = regexp.MustCompile(`(?s)# global embedded code\n%\{.*?\n%\}\n`)

func stapNormal(s string) string {
	var lines []string
	for _, l := range strings.Split(stapEmbedded.ReplaceAllString(s, ""), "\n") {
		if !stapLocal.MatchString(l) {
			lines = append(lines, strings.TrimRight(l, " "))
		}
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}
