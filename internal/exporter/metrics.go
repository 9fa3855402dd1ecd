package exporter

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/bpftap/bpftap/internal/httpserve"
)

// upFamily is the exporter's own family on /metrics: one series a script
// it serves, 1 when the script's series are in the answer.
var upFamily = family{
	name: "bpftap_script_up",
	help: "1 if the script's series are in this answer; 0 if it has not begun, failed, " +
		"or its answer does not parse or clashes with another script's (the exporter's log says why).",
	hasHelp: true,
	typ:     "gauge",
}

// metrics answers GET /metrics: the expositions of the scripts it serves,
// merged (exposition.go), the first served winning a clash, and
// bpftap_script_up for each. A script that has not begun, or failed, is
// left out at once (a scrape does not wait for it): its series are
// missing, and its bpftap_script_up is 0.
func (x *Exporter) metrics(req context.Context) httpserve.Answer {
	texts := make([]string, len(x.served))
	failures := make([]*failure, len(x.served))
	var wg sync.WaitGroup
	for i, s := range x.served {
		wg.Go(func() { texts[i], failures[i] = s.exposition(s.current(), req, 0) })
	}
	wg.Wait()
	m := newMerged()
	up := upFamily
	m.reserve(&up)
	for i, s := range x.served {
		var err error = failures[i]
		if failures[i] == nil {
			err = m.addText(s.name, texts[i])
		}
		up.samples = append(up.samples, upSample(s.name, err == nil))
		x.noteLeft(s, err)
	}
	h := http.Header{}
	h.Set("Content-Type", ContentType)
	return httpserve.Answer{Status: http.StatusOK, Header: h, Body: m.text()}
}

// upSample is script's bpftap_script_up line.
func upSample(script string, up bool) sample {
	v := 0
	if up {
		v = 1
	}
	value := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(script)
	return sample{line: fmt.Sprintf("%s{script=\"%s\"} %d", upFamily.name, value, v)}
}

// noteLeft notes why the scrape left s out (err), or that it did not
// (nil), and writes a line to the log when that changes.
func (x *Exporter) noteLeft(s *script, err error) {
	left := ""
	if err != nil {
		left = err.Error()
	}
	s.mu.Lock()
	changed := s.left != left
	s.left = left
	s.mu.Unlock()
	switch {
	case !changed:
	case left == "":
		fmt.Fprintf(x.log, "bpftap exporter: /metrics serves %s\n", s.name)
	default:
		fmt.Fprintf(x.log, "bpftap exporter: /metrics leaves %s out: %s\n", s.name, left)
	}
}
