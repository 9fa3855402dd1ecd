//go:build ignore

// Progress reads `go test -json` on its standard input and prints what
// `go test` without -v prints, but as it happens: a package's "ok" or
// "FAIL" line as soon as that package ends (go test run on many packages
// holds every line back until the packages before it have ended, so a slow
// first package hides the others), and the output of each failed test as
// it fails. While a package runs silently for a minute, a line says how
// far it is, so that a slow run can be told from a hung one.
//
// Usage: go test -json PACKAGES | go run .ci/progress.go
// It exits 1 when a test or package failed, or the input had no result.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is a line of `go test -json` (cmd/test2json), and of the build
// output it carries with ImportPath.
type event struct {
	Action, Package, Test, Output, ImportPath string
	Elapsed                                   float64
}

// pkgState is what a running package has said so far.
type pkgState struct {
	start  time.Time
	passed int
	output map[string][]string // by test ("": the package's own lines)
}

type progress struct {
	mu      sync.Mutex
	running map[string]*pkgState
	failed  bool
	ended   int
	quiet   time.Time // when a line was last printed
}

func main() {
	p := &progress{running: map[string]*pkgState{}, quiet: time.Now()}
	go p.heartbeat(time.Minute)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			e = event{Action: "complaint", Output: sc.Text()} // not an event: go test's own
		}
		p.event(e)
	}
	if p.failed || p.ended == 0 {
		os.Exit(1)
	}
}

func (p *progress) event(e event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.Action == "complaint" {
		p.print(e.Output)
		p.failed = true
		return
	}
	if e.ImportPath != "" { // build output: shown as it comes
		if e.Action == "build-output" {
			p.print(strings.TrimSuffix(e.Output, "\n"))
		}
		return
	}
	s := p.running[e.Package]
	if s == nil {
		s = &pkgState{start: time.Now(), output: map[string][]string{}}
		p.running[e.Package] = s
	}
	switch {
	case e.Action == "output":
		s.output[e.Test] = append(s.output[e.Test], e.Output)
	case e.Test != "" && e.Action == "pass":
		s.passed++
		delete(s.output, e.Test)
	case e.Test != "" && e.Action == "skip":
		delete(s.output, e.Test)
	case e.Test != "" && e.Action == "fail":
		p.print(unverbose(s.output[e.Test]))
		delete(s.output, e.Test)
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		p.ended++
		p.failed = p.failed || e.Action == "fail"
		p.print(unverbose(s.output[""]))
		delete(p.running, e.Package)
	}
}

// unverbose is a test's or package's output without the verbose run's
// bookkeeping, which go test without -v does not show, nor the final
// newline.
func unverbose(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if !strings.HasPrefix(l, "=== ") && l != "PASS\n" {
			b.WriteString(l)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (p *progress) print(text string) {
	if text == "" {
		return
	}
	fmt.Println(text)
	p.quiet = time.Now()
}

// heartbeat prints, after every period with nothing printed, the packages
// still running: for how long, and how many of their tests have passed.
func (p *progress) heartbeat(period time.Duration) {
	for range time.Tick(period / 4) {
		p.mu.Lock()
		if time.Since(p.quiet) >= period && len(p.running) > 0 {
			names := make([]string, 0, len(p.running))
			for name, s := range p.running {
				names = append(names, fmt.Sprintf("%s (%v, %d tests passed)", name, time.Since(s.start).Round(time.Second), s.passed))
			}
			sort.Strings(names)
			p.print("running: " + strings.Join(names, ", "))
		}
		p.mu.Unlock()
	}
}
