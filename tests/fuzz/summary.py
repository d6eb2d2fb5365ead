"""The summary of one schemathesis run: its failures grouped by check, one line each
(operation, short reason), then its warnings and errors.

usage: summary.py SERVICE JUNIT_XML OUTPUT_TXT EXIT_CODE   (exits 1 when the run failed)
"""

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

CHECK = re.compile(r"^- (ST\d+|[A-Z]+\d*)? ?(.+)$", re.M)
STATUS = re.compile(r"^\[(\d{3})\] ", re.M)
BODY = re.compile(r"^\s+`(.*)`\s*$", re.M)


def reason(block: str) -> str:
    status = STATUS.search(block)
    body = BODY.search(block)
    text = ""
    if body:
        try:
            answer = json.loads(body.group(1))
            if isinstance(answer, dict):
                error = answer.get("error")
                text = error.get("message") if isinstance(error, dict) else error
                text = text or body.group(1)
        except ValueError:
            text = body.group(1)
    parts = [status.group(1) if status else "", (text or "")[:110]]
    return " ".join(p for p in parts if p) or block.strip().splitlines()[0][:120]


def failures(junit: str):
    """(check, operation, reason) of every failure and error of the report."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        operation = case.get("name", "?")
        for element in list(case.findall("failure")) + list(case.findall("error")):
            text = element.text or element.get("message", "")
            blocks = re.split(r"^\d+\. Test Case ID: \S+$", text, flags=re.M)
            for block in blocks:
                checks = CHECK.findall(block)
                if not checks:
                    continue
                why = reason(block)
                for code, title in checks:
                    found.append((f"{code} {title}".strip(), operation, why))
            if not any(CHECK.search(b) for b in blocks):
                found.append((element.tag, operation, text.strip().splitlines()[0][:120] if text.strip() else "?"))
    return found


def warnings(output: str):
    section = output.split("\nWarnings:\n", 1)
    if len(section) < 2:
        return []
    lines = []
    for line in section[1].splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return lines


def main() -> int:
    service, junit, output, rc = sys.argv[1:5]
    text = open(output, encoding="utf-8", errors="replace").read()
    try:
        found = failures(junit)
    except (OSError, ET.ParseError) as e:
        print(f"{service}: no report ({e}); the end of schemathesis' output:")
        print(text[-2000:])
        return 1
    by_check = defaultdict(list)
    for check, operation, why in found:
        if (operation, why) not in by_check[check]:
            by_check[check].append((operation, why))
    warned = warnings(text)
    total = sum(len(v) for v in by_check.values())
    verdict = "ok" if rc == "0" else "FAILED"
    print(f"{service}: {verdict}: {total} failure(s), {len(warned)} warning(s) (exit {rc})")
    for check in sorted(by_check):
        print(f"  {check}: {len(by_check[check])}")
        for operation, why in sorted(by_check[check]):
            print(f"    {operation}: {why}")
    for line in warned:
        print(f"  warning: {line}")
    if rc != "0" and total == 0 and not warned:
        print(text[-2000:])
    return 0 if rc == "0" else 1


if __name__ == "__main__":
    sys.exit(main())
