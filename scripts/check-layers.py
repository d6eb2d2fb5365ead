#!/usr/bin/env python3
"""Checks the import rules of the API services (docs/ARCHITECTURE.md, "Layers").

For each service it reads every module under `src/`, finds the modules each one names
(`use crate::…`, `super::…`, `self::…` and the names those `use`s bind), and fails when
- a module under `mcp/` or `jobs/` names `http`, or anything but the crate root, `app` and
  `http` itself does;
- the modules name each other in a circle, between files (`http::contacts` → `ops::contacts`
  → `http::contacts`) or between the service's top-level modules (`db` → `ops` → `db`).
A module and its own parent or children are not a circle (a parent declares its children).
Comments, strings and `#[cfg(test)]` modules are not read.

Usage: scripts/check-layers.py [SERVICE_DIR ...]   (default: the two API services)
"""

import os
import re
import sys

DEFAULT_SERVICES = ["services/mail-api", "services/memory-api"]
# Modules that may name `http`: the crate root (declares it), the app (mounts it), the binary.
MAY_NAME_HTTP = {(), ("app",), ("main",)}
# Modules that must never name `http`.
NEVER_NAME_HTTP = ("mcp", "jobs")

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files(src):
    """{module path tuple: file} for every .rs file under src."""
    modules = {}
    for root, _dirs, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts in (["lib"], ["main"]):
                parts = [] if parts == ["lib"] else ["main"]
            modules[tuple(parts)] = os.path.join(root, name)
    return modules


def strip(text):
    """The source without comments, string and char literals, and `#[cfg(test)]` modules."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.[^']*|[^\\'])'", text[i:]).group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    # Drop `#[cfg(test)] mod name { … }` blocks.
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code)
        if not m:
            return code
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[: m.start()] + code[j:]


def use_paths(tree, prefix):
    """Expands a use tree (`a::{b, c::d as e}`) into (path, bound name) pairs."""
    tree = tree.strip()
    results = []
    brace = tree.find("{")
    if brace < 0:
        alias = None
        m = re.match(r"(.*?)\s+as\s+(\w+)$", tree, re.S)
        if m:
            tree, alias = m.group(1).strip(), m.group(2)
        parts = [p for p in re.split(r"\s*::\s*", tree) if p]
        if parts and parts[-1] == "self":
            parts = parts[:-1]
        path = prefix + parts
        if path and path[-1] != "*":
            results.append((path, alias or path[-1]))
        elif path:
            results.append((path[:-1], None))
        return results
    head = [p for p in re.split(r"\s*::\s*", tree[:brace].strip()) if p]
    body = tree[brace + 1 : tree.rfind("}")]
    depth, start = 0, 0
    for k, ch in enumerate(body + ","):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            item = body[start:k].strip()
            start = k + 1
            if item:
                results.extend(use_paths(item, prefix + head))
    return results


def resolve(module, path):
    """The absolute module path a `crate::`/`super::`/`self::` path starts from, or None."""
    if not path:
        return None
    first, rest = path[0], list(path[1:])
    if first == "crate":
        return rest
    if first in ("self", "super"):
        base = list(module)
        while path and path[0] in ("self", "super"):
            if path[0] == "super":
                if not base:
                    return None
                base = base[:-1]
            path = path[1:]
        return base + list(path)
    return None


def references(module, code):
    """(absolute path, line) for every path the module names."""
    refs = []
    bound = {}
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        line = code.count("\n", 0, m.start()) + 1
        for path, alias in use_paths(m.group(1), []):
            absolute = resolve(module, path)
            if absolute is None:
                continue
            refs.append((absolute, line))
            if alias:
                bound[alias] = absolute
    for m in re.finditer(rf"\b(crate|super|self)((?:\s*::\s*{IDENT})+)", code):
        parts = [m.group(1)] + [p for p in re.split(r"\s*::\s*", m.group(2)) if p]
        absolute = resolve(module, parts)
        if absolute is not None:
            refs.append((absolute, code.count("\n", 0, m.start()) + 1))
    for alias, target in bound.items():
        for m in re.finditer(rf"(?<![\w:]){re.escape(alias)}((?:\s*::\s*{IDENT})+)", code):
            parts = [p for p in re.split(r"\s*::\s*", m.group(1)) if p]
            refs.append((target + parts, code.count("\n", 0, m.start()) + 1))
    return refs


def target_module(path, modules):
    """The longest prefix of path that is a module."""
    for k in range(len(path), 0, -1):
        if tuple(path[:k]) in modules:
            return tuple(path[:k])
    return None


def related(a, b):
    """Whether one module is the other's ancestor (or the same)."""
    shorter, longer = sorted((a, b), key=len)
    return longer[: len(shorter)] == shorter


def cycles(edges):
    """The strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {t for ts in edges.values() for t in ts}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def name(module):
    return "::".join(module) or "crate"


def check(service):
    src = os.path.join(service, "src")
    modules = module_files(src)
    file_edges, top_edges, where = {}, {}, {}
    problems = []
    for module, path in sorted(modules.items()):
        with open(path, encoding="utf-8") as f:
            code = strip(f.read())
        for target, line in references(module, code):
            dest = target_module(target, modules)
            if dest is None or related(module, dest):
                continue
            location = f"{os.path.relpath(path, service)}:{line}"
            first_time = (module, dest) not in where
            if first_time and dest[0] == "http" and module[:1] != ("http",) and module not in MAY_NAME_HTTP:
                layer = "a module under " + module[0] + "/" if module[0] in NEVER_NAME_HTTP else "only the app"
                problems.append(f"{location}: {name(module)} names {name(dest)} ({layer} may not name http)")
            file_edges.setdefault(module, set()).add(dest)
            where.setdefault((module, dest), location)
            if module and module[0] != dest[0]:
                top_edges.setdefault(module[:1], set()).add(dest[:1])
                where.setdefault((module[:1], dest[:1]), location)
    for graph, kind in ((file_edges, "modules"), (top_edges, "top-level modules")):
        for component in cycles(graph):
            members = set(component)
            links = [
                f"    {name(a)} → {name(b)}  ({where[(a, b)]})"
                for a in component
                for b in sorted(graph.get(a, ()))
                if b in members
            ]
            problems.append(f"a circle between {kind} " + ", ".join(map(name, component)) + ":\n" + "\n".join(links))
    return problems


def main():
    services = sys.argv[1:] or DEFAULT_SERVICES
    failed = False
    for service in services:
        problems = check(service)
        if problems:
            failed = True
            print(f"{service}: {len(problems)} import rule(s) broken")
            for problem in problems:
                print("  " + problem)
        else:
            print(f"{service}: layers hold (no circle; http named only by the app)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
