package driver

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/bpftap/bpftap/internal/exporter"
	"github.com/bpftap/bpftap/internal/interp"
)

// `bpftap exporter` (package exporter) runs its scripts in this process:
// runScript is its Runner, a session of `bpftap SCRIPT` whose run ends
// with ctx rather than a signal, whose output goes to the script's log,
// and whose procfs files are not served as FIFOs: the exporter reads the
// prometheus probe's in-process.

// runScript runs the script at path for the exporter, with the stap
// options args.
func runScript(ctx context.Context, path string, args []string, log io.Writer, ready func(exporter.Session)) int {
	opts, err := parseArgs(append(append([]string(nil), args...), path))
	if err == nil && len(opts.Rlimits) > 0 {
		// stap-exporter's stap is a process of its own; here every script
		// runs in the exporter's
		err = errors.New("bpftap exporter: --rlimit-* would limit the exporter itself, where every script runs: set the limits on its process")
	}
	if err != nil {
		io.WriteString(log, err.Error()+"\n")
		return 1
	}
	s := &session{opts: opts, stdin: strings.NewReader(""), stdout: log, stderr: log, signals: &signals{},
		parent: ctx, begun: func(in *interp.Interp) { ready(prometheusOf{in}) }}
	return s.run()
}

// prometheusOf serves a script's prometheus probe.
type prometheusOf struct{ in *interp.Interp }

// prometheusFile is the file of `probe prometheus` (tapset/prometheus.stp).
const prometheusFile = "__prometheus"

var errNoPrometheus = errors.New("the script has no probe prometheus")

func (p prometheusOf) Prometheus() (string, bool, error) {
	for _, f := range p.in.ProcfsFiles() {
		if f.Name == prometheusFile && f.Reads {
			text, err := p.in.ReadProcfs(context.Background(), f)
			if errors.Is(err, interp.ErrNotRunning) {
				return "", false, nil
			}
			return text, true, err
		}
	}
	return "", false, errNoPrometheus
}
