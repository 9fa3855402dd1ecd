// Package browsertest opens bpftap's pictures (bpftap-flamegraph's SVGs)
// in a real browser for tests: Debian's chromium, headless. Screenshot
// gives the picture as the browser paints it, Browse the DOM after the
// picture's script ran (--dump-dom), Painted counts what is not
// background. A test without chromium is skipped, or fails where
// BPFTAP_REQUIRE_CHROMIUM is set (.ci/run sets it).
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Chromium is the path of Debian's chromium, or t is skipped (failed
// where BPFTAP_REQUIRE_CHROMIUM is set).
func Chromium(t testing.TB) string {
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("BPFTAP_REQUIRE_CHROMIUM") != "" {
			t.Fatalf("BPFTAP_REQUIRE_CHROMIUM is set, but: %v", err)
		}
		t.Skipf("no chromium to open the SVG in (apt-get install chromium; BPFTAP_REQUIRE_CHROMIUM=1 makes this a failure): %v", err)
	}
	return path
}

// Browse opens file at the URL fragment in headless chromium with the
// arguments given (--screenshot, --dump-dom) and returns its standard
// output.
func Browse(t testing.TB, chromium, file, fragment string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // ~3 s idle, 20 s beside two CPU hogs
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, chromium, append(args, "file://"+file+"#"+fragment)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}
	return stdout.Bytes()
}

// Screenshot is the PNG chromium takes of file in a window w by h
// pixels: it must be that size.
func Screenshot(t testing.TB, chromium, file, fragment string, w, h int) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	Browse(t, chromium, file, fragment, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", w, h))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: not a PNG: %v", fragment, err)
	}
	if size := img.Bounds().Size(); size != image.Pt(w, h) {
		t.Fatalf("screenshot %s is %v, want %dx%d", fragment, size, w, h)
	}
	return img
}

// Near: the colors differ by at most 3 in each channel (a browser may
// round).
func Near(a color.Color, b color.RGBA) bool {
	r, g, bl, _ := a.RGBA()
	d := func(x uint32, y uint8) bool { return int(x>>8)-int(y) <= 3 && int(y)-int(x>>8) <= 3 }
	return d(r, b.R) && d(g, b.G) && d(bl, b.B)
}

// Painted counts the pixels of the rows y0..y1 and columns x0..x1 (ends
// excluded) that are not the background.
func Painted(img image.Image, bg color.RGBA, x0, x1, y0, y1 int) int {
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			if !Near(img.At(x, y), bg) {
				n++
			}
		}
	}
	return n
}
