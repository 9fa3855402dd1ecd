// Zoom and search for bpftap-flamegraph's SVG. The Go side draws every
// frame as <g class="frame"> with its name, depth, and start and value in
// the chart's unit (data-name, data-depth, data-start, data-value); the
// group #frames gives the pixels the root spans and the unit. Layout works
// in those whole numbers, so a zoomed frame is placed exactly however deep
// the zoom. Without scripts the drawing stays as drawn, controls hidden.
"use strict";
(function () {
  var svg = document.documentElement;
  var box = document.getElementById("frames");
  var left = Number(box.getAttribute("data-x"));
  var span = Number(box.getAttribute("data-width"));
  var unit = box.getAttribute("data-unit");
  var resetZoom = document.getElementById("reset-zoom");
  var searchButton = document.getElementById("search");
  var matched = document.getElementById("matched");
  var details = document.getElementById("details");
  var highlight = "rgb(160,60,255)";
  var frames = [];
  var zoomed = null;
  var pattern = null;

  // Read the frames; each one's path (names from the root, joined by ";")
  // follows from the drawing order: a frame comes right after its caller.
  var names = [];
  box.querySelectorAll("g.frame").forEach(function (g) {
    var f = {
      g: g,
      rect: g.querySelector("rect"),
      label: g.querySelector("text"),
      name: g.getAttribute("data-name"),
      depth: Number(g.getAttribute("data-depth")),
      start: Number(g.getAttribute("data-start")),
      value: Number(g.getAttribute("data-value"))
    };
    f.fill = f.rect.getAttribute("fill");
    names.length = f.depth;
    names.push(f.name);
    f.path = names.slice(1).join(";");
    frames.push(f);
  });
  var root = frames[0];
  if (!root) {
    return;
  }

  function contains(outer, inner) {
    return outer.start <= inner.start && inner.start + inner.value <= outer.start + outer.value;
  }

  // fit: as much of a name as w pixels show (7 a character), cut with "..".
  function fit(name, w) {
    var chars = Array.from(name);
    var n = Math.floor((w - 6) / 7);
    if (n >= chars.length) {
      return name;
    }
    return n < 3 ? "" : chars.slice(0, n - 2).join("") + "..";
  }

  function place(f, x, w, dim) {
    f.g.removeAttribute("display");
    f.rect.setAttribute("x", x.toFixed(1));
    f.rect.setAttribute("width", w.toFixed(1));
    if (dim) {
      f.g.setAttribute("opacity", "0.5");
    } else {
      f.g.removeAttribute("opacity");
    }
    if (!f.label) {
      f.label = document.createElementNS(svg.namespaceURI, "text");
      f.label.setAttribute("y", (Number(f.rect.getAttribute("y")) + Number(f.rect.getAttribute("height")) - 4).toFixed(1));
      f.g.appendChild(f.label);
    }
    f.label.setAttribute("x", (x + 3).toFixed(1));
    f.label.textContent = fit(f.name, w);
  }

  // zoom: top's subtree fills the width, its callers span it dimmed, all
  // else is hidden; the root (or null) shows the whole graph.
  function zoom(top) {
    zoomed = top && top !== root ? top : null;
    var base = zoomed || root;
    var scale = span / base.value;
    frames.forEach(function (f) {
      if (f.depth >= base.depth && contains(base, f)) {
        place(f, left + (f.start - base.start) * scale, f.value * scale, false);
      } else if (f.depth < base.depth && contains(f, base)) {
        place(f, left, span, true);
      } else {
        f.g.setAttribute("display", "none");
      }
    });
    resetZoom.setAttribute("visibility", zoomed ? "visible" : "hidden");
  }

  // search: frames whose names match re are highlighted; the share shown is
  // of the matched frames' values, each counted once (a match inside a
  // match adds nothing). null clears the search.
  function search(re) {
    pattern = re;
    var covered = [];
    frames.forEach(function (f) {
      var hit = re !== null && re.test(f.name);
      f.rect.setAttribute("fill", hit ? highlight : f.fill);
      if (hit && !covered.some(function (c) { return contains(c, f); })) {
        covered = covered.filter(function (c) { return !contains(f, c); });
        covered.push(f);
      }
    });
    var sum = covered.reduce(function (s, c) { return s + c.value; }, 0);
    matched.textContent = re === null ? "" :
      "Matched " + sum + " of " + root.value + (unit ? " " + unit : "") + " (" + (100 * sum / root.value).toFixed(2) + "%)";
    searchButton.textContent = re === null ? "Search" : "Clear search";
  }

  // searchFor: the frames matching the regular expression source, or a
  // message that it is none.
  function searchFor(source) {
    try {
      search(new RegExp(source));
    } catch (e) {
      search(null);
      matched.textContent = "Not a regular expression: " + source;
    }
  }

  function ask() {
    var source = window.prompt("Search frames for the regular expression:", pattern ? pattern.source : "");
    if (source !== null && source !== "") {
      searchFor(source);
    }
  }

  function frameOf(target) {
    var g = target.closest && target.closest("g.frame");
    return g ? frames.find(function (f) { return f.g === g; }) : null;
  }

  box.addEventListener("click", function (e) {
    var f = frameOf(e.target);
    if (f) {
      zoom(f);
    }
  });
  box.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target);
    details.textContent = f ? f.g.querySelector("title").textContent : "";
  });
  box.addEventListener("mouseout", function () {
    details.textContent = "";
  });
  resetZoom.addEventListener("click", function () {
    zoom(null);
  });
  searchButton.addEventListener("click", function () {
    if (pattern) {
      search(null);
    } else {
      ask();
    }
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {
      e.preventDefault();
      ask();
    } else if (e.key === "Escape") {
      zoom(null);
      search(null);
    }
  });

  // The URL's fragment may ask for a zoom and a search:
  // #zoom=main;work&search=^hot (each value percent-encoded where needed).
  function decode(s) {
    try {
      return decodeURIComponent(s);
    } catch (e) {
      return s;
    }
  }
  location.hash.slice(1).split("&").forEach(function (param) {
    var eq = param.indexOf("=");
    var key = eq < 0 ? param : param.slice(0, eq);
    var value = eq < 0 ? "" : decode(param.slice(eq + 1));
    if (key === "zoom") {
      var top = frames.find(function (f) { return f.path === value; });
      zoom(top || null);
      details.textContent = top ? "" : "No frame " + value + " to zoom to";
    } else if (key === "search") {
      searchFor(value);
    }
  });
  searchButton.setAttribute("visibility", "visible");
  svg.setAttribute("class", "interactive");
})();
