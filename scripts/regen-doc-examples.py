#!/usr/bin/env python3
"""Rewrites the shown output of the shell sessions of a document with what
the commands print now (tests/docs/examples_test.cc checks them). Only
sessions whose shown output has no elision ("...") are rewritten; the others
are left for a person to shorten. Usage, from the repository root after a
build:

    python3 scripts/regen-doc-examples.py docs/PLANNER.md [README.md ...]
    git diff docs/   # review
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "cli")
NOT_RUN = ("mpirun ", "collkit bench --backend cuda", "bash scripts/")


def regen(doc):
    path = os.path.join(ROOT, doc)
    lines = open(path).read().split("\n")
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in os.listdir(ROOT):
            full = os.path.join(ROOT, name)
            if os.path.isdir(full) and not name.startswith(".") and name != "build":
                os.symlink(full, os.path.join(scratch, name))
        env = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"])
        i, in_block = 0, False
        while i < len(lines):
            line = lines[i]
            if line.startswith("```"):
                in_block = not in_block
                out.append(line)
                i += 1
                continue
            if not (in_block and line.startswith("$ ")):
                out.append(line)
                i += 1
                continue
            command = line[2:]
            out.append(line)
            i += 1
            while command.count("(") > command.count(")") and i < len(lines):
                command += "\n" + lines[i]
                out.append(lines[i])
                i += 1
            shown = []
            while i < len(lines) and not lines[i].startswith("$ ") and not lines[i].startswith("```"):
                shown.append(lines[i])
                i += 1
            if command.startswith(NOT_RUN):
                out.extend(shown)
                continue
            r = subprocess.run(["sh", "-c", command], cwd=scratch, env=env,
                               capture_output=True, text=True)
            real = (r.stdout + r.stderr).rstrip("\n")
            if shown and not any("..." in s for s in shown):
                out.extend(real.split("\n"))
            else:
                out.extend(shown)
    open(path, "w").write("\n".join(out))


for d in sys.argv[1:]:
    regen(d)
