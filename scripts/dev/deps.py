#!/usr/bin/env python3
"""Checks that no files of the given folders depend on each other in a cycle.

    deps.py [-C ROOT] BUILD FOLDER...

BUILD and the FOLDERs are relative to ROOT (default: here), where #include "..." names are
found; BUILD holds their objects (BUILD/FOLDER/NAME.o, from `make`). A file depends on another
when it includes it, or when its object uses a function or variable the other's object defines
(nm). Every file is one concern, so a cycle means two concerns that cannot be read, tested or
changed apart. For each group of files in a cycle, prints one cycle through it, a dependency a
line, and exits 1; exits 0 when there is none, and with a line saying why when an object is
missing.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# C library functions that preload/ defines to act before the real one (preload/exec.c,
# preload/init.c's getenv): a file that calls one calls the C library, not their file.
INTERPOSED = {"getenv", "execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp",
              "execle"}


def symbols(obj):
    """(defined, used) global symbols of an object file."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRGSVW":
            defined.add(parts[2])
    return defined, used


def edges(build, folders):
    """{file: {file it depends on: why}} over the .c and .h files of folders."""
    files = sorted(os.path.join(d, f) for d in folders for f in os.listdir(d)
                   if f.endswith((".c", ".h")))
    deps = {f: {} for f in files}
    owner, uses = {}, {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for inc in INCLUDE.findall(src.read()):
                for cand in (inc, os.path.join(os.path.dirname(f), inc)):
                    if cand in deps and cand != f:
                        deps[f][cand] = "includes it"
        if f.endswith(".c"):
            obj = os.path.join(build, f[:-2] + ".o")
            if not os.path.exists(obj):
                sys.exit(f"deps: {obj} is missing: run make first")
            defined, uses[f] = symbols(obj)
            for name in defined:
                owner[name] = f
    for f, names in uses.items():
        for name in sorted(names):
            other = owner.get(name)
            if other and other != f and name not in INTERPOSED:
                deps[f].setdefault(other, f"uses {name}")
    return deps


def cycles(deps):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in deps:
        if v not in index:
            visit(v)
    return found


def path_back(deps, comp):
    """One cycle through comp's first file, as a list of (file, next file)."""
    start, members = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in deps[v]:
            if w == start:
                hops = [(v, w)]
                while prev[v] is not None:
                    hops.insert(0, (prev[v], v))
                    v = prev[v]
                return hops
            if w in members and w not in prev:
                prev[w] = v
                todo.append(w)
    return []


def main():
    args = sys.argv[1:]
    if args[:1] == ["-C"] and len(args) > 1:
        os.chdir(args[1])
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    build, folders = args[0], args[1:]
    deps = edges(build, folders)
    found = cycles(deps)
    for comp in found:
        print(f"deps: a cycle between {', '.join(comp)}:")
        for a, b in path_back(deps, comp):
            print(f"  {a} -> {b} ({deps[a][b]})")
    if not found:
        print(f"deps: no cycle between the files of {', '.join(folders)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
