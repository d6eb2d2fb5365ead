"""Retrieval quality of a running memory-api on the hard set (tests/fixtures/retrieval-hard).

    retrieval_eval.py load  URL KEY            # products, then the 200 decisions (201 each);
                                               # with BENCH_LLM_KEY, that model credential too
    retrieval_eval.py query URL KEY LABEL      # one JSON line per search route
    retrieval_eval.py table ROWS.jsonl [RESULTS.json]   # print the table, merge into results

`query` asks every question of `GET /memory/decisions/search?limit=10` and
`GET /memory/search?limit=10&min_similarity=0&include=decisions` and reports recall@1,
recall@5, MRR (reciprocal rank within the top 10, else 0) and the p50/p95 of the client-side
latency of each request.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from hard_set import load

LIMIT = 10


def request(method, url, key, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def cmd_load(url, key):
    decisions, _ = load()
    model_key = os.environ.get("BENCH_LLM_KEY")
    if model_key:  # the caller's own model credential, for the LLM rewrite rows
        body = {"service": "openai", "label": "bench", "key": model_key}
        status, answer = request("POST", f"{url}/api/v1/byok", key, body)
        if status != 201:
            sys.exit(f"POST byok: {status} {answer}")
    for product in sorted({d["product"] for d in decisions}):
        status, body = request("POST", f"{url}/api/v1/products", key, {"name": product})
        if status != 201:
            sys.exit(f"POST products {product}: {status} {body}")
    mapping = {}
    for d in decisions:
        body = {"decision": d["text"], "reasoning": d["reasoning"], "product_name": d["product"]}
        status, answer = request("POST", f"{url}/api/v1/memory/decisions", key, body)
        if status != 201:
            sys.exit(f"POST decision {d['id']}: {status} {answer}")
        mapping[answer["id"]] = d["id"]
    json.dump(mapping, sys.stdout)


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def measure(questions, ask):
    hits1 = hits5 = 0
    rr = 0.0
    millis = []
    mode = None
    for q in questions:
        started = time.perf_counter()
        ids, mode = ask(q["q"])
        millis.append((time.perf_counter() - started) * 1000)
        if q["answer"] in ids:
            rank = ids.index(q["answer"])
            hits1 += rank < 1
            hits5 += rank < 5
            rr += 1 / (rank + 1) if rank < LIMIT else 0
    n = len(questions)
    return {
        "search_mode": mode,
        "questions": n,
        "recall_at_1": hits1 / n,
        "recall_at_5": hits5 / n,
        "mrr": rr / n,
        "p50_ms": quantile(millis, 0.5),
        "p95_ms": quantile(millis, 0.95),
    }


def cmd_query(url, key, label, mapping_file):
    _, questions = load()
    with open(mapping_file, encoding="utf-8") as f:
        mapping = json.load(f)

    def route(path, params, field):
        def ask(text):
            query = urllib.parse.urlencode({"q": text, **params})
            status, body = request("GET", f"{url}{path}?{query}", key)
            if status != 200:
                sys.exit(f"GET {path}: {status} {body}")
            return [mapping.get(d["id"]) for d in body[field]], body["search_mode"]

        return ask

    for path, params in (
        ("/api/v1/memory/decisions/search", {"limit": LIMIT}),
        ("/api/v1/memory/search", {"limit": LIMIT, "min_similarity": 0, "include": "decisions"}),
    ):
        row = measure(questions, route(path, params, "decisions"))
        row.update({"provider": label, "route": path.removeprefix("/api/v1")})
        print(json.dumps(row), flush=True)


def cmd_table(rows_file, results_file=None):
    with open(rows_file, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    head = f"{'provider / model':<44} {'mode':<34} {'R@1':>5} {'R@5':>5} {'MRR':>5} {'p95 ms':>7}"
    print("\nretrieval quality on the hard set "
          f"({rows[0].get('questions', '?') if rows else '?'} questions)")
    print(head)
    print("-" * len(head))
    for r in rows:
        mode = r.get("route", r.get("mode", "")) + (
            f" [{r['search_mode']}]" if r.get("search_mode") else "")
        print(f"{r['provider']:<44} {mode:<34} {r['recall_at_1']:>5.2f} {r['recall_at_5']:>5.2f} "
              f"{r['mrr']:>5.2f} {r['p95_ms']:>7.1f}")
    if results_file:
        try:
            with open(results_file, encoding="utf-8") as f:
                results = json.load(f)
        except FileNotFoundError:
            results = {}
        results["retrieval"] = rows
        with open(results_file, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


def main():
    cmd, *args = sys.argv[1:]
    {"load": cmd_load, "query": cmd_query, "table": cmd_table}[cmd](*args)


if __name__ == "__main__":
    main()
