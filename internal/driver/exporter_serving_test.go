package driver

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/exporter"
)

// TestExporterFailedProbe scrapes prometheus probes that fail half-way, as
// Prometheus would: one that runs into MAXACTION building its exposition,
// one that divides by zero after its first series, one that aborts. Each
// is a 500 with one line, never a 200 with what the probe had built (a
// scrape Prometheus would record as the truth); the log has the error.
func TestExporterFailedProbe(t *testing.T) {
	dir := t.TempDir()
	scripts := map[string]string{
		"loop.stp":  `probe prometheus { while (1) $value .= "loop_series 1\n" }`,
		"half.stp":  "global zero\nprobe prometheus { $value = \"half_series 1\\n\"; $value .= sprintf(\"b %d\\n\", 1 / zero) }",
		"abort.stp": `probe prometheus { $value = "abort_series 1\n"; abort() }`,
	}
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &lockedBuffer{}
	base := serveExporter(t, ctx, exporter.Config{Dir: dir}, log)
	for name, logged := range map[string]string{
		"loop.stp":  "loop.stp: ERROR: MAXACTION exceeded",
		"half.stp":  "half.stp: ERROR: division by 0",
		"abort.stp": "",
	} {
		status, header, body := get(t, base+"/"+name)
		want := name + ": the probe's handler failed\n"
		if status != http.StatusInternalServerError || body != want || header.Get("Content-Type") == exporter.ContentType {
			t.Errorf("GET /%s: %d %q (Content-Type %q, %d bytes), want 500 %q", name, status, clip(body), header.Get("Content-Type"), len(body), want)
		}
		if !strings.Contains(log.String(), logged) {
			t.Errorf("the log has no %q:\n%s", logged, log.String())
		}
	}
}

// clip is the start of a long answer, for a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
