package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// element is an XML element of a drawing, read back with encoding/xml.
type element struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []element  `xml:",any"`
}

func (e element) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (e element) number(name string) float64 {
	v, _ := strconv.ParseFloat(e.attr(name), 64)
	return v
}

// child is e's first child element named name (an empty one if none).
func (e element) child(name string) element {
	for _, c := range e.Children {
		if c.XMLName.Local == name {
			return c
		}
	}
	return element{}
}

// all is every element under e (e included) of the class, in document order.
func (e element) all(class string) []element {
	var found []element
	if e.attr("class") == class {
		found = append(found, e)
	}
	for _, c := range e.Children {
		found = append(found, c.all(class)...)
	}
	return found
}

// draw runs the command on the folded input with args and reads its SVG
// back: it must be well-formed XML (every token, to the end), an svg
// element.
func draw(t *testing.T, input string, args ...string) element {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if status := run(args, strings.NewReader(input), &stdout, &stderr); status != 0 {
		t.Fatalf("%q: exit status %d: %s", args, status, stderr.String())
	}
	d := xml.NewDecoder(bytes.NewReader(stdout.Bytes()))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%q: not well-formed XML: %v\n%s", args, err, stdout.String())
		}
	}
	var svg element
	if err := xml.Unmarshal(stdout.Bytes(), &svg); err != nil || svg.XMLName.Local != "svg" {
		t.Fatalf("%q: no svg element (%v):\n%s", args, err, stdout.String())
	}
	return svg
}

// TestFlameFrames: the frames drawn from folded stacks, each with its
// name, depth, start and value for the script, its tooltip, its box and
// its label (cut to what fits, at a character, never inside one); names
// with markup characters or what XML cannot hold come back as written,
// or with U+FFFD; frames narrower than a tenth of a pixel are left out.
func TestFlameFrames(t *testing.T) {
	long := strings.Repeat("ç", 200)
	for _, c := range []struct {
		input string
		want  []string // "depth name start value x width title label" of each frame
	}{
		{"main;work;hot 3\nmain;work 1\nmain;other 2\n", []string{
			"0 all 0 6 10.0 1180.0 all (6 samples, 100.00%) all",
			"1 main 0 6 10.0 1180.0 main (6 samples, 100.00%) main",
			"2 other 0 2 10.0 393.3 other (2 samples, 33.33%) other",
			"2 work 2 4 403.3 786.7 work (4 samples, 66.67%) work",
			"3 hot 2 3 403.3 590.0 hot (3 samples, 50.00%) hot",
		}},
		{"x;a<b>&\"c' 1\nx;bad\x01\xff 1\n", []string{
			"0 all 0 2 10.0 1180.0 all (2 samples, 100.00%) all",
			"1 x 0 2 10.0 1180.0 x (2 samples, 100.00%) x",
			"2 a<b>&\"c' 0 1 10.0 590.0 a<b>&\"c' (1 samples, 50.00%) a<b>&\"c'",
			"2 bad\uFFFD\uFFFD 1 1 600.0 590.0 bad\uFFFD\uFFFD (1 samples, 50.00%) bad\uFFFD\uFFFD",
		}},
		{long + " 1\n", []string{
			"0 all 0 1 10.0 1180.0 all (1 samples, 100.00%) all",
			fmt.Sprintf("1 %s 0 1 10.0 1180.0 %s (1 samples, 100.00%%) %s..", long, long, long[:2*165]),
		}},
		{"big 100000\nsmall 1\n", []string{
			"0 all 0 100001 10.0 1180.0 all (100001 samples, 100.00%) all",
			"1 big 0 100000 10.0 1180.0 big (100000 samples, 100.00%) big",
		}},
		{"", nil},
	} {
		svg := draw(t, c.input)
		var got []string
		for _, f := range svg.all("frame") {
			rect := f.child("rect")
			got = append(got, fmt.Sprintf("%s %s %s %s %s %s %s %s", f.attr("data-depth"), f.attr("data-name"),
				f.attr("data-start"), f.attr("data-value"), rect.attr("x"), rect.attr("width"), f.child("title").Text, f.child("text").Text))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%q: frames\n%s\nwant\n%s", c.input, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// TestFlameScript: the script and what it works on are in the drawing,
// the controls hidden (a viewer without scripts shows none), and the
// script holds nothing that would end its CDATA section.
func TestFlameScript(t *testing.T) {
	if strings.Contains(flameScript, "]]>") {
		t.Fatal("flame.js holds ]]>")
	}
	svg := draw(t, "main;hot 1\n", "-unit", "ns")
	var frames, script element
	for _, c := range svg.Children {
		switch {
		case c.attr("id") == "frames":
			frames = c
		case c.XMLName.Local == "script":
			script = c
		case c.attr("class") == "control" && c.attr("visibility") != "hidden":
			t.Errorf("control %s shown without the script", c.attr("id"))
		}
	}
	if frames.attr("data-unit") != "ns" || frames.attr("data-x") != "10" || frames.attr("data-width") != "1180" {
		t.Errorf("frames group %v, want the unit ns, x 10 and width 1180", frames.Attrs)
	}
	if strings.TrimSpace(script.Text) != strings.TrimSpace(flameScript) {
		t.Errorf("script %.200q..., want flame.js", script.Text)
	}
}

// TestBars: a bar per thread, longest first; segments in the order of the
// categories' totals, side by side, each as wide as its value on the
// scale of the longest bar, that bar and its total filling the drawing's
// width;
// a category has one color in every bar and in the legend; tooltips give
// the value and its share of the thread; names come back as written.
func TestBars(t *testing.T) {
	input := `tid 4242;read 600
tid 4242;futex 200
tid 4242;read 200
t<&>"';wr<i>te 300
tid 7;futex 50
tid 7;read 50
tid 7;wr<i>te 1
tid 9;read 0
`
	svg := draw(t, input, "-chart", "bars", "-unit", "ns")
	want := []string{
		"tid 4242: 1000 ns",
		"  read 800 ns, 80.00% of 1000 ns",
		"  futex 200 ns, 20.00% of 1000 ns",
		`t<&>"': 300 ns`,
		`  wr<i>te 300 ns, 100.00% of 300 ns`,
		"tid 7: 101 ns",
		"  read 50 ns, 49.50% of 101 ns",
		"  wr<i>te 1 ns, 0.99% of 101 ns",
		"  futex 50 ns, 49.50% of 101 ns",
		"tid 9: 0 ns",
		"  read 0 ns, 0.00% of 0 ns",
	}
	var got []string
	colors := map[string]string{}
	var geometry barGeometry
	totals := 0
	for _, e := range svg.Children {
		switch e.attr("class") {
		case "thread":
			got = append(got, e.child("title").Text)
			geometry.next = geometry.left
		case "segment":
			_, tip, _ := strings.Cut(e.child("title").Text, ": ")
			got = append(got, "  "+tip)
			checkColor(t, colors, e.attr("data-category"), e.child("rect").attr("fill"))
			geometry.check(t, e)
		case "total":
			end := e.number("x") + float64(len(e.Text))*charWidth
			longest := totals == 0
			totals++
			if end > width-margin || longest && end < width-margin-20 {
				t.Errorf("total %q ends at %.1f, want at most %.0f (the longest bar's at least %.0f)", e.Text, end, width-margin, width-margin-20)
			}
		case "legend":
			got = append(got, "legend "+e.child("text").Text)
			checkColor(t, colors, e.attr("data-category"), e.child("rect").attr("fill"))
		}
	}
	want = append(want, "legend read 60.67%", "legend wr<i>te 21.48%", "legend futex 17.84%")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("bars\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkColor: a category's every element has one color, no other
// category's.
func checkColor(t *testing.T, colors map[string]string, category, fill string) {
	t.Helper()
	if c, ok := colors[category]; ok && c != fill {
		t.Errorf("category %s in %s and %s", category, c, fill)
	}
	for other, c := range colors {
		if other != category && c == fill {
			t.Errorf("categories %s and %s share %s", other, category, fill)
		}
	}
	colors[category] = fill
}

// barGeometry is what the segments seen so far say of the bars: the
// scale and the left edge (the first segment's, of the longest bar), and
// where the next segment of the current bar starts.
type barGeometry struct {
	scale, left, next float64
}

// check: the segment e is as wide as its value on the scale and starts
// where the one before it in its bar ended, or at the bars' left edge.
func (g *barGeometry) check(t *testing.T, e element) {
	t.Helper()
	tip := e.child("title").Text
	_, quantity, _ := strings.Cut(tip, ": "+e.attr("data-category")+" ")
	value, _ := strconv.ParseFloat(strings.Fields(quantity)[0], 64)
	rect := e.child("rect")
	x, w := rect.number("x"), rect.number("width")
	if g.scale == 0 {
		g.scale, g.left, g.next = w/value, x, x
	}
	if math.Abs(w-value*g.scale) > 0.1 || math.Abs(x-g.next) > 0.1 {
		t.Errorf("%s: x %.1f width %.1f, want %.1f and %.1f (scale %.4f)", tip, x, w, g.next, value*g.scale, g.scale)
	}
	g.next = x + w
}
