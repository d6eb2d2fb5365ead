"""The hard retrieval evaluation set (tests/fixtures/retrieval-hard): loading and checking.

`python3 scripts/bench/hard_set.py` checks the set and exits non-zero on any violation:
at least 200 decisions over at least 10 products, at least 100 questions, every answer and
distractor a known decision of the same product as the answer, at least half of the questions
with a distractor, and no question sharing a content word with its answer (text, reasoning,
tags or product): tokens are lowercased, stopwords dropped, and compared by a light stem that
folds plurals and simple inflections (-s, -es, -ies, -ed, -ing, -ly, -'s).
"""

import json
import re
import sys
from pathlib import Path

SET_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "retrieval-hard"

STOPWORDS = set(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can cannot could couldn't did didn't do does doesn't doing
    don't down during each few for from further had hadn't has hasn't have haven't having he her
    here hers herself him himself his how i if in into is isn't it it's its itself just let me
    more most must my myself no nor not now of off on once only or other ought our ours
    ourselves out over own same she should shouldn't so some something such than that the their
    theirs them themselves then there there's these they this those through to too under until
    up upon us very via was wasn't we were weren't what what's when where which while who whom
    why will with won't would wouldn't you your yours yourself yourselves also still either
    whether anything someone somebody nobody everything
    """.split()
)

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def stem(token: str) -> str:
    """Folds plurals and simple inflections so 'limits'/'limit', 'booked'/'booking' meet."""
    t = token
    if t.endswith("'s"):
        t = t[:-2]
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("es", ""), ("s", "")):
        if t.endswith(suffix) and len(t) - len(suffix) >= 3 and not t.endswith("ss"):
            t = t[: -len(suffix)] + repl
            break
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if t.endswith(suffix) and len(t) - len(suffix) >= 3:
            t = t[: -len(suffix)]
            if len(t) >= 2 and t[-1] == t[-2] and t[-1] not in "lsz":
                t = t[:-1]  # stopped -> stop
            break
    if t.endswith("e") and len(t) > 3:
        t = t[:-1]  # 'charge'/'charged' -> 'charg'
    return t


def content_stems(text: str) -> set:
    return {stem(t) for t in TOKEN.findall(text.lower()) if t not in STOPWORDS}


def load(set_dir: Path = SET_DIR):
    def read(name):
        with open(set_dir / name, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    return read("decisions.jsonl"), read("questions.jsonl")


def answer_text(d: dict) -> str:
    return " ".join([d["text"], d.get("reasoning") or "", " ".join(d.get("tags", [])), d["product"]])


def problems(decisions, questions):
    out = []
    by_id = {d["id"]: d for d in decisions}
    if len(by_id) != len(decisions):
        out.append("duplicate decision ids")
    products = {d["product"] for d in decisions}
    if len(decisions) < 200:
        out.append(f"{len(decisions)} decisions, want at least 200")
    if len(products) < 10:
        out.append(f"{len(products)} products, want at least 10")
    if len(questions) < 100:
        out.append(f"{len(questions)} questions, want at least 100")
    if len({q["id"] for q in questions}) != len(questions):
        out.append("duplicate question ids")
    with_distractor = 0
    for q in questions:
        answer = by_id.get(q["answer"])
        if answer is None:
            out.append(f"{q['id']}: unknown answer {q['answer']}")
            continue
        distractor = q.get("distractor")
        if distractor:
            other = by_id.get(distractor)
            if other is None or distractor == q["answer"]:
                out.append(f"{q['id']}: bad distractor {distractor}")
            elif other["product"] != answer["product"]:
                out.append(f"{q['id']}: distractor {distractor} is another product's")
            else:
                with_distractor += 1
        shared = content_stems(q["q"]) & content_stems(answer_text(answer))
        if shared:
            out.append(f"{q['id']}: shares {sorted(shared)} with {q['answer']}")
    if with_distractor * 2 < len(questions):
        out.append(f"only {with_distractor} of {len(questions)} questions have a distractor")
    return out


def main() -> int:
    decisions, questions = load()
    found = problems(decisions, questions)
    for p in found:
        print(f"hard set: {p}", file=sys.stderr)
    products = len({d["product"] for d in decisions})
    with_d = sum(1 for q in questions if q.get("distractor"))
    print(
        f"hard set: {len(decisions)} decisions, {products} products, {len(questions)} questions "
        f"({with_d} with a same-topic distractor): {'ok' if not found else f'{len(found)} problems'}"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
