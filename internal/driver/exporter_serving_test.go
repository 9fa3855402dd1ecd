package driver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bpftap/bpftap/internal/exporter"
)

// TestExporterFailedProbe scrapes prometheus probes that fail half-way, as
// Prometheus would: one that runs into MAXACTION building its exposition,
// one that divides by zero after its first series, one that aborts. Each
// is a 500 with one line, never a 200 with what the probe had built (a
// scrape Prometheus would record as the truth); the log has the error.
func TestExporterFailedProbe(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		"loop.stp":  `probe prometheus { while (1) $value .= "loop_series 1\n" }`,
		"half.stp":  "global zero\nprobe prometheus { $value = \"half_series 1\\n\"; $value .= sprintf(\"b %d\\n\", 1 / zero) }",
		"abort.stp": `probe prometheus { $value = "abort_series 1\n"; abort() }`,
	})
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
		want := name + ": the probe's handler failed; the exporter's log says why\n"
		if status != http.StatusInternalServerError || body != want || header.Get("Content-Type") == exporter.ContentType {
			t.Errorf("GET /%s: %d %q (Content-Type %q, %d bytes), want 500 %q", name, status, clip(body), header.Get("Content-Type"), len(body), want)
		}
		if !strings.Contains(log.String(), logged) {
			t.Errorf("the log has no %q:\n%s", logged, log.String())
		}
	}
}

// TestExporterErrorPages asks, as any client could, for a script that is a
// symbolic link to /etc/passwd and for one that fails to compile: the
// answers are one line each, with no line of either file; the compiler's
// messages, source lines and all, are in the exporter's log.
func TestExporterErrorPages(t *testing.T) {
	dir := writeScripts(t, map[string]string{"broken.stp": "probe begin { x = } // bpftap-secret-source-line"})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.stp")); err != nil {
		t.Fatal(err)
	}
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(passwd), "\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &lockedBuffer{}
	base := serveExporter(t, ctx, exporter.Config{Dir: dir}, log)
	for name, leak := range map[string]string{"passwd.stp": first, "broken.stp": "bpftap-secret-source-line"} {
		status, _, body := get(t, base+"/"+name)
		want := name + " failed to start (exit status 1); the exporter's log says why\n"
		if status != http.StatusInternalServerError || body != want {
			t.Errorf("GET /%s: %d %q, want 500 %q", name, status, clip(body), want)
		}
		if !strings.Contains(log.String(), leak) {
			t.Errorf("the log does not show %q:\n%s", leak, log.String())
		}
	}
}

// TestExporterIdleClients runs `bpftap exporter` under `ulimit -n 200`
// and, as a client that wants it starved would, holds 300 keep-alive
// connections idle after a request each, 100 that never send a byte and
// 50 that stop half-way through their header. Scrapes from a new client
// are all answered at once, and the exporter never holds more sockets
// than its cap (half of its RLIMIT_NOFILE, 64 at most) and its listener.
func TestExporterIdleClients(t *testing.T) {
	bin := buildBinary(t)
	dir := writeScripts(t, map[string]string{"up.stp": `probe prometheus { $value = "up 1\n" }`})
	pid, addr := startExporter(t, bin, dir, 200)
	url := "http://" + addr + "/up.stp"
	scrape := func() (int, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if status, err := scrape(); err != nil || status != http.StatusOK {
		t.Fatalf("first scrape: %d, %v", status, err)
	}
	var hogs []net.Conn
	defer func() {
		for _, c := range hogs {
			c.Close()
		}
	}()
	for i := range 450 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		hogs = append(hogs, c)
		switch {
		case i < 300:
			keepAlive(c) // an error: the exporter closed it for another
		case i < 350:
			io.WriteString(c, "GET /up.stp HTTP/1.1\r\nHost: hog\r\n")
		}
	}
	for i := range 20 {
		start := time.Now()
		status, err := scrape()
		if err != nil || status != http.StatusOK {
			t.Fatalf("scrape %d with %d hogging connections: %d, %v", i, len(hogs), status, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("scrape %d took %v", i, d)
		}
	}
	if n := sockets(t, pid); n > 64+2 {
		t.Errorf("the exporter holds %d sockets, more than its cap (64), its listener and one more", n)
	}
}

// keepAlive sends a request on c and reads its answer, leaving c open;
// it gives up after 200 ms (c is open all the same: starved, an exporter
// would take its 300 hogs 5 minutes otherwise).
func keepAlive(c net.Conn) error {
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /up.stp HTTP/1.1\r\nHost: hog\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// startExporter runs bin's exporter on the scripts of dir, on a loopback
// port of its choosing, with RLIMIT_NOFILE at nofile, until the test ends;
// it returns the exporter's pid and address.
func startExporter(t *testing.T, bin, dir string, nofile int) (int, string) {
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" exporter -a 127.0.0.1 -p 0 -s "$1"`, nofile), bin, dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	serving := regexp.MustCompile(`^bpftap exporter: serving .* on (127\.0\.0\.1:\d+)$`)
	for lines.Scan() {
		if m := serving.FindStringSubmatch(lines.Text()); m != nil {
			go func() {
				for lines.Scan() {
					t.Log(lines.Text())
				}
			}()
			return cmd.Process.Pid, m[1]
		}
		t.Log(lines.Text())
	}
	t.Fatal("the exporter ended before serving")
	return 0, ""
}

// sockets counts the sockets process pid holds.
func sockets(t *testing.T, pid int) int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); strings.HasPrefix(link, "socket:") {
			n++
		}
	}
	return n
}

// clip is the start of a long answer, for a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
