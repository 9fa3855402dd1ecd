#!/usr/bin/env python3
"""Annotates error-test chunk files with the messages the real stap prints.

Each file holds chunks introduced by a line `-- NAME --`; the chunk text is a
script (lines starting with `### ` are expectations and are regenerated).
A line `#! args: A B` passes command-line arguments, `#! guru` adds -g."""
import re, subprocess, sys

DROP = ("WARNING: Kernel function symbol table missing", "Tip: ",
        "Pass 1: parse failed.", "Rerun with -v to see them.")

def shown(line):
    """bpftap's one deviation: a source line shows control bytes as '?'
    (syntax.Source.DisplayLine); stap echoes them to the terminal."""
    if line.lstrip().startswith("source: "):
        return "".join("?" if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7f else c for c in line)
    return line

def annotate(path):
    text = open(path, encoding="latin-1").read()
    parts = re.split(r"^(-- \S+ --)\n", text, flags=re.M)
    out = []
    for head, body in zip(parts[1::2], parts[2::2]):
        script = "\n".join(l for l in body.split("\n") if not l.startswith("###")).rstrip("\n")
        cmd = ["stap", "-r", "/var/tmp/stap-oracle/kernel-tree", "-p1"]
        args = []
        for l in script.split("\n"):
            if l == "#! guru":
                cmd.append("-g")
            if l.startswith("#! args: "):
                args = l[len("#! args: "):].split()
        r = subprocess.run(cmd + ["-e", script.encode("latin-1")] + args, capture_output=True)
        if r.returncode == 0:
            print(path, head, "stap accepted it", file=sys.stderr)
        lines = [shown(l) for l in r.stderr.decode("latin-1").split("\n") if l and not l.startswith(DROP)]
        out.append(head + "\n" + script + "\n" + "".join("### " + l + "\n" for l in lines))
    open(path, "w", encoding="latin-1").write("".join(out))

for p in sys.argv[1:]:
    annotate(p)
