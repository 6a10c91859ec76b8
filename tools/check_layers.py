#!/usr/bin/env python3
"""Checks tiletrain's layering: the layer order is the ```layers block of
docs/architecture.md (lowest first; each line a layer's name, then the
folders or files it holds). Fails, listing file:line, when

  - a file under src/ includes a header of a higher layer, or
  - files depend on each other in a loop: a header including itself again
    through other headers, or .c files calling each other's functions
    (directly or around a longer loop).

  tools/check_layers.py [--root DIR]   check the tree (default: this repository)
  tools/check_layers.py --self-test    checks that planted faults of each kind are caught

Only the Python standard library.
"""
import argparse
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
IDENT = re.compile(r"[A-Za-z_]\w*")
DIRECTIVE = re.compile(r"[ \t]*#")
KEYWORDS = {"static", "extern", "typedef", "inline", "struct", "union", "enum", "return",
            "if", "for", "while", "switch", "sizeof", "const", "void", "int", "char"}


# ---- the layer table -------------------------------------------------------

def read_layers(root):
    """[(name, [path prefixes])], lowest first, from docs/architecture.md."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if not block:
        raise SystemExit(f"{path}: no ```layers block")
    layers = []
    for line in block.group(1).splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            layers.append((words[0], [w.rstrip("/") for w in words[1:]]))
    return layers


def layer_of(rel, layers):
    """(rank, name) of the layer holding rel (the longest matching path), or None."""
    best = None
    for rank, (name, paths) in enumerate(layers):
        for p in paths:
            if rel == p or rel.startswith(p + "/"):
                if best is None or len(p) > best[2]:
                    best = (rank, name, len(p))
    return best[:2] if best else None


# ---- reading C -------------------------------------------------------------

def strip_c(text):
    """text with comments, string and character literals and preprocessor
    lines blanked out (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and DIRECTIVE.match(text, i):
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
            line_start = False
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def tokens(code):
    """(token, line) of identifiers and punctuation of stripped C code."""
    line = 1
    for m in re.finditer(r"[A-Za-z_]\w*|->|[=!<>]=|&&|\|\||\d[\w.]*|\S|\n", code):
        t = m.group(0)
        if t == "\n":
            line += 1
        else:
            yield t, line


def definitions(code):
    """Names of the functions and variables a .c file defines with external
    linkage (not static)."""
    names = set()
    item, depth, body = [], 0, False
    for t, _ in tokens(code):
        if depth == 0:
            if t == ";":
                names.update(variable_names(item))
                item = []
                continue
            if t == "{":
                if is_function(item):
                    name = function_name(item)
                    if name and "static" not in item:
                        names.add(name)
                    body = True
                depth = 1
                item.append(t)
                continue
            item.append(t)
        else:
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0 and body:
                    item, body = [], False
                    continue
            if depth and not body:
                item.append(t)
            elif depth == 0:
                item.append(t)
    return names


def is_function(item):
    """A top-level item followed by '{' is a function body when it ends with
    ')' (after optional attributes) and has no '='."""
    return "=" not in item and ")" in item and item[-1] == ")"


def function_name(item):
    depth = 0
    for k, t in enumerate(item):
        if t == "(":
            if depth == 0 and k > 0 and IDENT.fullmatch(item[k - 1]) and item[k - 1] not in KEYWORDS:
                return item[k - 1]
            depth += 1
        elif t == ")":
            depth -= 1
    return None


def variable_names(item):
    """Variables defined by a top-level declaration ending in ';'."""
    if not item or {"static", "extern", "typedef", "_Static_assert", "static_assert"} & set(item):
        return set()
    if "{" in item and ("=" not in item or item.index("{") < item.index("=")):
        # a struct/union/enum body (its own '=' included): only what follows it declares
        depth = 0
        for i in range(item.index("{"), len(item)):
            depth += (item[i] == "{") - (item[i] == "}")
            if depth == 0:
                item = item[i + 1:]
                break
        else:
            return set()
    head = item[:item.index("=")] if "=" in item else item
    if "(" in head and "=" not in item:
        return set()  # a prototype
    if "[" in head:  # an array: the name comes before its size
        head = head[:head.index("[")]
    for t in reversed(head):
        if IDENT.fullmatch(t) and t not in KEYWORDS:
            return {t}
    return set()


def references(code):
    """(identifier, line) of every identifier that is not a member name."""
    prev = None
    for t, line in tokens(code):
        if IDENT.fullmatch(t) and prev not in (".", "->"):
            yield t, line
        prev = t


# ---- the tree --------------------------------------------------------------

def source_files(root):
    files = []
    for top in ("src", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".c", ".h")):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(f.replace(os.sep, "/") for f in files)


def resolve(root, rel, target):
    """The repository path an #include "target" in rel names, or None."""
    for base in (os.path.dirname(rel), "src", "include"):
        cand = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def find_cycle(graph, members):
    """One loop through the strongly connected `members`, as a list of nodes."""
    start = min(members)
    path, seen = [start], {start}

    def walk(node):
        for nxt in sorted(graph.get(node, {})):
            if nxt not in members:
                continue
            if nxt == start and len(path) > 1:
                return True
            if nxt not in seen:
                seen.add(nxt)
                path.append(nxt)
                if walk(nxt):
                    return True
                path.pop()
        return False

    walk(start)
    return path


def strongly_connected(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(root):
    """The list of problems of the tree at root (empty when clean)."""
    layers = read_layers(root)
    problems = []
    files = source_files(root)
    texts = {}
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            texts[rel] = f.read()
    # edges: graph[a][b] = why a depends on b
    graph = {rel: {} for rel in files}
    for rel in files:
        if not rel.startswith("src/"):
            continue
        mine = layer_of(rel, layers)
        if mine is None:
            problems.append(f"{rel}: in no layer of docs/architecture.md")
            continue
        for lineno, line in enumerate(texts[rel].splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, rel, m.group(1))
            if target is None or target == rel:
                continue  # generated, or outside the tree
            graph[rel].setdefault(target, f"includes {target} (line {lineno})")
            theirs = layer_of(target, layers)
            if theirs and theirs[0] > mine[0]:
                problems.append(f"{rel}:{lineno}: {mine[1]} includes {target}, "
                                f"of the higher layer {theirs[1]}")
    # .c files calling each other's functions
    owner = {}
    stripped = {rel: strip_c(texts[rel]) for rel in files if rel.endswith(".c")}
    for rel, code in stripped.items():
        for name in definitions(code):
            owner.setdefault(name, []).append(rel)
    for rel, code in stripped.items():
        own = definitions(code)
        for name, lineno in references(code):
            if name in own:
                continue
            for other in owner.get(name, ()):
                if other != rel:
                    graph[rel].setdefault(other, f"uses {name} (line {lineno})")
    for comp in strongly_connected(graph):
        if len(comp) < 2:
            continue
        loop = find_cycle(graph, comp)
        steps = [f"{a} {graph[a][b]}" for a, b in zip(loop, loop[1:] + loop[:1])]
        problems.append("cycle: " + " -> ".join(steps) + f" -> back to {loop[0]}"
                        + (f" (the loop's files: {', '.join(sorted(comp))})"
                           if len(comp) > len(loop) else ""))
    return problems


# ---- self-test -------------------------------------------------------------

FAKE_DOC = """# Architecture

## Layers

```layers
public  include/tiletrain.h
core    src/core
ops     src/ops
cli     src/cli
```
"""

FAKE_FILES = {
    "include/tiletrain.h": "int tt_public(void);\n",
    "src/core/base.h": '#include "tiletrain.h"\nint base_fn(void);\n',
    "src/core/base.c": '#include "core/base.h"\n#include "ops/conv.h"\n'
                       "int base_fn(void) { return 1; }\n",
    "src/ops/conv.h": '#include "core/base.h"\nint conv_fn(void);\n',
    "src/ops/conv.c": '#include "ops/conv.h"\n#include "ops/pool.h"\n'
                      "/* pool_fn() in a comment is no call */\n"
                      "int conv_fn(void) { return base_fn() + pool_fn(); }\n",
    "src/ops/pool.h": "int pool_fn(void);\n",
    "src/ops/pool.c": '#include "ops/pool.h"\n#include "ops/conv.h"\n'
                      "struct s { int conv_fn; };\n"
                      "int pool_fn(void) { return conv_fn(); }\n",
    "src/ops/alone.c": '#include "ops/pool.h"\nstatic int helper(struct s *p) { return p->conv_fn; }\n'
                       "int alone_fn(void) { return pool_fn(); }\n",
    "src/cli/main.c": '#include "ops/conv.h"\nint main(void) { return conv_fn(); }\n',
    "src/ops/ring1.h": '#include "ops/ring2.h"\n',
    "src/ops/ring2.h": '#include "ops/pool.h"\n#include "ops/ring1.h"\n',
}


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        with open(os.path.join(tmp, "docs", "architecture.md"), "w") as f:
            f.write(FAKE_DOC)
        for rel, text in FAKE_FILES.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        problems = check(tmp)
        upward = [p for p in problems if "higher layer" in p]
        cycles = [p for p in problems if p.startswith("cycle:")]
        calls = [c for c in cycles if "src/ops/conv.c uses pool_fn" in c]
        ring = [c for c in cycles if "src/ops/ring1.h includes src/ops/ring2.h" in c]
        ok = (len(upward) == 1 and upward[0].startswith("src/core/base.c:2: core includes")
              and len(calls) == 1 and "src/ops/pool.c uses conv_fn" in calls[0]
              and "alone" not in calls[0] and len(ring) == 1 and "pool" not in ring[0]
              and len(problems) == 3)
        # and a clean tree passes: drop the upward include and the call back
        os.remove(os.path.join(tmp, "src/core/base.c"))
        with open(os.path.join(tmp, "src/ops/pool.c"), "w") as f:
            f.write('#include "ops/pool.h"\nint pool_fn(void) { return 2; }\n')
        with open(os.path.join(tmp, "src/ops/ring2.h"), "w") as f:
            f.write('#include "ops/pool.h"\n')
        clean = check(tmp)
    for p in problems:
        print("  found:", p)
    if not ok or clean:
        print("self-test FAILED" + (f"; the clean tree gave {clean}" if clean else ""))
        return 1
    print("self-test passed: the upward include and both cycles are caught; a clean tree passes")
    return 0


def main():
    ap = argparse.ArgumentParser(description="tiletrain's layer check (docs/architecture.md)")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the layers are in docs/architecture.md")
        return 1
    print("check_layers: no file includes a higher layer; no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
