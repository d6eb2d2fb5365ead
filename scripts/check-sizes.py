#!/usr/bin/env python3
"""Checks the size of the workspace's Rust files (docs/CONTRIBUTING.md, "Before you commit").

Fails, naming each offending file and its line count, when
- a `.rs` file under `services/*/src` or `crates/*/src` is over 800 lines, except the diesel
  schemas named in EXEMPT (one `table!` per table: they grow with the database);
- a `.rs` file under any `tests/` folder is over 1,000 lines.
A file over its limit is split along its seams into modules (a folder with a `mod.rs`).

Usage: scripts/check-sizes.py   (from anywhere; it reads the workspace this script is in)
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_LIMIT = 800
TEST_LIMIT = 1000
# Source files allowed over the limit, by path from the workspace root.
EXEMPT = {
    "services/mail-api/src/db/schema.rs",
    "services/memory-api/src/db/schema.rs",
}
# Folders never read: version control, build output, installed packages.
SKIP = {".git", "target", "node_modules", ".venv", "venv"}


def rust_files():
    """Every .rs file of the workspace, by path from the root (with `/`)."""
    for root, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.relpath(os.path.join(root, name), ROOT).replace(os.sep, "/")


def limit(path):
    """The most lines `path` may have, or None when no rule covers it."""
    parts = path.split("/")
    if "tests" in parts[:-1]:
        return TEST_LIMIT
    if len(parts) > 3 and parts[0] in ("services", "crates") and parts[2] == "src":
        return None if path in EXEMPT else SOURCE_LIMIT
    return None


def lines(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return sum(1 for _ in f)


def main():
    problems, checked = [], 0
    for path in rust_files():
        most = limit(path)
        if most is None:
            continue
        checked += 1
        count = lines(path)
        if count > most:
            problems.append(f"{path}: {count} lines (at most {most:,})")
    for path in sorted(EXEMPT):
        if not os.path.isfile(os.path.join(ROOT, path)):
            problems.append(f"{path}: exempted in scripts/check-sizes.py, but there is no such file")
    if problems:
        print(f"{len(problems)} file(s) over the size limits")
        for problem in problems:
            print("  " + problem)
        sys.exit(1)
    print(
        f"sizes hold: {checked} files, source at most {SOURCE_LIMIT:,} lines, "
        f"tests at most {TEST_LIMIT:,}"
    )


if __name__ == "__main__":
    main()
