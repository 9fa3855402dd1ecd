#!/usr/bin/python3
"""Lists SystemTap's documented tapset functions and probe aliases.

Reads the tapset directory of a SystemTap source tree: a documented
function is a `/**` comment whose first line is ` * sfunction NAME - ...`,
followed by its declaration; a documented probe alias is one whose first
line is ` * probe NAME - ...`. Prints one line per name:
  function NAME:RESULT(PARAM:TYPE,...) FILE
  probe NAME FILE
"""
import os, re, sys

root = sys.argv[1]
seen = set()
out = []
for d, dirs, files in os.walk(os.path.join(root, 'tapset')):
    # the BPF and Dyninst runtimes' own variants of the same names
    dirs[:] = sorted(x for x in dirs if x not in ('bpf', 'dyninst'))
    for f in sorted(files):
        if not f.endswith(('.stp', '.stpm')):
            continue
        p = os.path.join(d, f)
        rel = os.path.relpath(p, root)
        lines = open(p, errors='replace').read().split('\n')
        for i, l in enumerate(lines):
            if not l.strip().startswith('/**') or i + 1 >= len(lines):
                continue
            m = re.match(r'\s*\*\s*(sfunction|probe)\s+(\S+)', lines[i + 1])
            if not m:
                continue
            kind, name = m.group(1), m.group(2)
            if kind == 'probe':
                key = ('probe', name)
                if key not in seen:
                    seen.add(key); out.append('probe %s %s' % (name, rel))
                continue
            # the declaration after the comment
            j = i + 1
            while j < len(lines) and '*/' not in lines[j]:
                j += 1
            sig = None
            for k in range(j + 1, min(j + 12, len(lines))):
                dm = re.match(r'\s*function\s+(\w+)\s*(:\s*\w+)?\s*\(([^)]*)\)', lines[k])
                if dm:
                    result = (dm.group(2) or '').replace(' ', '').lstrip(':')
                    params = []
                    for a in [x.strip() for x in dm.group(3).split(',') if x.strip()]:
                        n, _, t = a.partition(':')
                        params.append('%s:%s' % (n.strip(), t.strip() or '?'))
                    sig = '%s%s(%s)' % (dm.group(1), ':' + result if result else '', ','.join(params))
                    break
            if sig is None:
                sig = name + '(?)'
            key = ('function', sig)
            if key not in seen:
                seen.add(key); out.append('function %s %s' % (sig, rel))
print('\n'.join(out))
