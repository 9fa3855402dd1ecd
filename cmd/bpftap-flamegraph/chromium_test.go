package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpftap/bpftap/internal/browsertest"
)

// The drawings the browser opens: a flame graph (all: main: other 2, work
// 4: hot 3) and a bar chart.
const (
	browserStacks = "main;work;hot 3\nmain;work 1\nmain;other 2\n"
	browserBars   = "tid 1;read 500\ntid 1;futex 300\ntid 2;write 400\ntid 2;read 100\ntid 3;futex 50\n"
	background    = "rgb(248,248,248)" // #f8f8f8, beginSVG's
	searchColor   = "rgb(160,60,255)"  // flame.js's highlight
)

// drawnTo writes the command's drawing of input to a file in dir, and
// returns the file and the drawing read back.
func drawnTo(t *testing.T, dir, input string, args ...string) (string, element) {
	var stdout, stderr bytes.Buffer
	if status := run(args, strings.NewReader(input), &stdout, &stderr); status != 0 {
		t.Fatalf("%q: exit status %d: %s", args, status, stderr.String())
	}
	file := filepath.Join(dir, fmt.Sprintf("chart%d.svg", len(args)))
	if err := os.WriteFile(file, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, draw(t, input, args...)
}

// rgb parses an "rgb(R,G,B)" color.
func rgb(t *testing.T, s string) color.RGBA {
	var c color.RGBA
	if _, err := fmt.Sscanf(s, "rgb(%d,%d,%d)", &c.R, &c.G, &c.B); err != nil {
		t.Fatalf("color %q: %v", s, err)
	}
	c.A = 255
	return c
}

// checkBoxes: every box (the rect of each element of the class) at least
// 8 pixels wide is painted in its fill color, sampled in its top row
// (above the label's letters) inside its right end (clear of the rounded
// corner).
func checkBoxes(t *testing.T, img image.Image, svg element, class string) {
	t.Helper()
	for _, e := range svg.all(class) {
		rect := e.child("rect")
		x, y := int(rect.number("x")+rect.number("width"))-4, int(rect.number("y"))+1
		if rect.number("width") < 8 {
			continue
		}
		if got, want := img.At(x, y), rgb(t, rect.attr("fill")); !browsertest.Near(got, want) {
			t.Errorf("%s %q: pixel (%d,%d) is %v, want %v", class, e.child("title").Text, x, y, got, want)
		}
	}
}

// TestChromium opens a flame graph and a bar chart in headless Chromium:
// screenshots of the right size show each frame and segment in its color,
// and nothing where no frame is; shown as an image (no scripts run) the
// flame graph is the same, without controls; the flame graph's script,
// asked through the URL's fragment, zooms (the zoomed frame spans the
// width, its callers dimmed, the rest hidden) and searches (matches
// highlighted, the matched share shown), in the DOM and on the screen,
// and answers clicks, the mouse and keys as a user's.
func TestChromium(t *testing.T) {
	chromium := browsertest.Chromium(t)
	dir := t.TempDir()
	flame, flameSVG := drawnTo(t, dir, browserStacks)
	checkFlameScreenshots(t, chromium, dir, flame, flameSVG)
	checkScriptDOM(t, chromium, flame, flameSVG)
	checkScriptEvents(t, chromium, dir, flame)

	bars, barsSVG := drawnTo(t, dir, browserBars, "-chart", "bars", "-unit", "ns")
	img := browsertest.Screenshot(t, chromium, bars, "", 1200, 300)
	checkBoxes(t, img, barsSVG, "segment")
	checkBoxes(t, img, barsSVG, "legend")
	// bars from y 40, 60, 80 (16 high); the legend from y 110
	checkRegions(t, "bars", img, []region{{"between the bars and the legend", 0, 1200, 98, 109, 0, 0, background}})
}

// region is a rectangle of a screenshot (x1 and y1 excluded) and how many
// of its pixels may differ from the background bg.
type region struct {
	what           string
	x0, x1, y0, y1 int
	min, max       int
	bg             string
}

func checkRegions(t *testing.T, shot string, img image.Image, regions []region) {
	t.Helper()
	for _, r := range regions {
		if n := browsertest.Painted(img, rgb(t, r.bg), r.x0, r.x1, r.y0, r.y1); n < r.min || n > r.max {
			t.Errorf("%s: %s: %d pixels painted, want %d..%d", shot, r.what, n, r.min, r.max)
		}
	}
}

// checkFlameScreenshots: the flame graph as drawn, as an image (no
// scripts run), and zoomed and searched.
func checkFlameScreenshots(t *testing.T, chromium, dir, flame string, svg element) {
	// 134 pixels high; frames: all from y 88, main 72, other and work 56,
	// hot 40 (rows of 16, boxes of 15); hot from x 403.3 to 993.3; the
	// script's Search button right of the title
	frames := []region{
		{"the rows of all and main", 12, 1188, 73, 102, 1176 * 29 * 9 / 10, 1176 * 29, background},
		{"left of hot", 12, 400, 41, 55, 0, 0, background},
		{"right of hot", 997, 1188, 41, 55, 0, 0, background},
		{"between the title and the frames", 0, 1200, 27, 39, 0, 0, background},
		{"below the drawing", 0, 1200, 140, 300, 0, 0, "rgb(255,255,255)"},
	}
	img := browsertest.Screenshot(t, chromium, flame, "", 1200, 300)
	checkBoxes(t, img, svg, "frame")
	checkRegions(t, "flame graph", img, append(frames, region{"the Search button", 1100, 1190, 8, 24, 1, 1000, background}))

	page := filepath.Join(dir, "image.html")
	html := fmt.Sprintf(`<!DOCTYPE html><html><body style="margin:0"><img src="%s" alt="flame graph"></body></html>`, filepath.Base(flame))
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	img = browsertest.Screenshot(t, chromium, page, "", 1200, 300)
	checkBoxes(t, img, svg, "frame")
	checkRegions(t, "flame graph as an image", img, append(frames, region{"the Search button", 1100, 1190, 8, 24, 0, 0, background}))

	img = browsertest.Screenshot(t, chromium, flame, "zoom=main;work&search=^hot$", 1200, 300)
	for _, p := range []struct {
		what  string
		x, y  int
		color string
	}{
		{"work at the right end", 1185, 57, frameFill(t, svg, "work")},
		{"hot at the zoom's middle", 595, 41, searchColor},
		{"right of hot, zoomed", 1000, 48, background},
	} {
		if got, want := img.At(p.x, p.y), rgb(t, p.color); !browsertest.Near(got, want) {
			t.Errorf("zoomed and searched: %s: pixel (%d,%d) is %v, want %v", p.what, p.x, p.y, got, want)
		}
	}
}

// frameFill is the fill of the frame named name.
func frameFill(t *testing.T, svg element, name string) string {
	for _, f := range svg.all("frame") {
		if f.attr("data-name") == name {
			return f.child("rect").attr("fill")
		}
	}
	t.Fatalf("no frame %s", name)
	return ""
}

// checkScriptDOM: the DOM after the script ran with the fragments asking
// for a zoom and a search, or for what cannot be done; a frame's fill is
// "warm" when it is the one svg, the drawing as written, gives it.
func checkScriptDOM(t *testing.T, chromium, file string, svg element) {
	for _, c := range []struct {
		fragment string
		want     []string // "id text" of the controls, then "name display opacity x width fill" of the frames
	}{
		{"", []string{
			"reset-zoom hidden Reset zoom", "search visible Search", "details  ", "matched  ",
			"all   10.0 1180.0 warm", "main   10.0 1180.0 warm", "other   10.0 393.3 warm", "work   403.3 786.7 warm", "hot   403.3 590.0 warm",
		}},
		{"zoom=main;work&search=%5Eh", []string{
			"reset-zoom visible Reset zoom", "search visible Clear search", "details  ", "matched  Matched 3 of 6 samples (50.00%)",
			"all  0.5 10.0 1180.0 warm", "main  0.5 10.0 1180.0 warm", "other none  10.0 393.3 warm", "work   10.0 1180.0 warm", "hot   10.0 885.0 " + searchColor,
		}},
		{"search=o", []string{ // other and work match; main;work;hot's share counts once
			"reset-zoom hidden Reset zoom", "search visible Clear search", "details  ", "matched  Matched 6 of 6 samples (100.00%)",
			"all   10.0 1180.0 warm", "main   10.0 1180.0 warm", "other   10.0 393.3 " + searchColor, "work   403.3 786.7 " + searchColor, "hot   403.3 590.0 " + searchColor,
		}},
		{"zoom=main;nosuch&search=(", []string{
			"reset-zoom hidden Reset zoom", "search visible Search", "details  No frame main;nosuch to zoom to", "matched  Not a regular expression: (",
			"all   10.0 1180.0 warm", "main   10.0 1180.0 warm", "other   10.0 393.3 warm", "work   403.3 786.7 warm", "hot   403.3 590.0 warm",
		}},
	} {
		var dom element
		out := browsertest.Browse(t, chromium, file, c.fragment, "--dump-dom")
		if err := xml.Unmarshal(out, &dom); err != nil {
			t.Fatalf("#%s: the DOM is not XML: %v\n%s", c.fragment, err, out)
		}
		var got []string
		for _, e := range dom.Children {
			if id := e.attr("id"); id != "" && id != "frames" {
				got = append(got, fmt.Sprintf("%s %s %s", id, e.attr("visibility"), e.Text))
			}
		}
		for _, f := range dom.all("frame") {
			rect := f.child("rect")
			fill := rect.attr("fill")
			if fill == frameFill(t, svg, f.attr("data-name")) {
				fill = "warm"
			}
			got = append(got, fmt.Sprintf("%s %s %s %s %s %s", f.attr("data-name"), f.attr("display"), f.attr("opacity"), rect.attr("x"), rect.attr("width"), fill))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("#%s: DOM\n%s\nwant\n%s", c.fragment, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// eventsPage shows the flame graph %s in an object and acts as a user
// would on it, with clicks, a mouse over, keys, and the prompt answered;
// it writes the drawing's state after each step in #out.
const eventsPage = `<!DOCTYPE html><html><body>
<object id="chart" data="%s" type="image/svg+xml"></object>
<pre id="out"></pre>
<script>
document.getElementById("chart").addEventListener("load", function () {
  var win = this.contentWindow, doc = this.contentDocument, out = [];
  function frame(name) {
    return Array.from(doc.querySelectorAll("g.frame")).find(function (g) { return g.getAttribute("data-name") === name; });
  }
  function click(element) {
    element.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  }
  function key(init) {
    win.dispatchEvent(new KeyboardEvent("keydown", init));
  }
  function answer(text) {
    win.prompt = function () { return text; };
  }
  function state(step) {
    out.push(step + ": " + ["main", "other", "work", "hot"].map(function (name) {
      var g = frame(name), rect = g.querySelector("rect");
      return name + " " + (g.getAttribute("display") || "shown") + (g.getAttribute("opacity") ? " dim " : " ") +
        rect.getAttribute("width") + (rect.getAttribute("fill") === "` + searchColor + `" ? " found" : "");
    }).join(", ") + ["reset-zoom", "search", "details", "matched"].map(function (id) {
      var e = doc.getElementById(id);
      return e.getAttribute("visibility") === "hidden" || e.textContent === "" ? "" : " | " + e.textContent;
    }).join(""));
  }
  click(frame("work").querySelector("text"));
  state("click work");
  frame("hot").querySelector("rect").dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  state("mouse over hot");
  answer("^hot$");
  click(doc.getElementById("search"));
  state("Search ^hot$");
  click(doc.getElementById("search"));
  state("Clear search");
  answer("o");
  key({key: "f", ctrlKey: true});
  state("Ctrl-F o");
  click(frame("hot").querySelector("rect"));
  state("click hot");
  click(doc.getElementById("reset-zoom"));
  state("Reset zoom");
  click(frame("other").querySelector("rect"));
  key({key: "Escape"});
  state("click other, Escape");
  document.getElementById("out").textContent = out.join("\n");
});
</script>
</body></html>
`

// checkScriptEvents: clicks, keys and the prompt drive the script in a
// page that holds the flame graph, as a user's do.
func checkScriptEvents(t *testing.T, chromium, dir, flame string) {
	page := filepath.Join(dir, "events.html")
	if err := os.WriteFile(page, fmt.Appendf(nil, eventsPage, filepath.Base(flame)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(browsertest.Browse(t, chromium, page, "", "--allow-file-access-from-files", "--dump-dom"))
	_, out, _ := strings.Cut(dom, `<pre id="out">`)
	out, _, _ = strings.Cut(out, "</pre>")
	want := []string{
		"click work: main shown dim 1180.0, other none 393.3, work shown 1180.0, hot shown 885.0 | Reset zoom | Search",
		"mouse over hot: main shown dim 1180.0, other none 393.3, work shown 1180.0, hot shown 885.0 | Reset zoom | Search | hot (3 samples, 50.00%)",
		"Search ^hot$: main shown dim 1180.0, other none 393.3, work shown 1180.0, hot shown 885.0 found | Reset zoom | Clear search | hot (3 samples, 50.00%) | Matched 3 of 6 samples (50.00%)",
		"Clear search: main shown dim 1180.0, other none 393.3, work shown 1180.0, hot shown 885.0 | Reset zoom | Search | hot (3 samples, 50.00%)",
		"Ctrl-F o: main shown dim 1180.0, other none 393.3 found, work shown 1180.0 found, hot shown 885.0 found | Reset zoom | Clear search | hot (3 samples, 50.00%) | Matched 6 of 6 samples (100.00%)",
		"click hot: main shown dim 1180.0, other none 393.3 found, work shown dim 1180.0 found, hot shown 1180.0 found | Reset zoom | Clear search | hot (3 samples, 50.00%) | Matched 6 of 6 samples (100.00%)",
		"Reset zoom: main shown 1180.0, other shown 393.3 found, work shown 786.7 found, hot shown 590.0 found | Clear search | hot (3 samples, 50.00%) | Matched 6 of 6 samples (100.00%)",
		"click other, Escape: main shown 1180.0, other shown 393.3, work shown 786.7, hot shown 590.0 | Search | hot (3 samples, 50.00%)",
	}
	if got := html.UnescapeString(out); got != strings.Join(want, "\n") {
		t.Errorf("the script's answers to events:\n%s\nwant\n%s\nthe page:\n%s", got, strings.Join(want, "\n"), dom)
	}
}
