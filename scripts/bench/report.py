#!/usr/bin/env python3
"""Summarise the scenarios of scripts/bench.sh: one table on stdout, one JSON file.

usage: report.py SCENARIOS_TSV OUT_JSON

SCENARIOS_TSV has one line per scenario, tab-separated:
    id  kind  name  output_file  [log_prefix  [rows_per_request]]
kind `wrk`: output_file is wrk's output with the WRK_RESULT line of wrk-report.lua.
rows_per_request (wrk and pgbench, optional): items each request or transaction writes (50
producer signals): the report adds rows per second (`rows_per_s`).
kind `pgbench`: output_file is pgbench's output; log_prefix the --log-prefix its
per-transaction logs were written with (latency percentiles come from them).
kind `export`: output_file holds key=value lines written by bench.sh's run_export
(code, curl_exit, bytes, seconds, first_byte_seconds, rows, rss_before_kb, peak_rss_kb,
peak_reset): one streamed download, its time and the API process's peak resident set.
kind `pipeline`: output_file holds key=value lines (emails, sent, seconds,
provider_accepted): emails accepted by the API during a run, how many of them the provider
took, the seconds from the run's start until the last acceptance was recorded.
kind `costs`: output_file holds the key=value lines of scripts/bench/costs.py diff: what one
email (or pgbench transaction) of the scenario with the same id cost over its measured window
(CPU ms per process, WAL bytes, transactions, rows, broker messages, statements); not a
scenario of its own: the report prints them in a table and results.json keeps them under that
scenario's "costs".
kind `migration`: output_file holds key=value lines (status, error, contacts_expected,
contacts, suppressions, seconds, api_peak_rss_kb, worker_peak_rss_kb, peak_reset): one
platform migration, the contacts it created, the seconds from the run's creation to its end,
and the peak resident set of mail-api and of the worker that ran the job.

Settings recorded in the JSON come from the environment: BENCH_DURATION,
BENCH_CONNECTIONS, BENCH_THREADS, BENCH_WARMUP, BENCH_RATE_LIMIT_BACKEND.
Exit status 1 when any scenario had a non-2xx response, a socket error or a
failed transaction (or produced no result); 0 otherwise.
"""

import datetime
import glob
import json
import math
import os
import platform
import re
import subprocess
import sys

RATIOS = [("c", "e"), ("d", "f"), ("g", "h"), ("m", "n"), ("v", "w")]
# Latency targets of the issues (reported, not enforced): scenario, percentile, ms.
TARGETS = [("i", "p95_ms", 5.0), ("j", "p95_ms", 30.0)]
# Throughput targets of route-vs-pgbench ratios (reported, not enforced).
RATIO_TARGETS = {"m/n": 0.75, "v/w": 0.7}
# Rows written per second (reported, not enforced): scenario, minimum.
ROWS_TARGETS = [("v", 5000.0)]
# Peak resident set of the API process during an export (reported, not enforced), MB: the
# contact exports p and q (issue 54: under listmonk's published 57 MB), others 200.
EXPORT_PEAK_RSS_TARGET_MB = 200.0
EXPORT_PEAK_RSS_TARGETS_MB = {"p": 60.0, "q": 60.0}
# A platform migration (reported, not enforced): contacts per second, and the peak resident
# set of each process (mail-api, the worker running the job), MB.
MIGRATION_TARGET_PER_S = 2000.0
MIGRATION_PEAK_RSS_TARGET_MB = 200.0
# Send pipeline throughput (reported, not enforced), emails per second.
PIPELINE_TARGET_PER_S = 1000.0
# Pipelines with a target of their own (per second): the /send pipeline's, the bounce
# receiver's DSNs.
PIPELINE_TARGETS = {"u": 2000.0, "bd": 500.0}
# The /send pipeline's emails per second against pgbench running its own statements for one
# email per transaction, in the same run (reported, not enforced): (pipeline, pgbench, minimum).
SEND_REFERENCE_TARGET = ("u", "ur", 0.6)
# The per-email costs printed, in order: (key of costs.py diff, label).
COST_ROWS = [
    ("emails", "emails (transactions) in the window"),
    ("seconds", "window, s"),
    ("cpu_ms_per_email.mail-api", "CPU ms: mail-api"),
    ("cpu_ms_per_email.send-worker", "CPU ms: send-worker"),
    ("cpu_ms_per_email.provider-stub", "CPU ms: provider stub"),
    ("cpu_ms_per_email.postgres", "CPU ms: PostgreSQL (all processes)"),
    ("cpu_ms_per_email.rabbitmq", "CPU ms: RabbitMQ"),
    ("cpu_ms_per_email.other", "CPU ms: the rest (wrk, pgbench, others)"),
    ("cpu_ms_per_email.machine", "CPU ms: whole machine"),
    ("machine_busy_pct", "machine busy, %"),
    ("wal_bytes_per_email", "WAL bytes"),
    ("wal_records_per_email", "WAL records"),
    ("wal_fpi_per_email", "WAL full-page images"),
    ("wal_mb_per_s", "WAL MB/s"),
    ("xacts_per_email", "transactions (bench_mail)"),
    ("rows_inserted_per_email", "rows inserted"),
    ("rows_updated_per_email", "rows updated"),
    ("rows_deleted_per_email", "rows deleted"),
    ("broker_published_per_email", "broker messages published"),
    ("broker_routed_per_email", "broker messages routed to queues"),
    ("broker_delivered_per_email", "broker messages delivered"),
    ("broker_acked_per_email", "broker messages acked"),
    ("statements_calls_per_email", "statements (pg_stat_statements)"),
    ("statements_ms_per_email", "statement time, ms"),
]
# Statements printed per scenario (of the 10 its costs file keeps).
COST_STATEMENTS = 6
# A campaign's emails per second against the /send pipeline's in the same run (reported, not
# enforced): (campaign scenario, pipeline scenario, minimum ratio).
CAMPAIGN_TARGET = ("x", "u", 0.9)
# The personalized /send pipeline's emails per second against the plain one's in the same run
# (reported, not enforced): (personalized scenario, plain scenario, minimum ratio).
PERSONAL_TARGET = ("up", "u", 0.9)
# An automation's emails per second against the campaign's in the same run (reported, not
# enforced): (automation scenario, campaign scenario, minimum ratio).
AUTOMATION_TARGET = ("xa", "x", 0.9)


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return 0
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


def parse_wrk(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"^WRK_RESULT (.*)$", text, re.M)
    if not m:
        raise ValueError(f"{path}: no WRK_RESULT line (did wrk run?)")
    v = {k: int(x) for k, x in (kv.split("=", 1) for kv in m.group(1).split())}
    duration_s = v["duration_us"] / 1e6
    errors = {k: v[k] for k in ("connect", "read", "write", "timeout")}
    return {
        "requests": v["requests"],
        "duration_s": round(duration_s, 3),
        "rps": v["requests"] / duration_s if duration_s > 0 else 0.0,
        "p50_ms": v["p50_us"] / 1000,
        "p95_ms": v["p95_us"] / 1000,
        "p99_ms": v["p99_us"] / 1000,
        "mean_ms": v["mean_us"] / 1000,
        "max_ms": v["max_us"] / 1000,
        "non2xx": v["non2xx"],
        "errors": errors,
    }


def parse_pgbench(path, log_prefix):
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", text, re.M)
    if not m:
        raise ValueError(f"{path}: no 'tps = ...' line (did pgbench run?)")
    tps = float(m.group(1))
    m = re.search(r"^number of transactions actually processed: (\d+)", text, re.M)
    processed = int(m.group(1)) if m else 0
    m = re.search(r"^number of failed transactions: (\d+)", text, re.M)
    failed = int(m.group(1)) if m else 0
    m = re.search(r"^number of clients: (\d+)", text, re.M)
    clients = int(m.group(1)) if m else None
    # Per-transaction log lines: client_id transaction_no time script_no epoch epoch_us [...]
    # where time is the latency in microseconds (or "failed"/"skipped").
    lat = []
    for f in glob.glob(glob.escape(log_prefix) + ".*"):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    lat.append(int(parts[2]))
    if not lat:
        raise ValueError(f"{log_prefix}.*: no pgbench transaction log")
    lat.sort()
    return {
        "requests": processed,
        "duration_s": round(processed / tps, 3) if tps > 0 else 0.0,
        "rps": tps,
        "p50_ms": percentile(lat, 50) / 1000,
        "p95_ms": percentile(lat, 95) / 1000,
        "p99_ms": percentile(lat, 99) / 1000,
        "mean_ms": sum(lat) / len(lat) / 1000,
        "max_ms": lat[-1] / 1000,
        "non2xx": failed,  # failed transactions: the database's "non-2xx"
        "errors": {},
        "clients": clients,
    }


def parse_export(path):
    v = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        if "=" in line:
            k, x = line.strip().split("=", 1)
            v[k] = x
    seconds = float(v["seconds"])
    size = int(v["bytes"])
    rows = int(v["rows"])
    return {
        "seconds": seconds,
        "first_byte_s": float(v["first_byte_seconds"]),
        "bytes": size,
        "mb_per_s": size / 1e6 / seconds if seconds > 0 else 0.0,
        "rows": rows,
        "rows_per_s": rows / seconds if seconds > 0 else 0.0,
        "rss_before_mb": int(v["rss_before_kb"]) / 1024,
        "peak_rss_mb": int(v["peak_rss_kb"]) / 1024,
        # 1: the peak was reset just before the request; 0: peak since the process started.
        "peak_since_request": v.get("peak_reset") == "1",
        "http_status": int(v["code"]),
        "curl_exit": int(v["curl_exit"]),
    }


def parse_pipeline(path):
    v = {}
    for line in open(path, encoding="utf-8"):
        if "=" in line:
            k, x = line.strip().split("=", 1)
            v[k] = x
    emails, sent, seconds = int(v["emails"]), int(v["sent"]), float(v["seconds"])
    return {
        "emails": emails,
        "sent": sent,
        "seconds": seconds,
        "emails_per_s": sent / seconds if seconds > 0 else 0.0,
        "provider_accepted": int(v["provider_accepted"]),
    }


def parse_migration(path):
    v = {}
    for line in open(path, encoding="utf-8"):
        if "=" in line:
            k, x = line.rstrip("\n").split("=", 1)
            v[k] = x
    contacts, seconds = int(v["contacts"]), float(v["seconds"])
    return {
        "status": v["status"],
        "contacts_expected": int(v["contacts_expected"]),
        "contacts": contacts,
        "suppressions": int(v["suppressions"]),
        "seconds": seconds,
        "contacts_per_s": contacts / seconds if seconds > 0 else 0.0,
        "api_peak_rss_mb": int(v["api_peak_rss_kb"]) / 1024,
        "worker_peak_rss_mb": int(v["worker_peak_rss_kb"]) / 1024,
        # 1: the peaks were reset just before the run; 0: peaks since the processes started.
        "peak_since_run": v.get("peak_reset") == "1",
    }


def parse_costs(path):
    """costs.py diff's key=value lines: numbers where they are numbers, else the text."""
    v = {}
    for line in open(path, encoding="utf-8"):
        if "=" not in line:
            continue
        k, x = line.rstrip("\n").split("=", 1)
        try:
            v[k] = float(x) if x != "" else None
        except ValueError:
            v[k] = x
    if "emails" not in v:
        raise ValueError(f"{path}: no emails= line")
    return v


def git_commit():
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def env_int(name):
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    tsv, out_json = sys.argv[1], sys.argv[2]

    scenarios = []
    costs = {}
    for line in open(tsv, encoding="utf-8"):
        if not line.strip():
            continue
        cols = line.rstrip("\n").split("\t")
        sid, kind, name, output = cols[:4]
        if kind == "costs":
            try:
                costs[sid] = parse_costs(output)
            except (OSError, ValueError) as e:
                costs[sid] = {"error": str(e)}
            continue
        s = {"id": sid, "kind": kind, "name": name}
        try:
            if kind == "wrk":
                s.update(parse_wrk(output))
            elif kind == "pgbench":
                s.update(parse_pgbench(output, cols[4]))
            elif kind == "export":
                s.update(parse_export(output))
            elif kind == "pipeline":
                s.update(parse_pipeline(output))
            elif kind == "migration":
                s.update(parse_migration(output))
            else:
                raise ValueError(f"unknown kind {kind!r}")
            if kind in ("wrk", "pgbench") and len(cols) > 5 and cols[5]:
                s["rows_per_request"] = int(cols[5])
                s["rows_per_s"] = s["rps"] * s["rows_per_request"]
            if kind == "export":
                s["ok"] = s["http_status"] == 200 and s["curl_exit"] == 0
            elif kind == "pipeline":
                # Every accepted email reached the provider, once.
                s["ok"] = s["emails"] > 0 and s["sent"] == s["emails"] == s["provider_accepted"]
            elif kind == "migration":
                # Completed, every contact of the account created once.
                s["ok"] = s["status"] == "completed" and s["contacts"] == s["contacts_expected"]
            else:
                s["ok"] = s["non2xx"] == 0 and not any(s["errors"].values())
        except (OSError, ValueError, KeyError) as e:
            s.update({"ok": False, "error": str(e)})
        scenarios.append(s)

    by_id = {s["id"]: s for s in scenarios}
    for sid, c in costs.items():
        if sid in by_id:
            by_id[sid]["costs"] = c
    ratios = {}
    for a, b in RATIOS:
        sa, sb = by_id.get(a), by_id.get(b)
        if not sa or not sb or "rps" not in sa or "rps" not in sb or not sb["rps"]:
            continue
        ratios[f"{a}/{b}"] = {
            "what": f"{sa['name']} vs {sb['name']}",
            # Rows per second when both write rows (the same number per request or not).
            "throughput": (sa["rows_per_s"] / sb["rows_per_s"])
            if sa.get("rows_per_s") and sb.get("rows_per_s")
            else sa["rps"] / sb["rps"],
            "p50_latency": sa["p50_ms"] / sb["p50_ms"] if sb["p50_ms"] else None,
            "p99_latency": sa["p99_ms"] / sb["p99_ms"] if sb["p99_ms"] else None,
        }

    ok = all(s["ok"] for s in scenarios) and bool(scenarios)

    def rounded(d):
        out = {}
        for k, v in d.items():
            if isinstance(v, float):
                v = round(v, 1) if k in ("rps", "rows_per_s") else round(v, 4)
            out[k] = v
        return out

    # ---- table
    w = max([len(f"{s['id']}  {s['name']}") for s in scenarios] + [20])
    print()
    print(f"{'scenario':<{w}} {'req/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for s in scenarios:
        label = f"{s['id']}  {s['name']}"
        if s["kind"] in ("export", "pipeline", "migration") and "seconds" in s:
            continue
        if "rps" not in s:
            print(f"{label:<{w}} {'FAILED: ' + s.get('error', '?')}")
            continue
        errs = sum(s["errors"].values())
        extra = f"  (socket errors: {errs})" if errs else ""
        print(
            f"{label:<{w}} {s['rps']:>10.1f} {s['p50_ms']:>8.3f} {s['p95_ms']:>8.3f} "
            f"{s['p99_ms']:>8.3f} {s['non2xx']:>8d}{extra}"
        )
    exports = [s for s in scenarios if s["kind"] == "export" and "seconds" in s]
    if exports:
        print()
        print(f"{'export':<{w}} {'seconds':>10} {'MB':>8} {'rows/s':>10} {'peak RSS MB':>12}")
        for s in exports:
            label = f"{s['id']}  {s['name']}"
            print(
                f"{label:<{w}} {s['seconds']:>10.2f} {s['bytes'] / 1e6:>8.1f} "
                f"{s['rows_per_s']:>10.0f} {s['peak_rss_mb']:>12.1f}"
            )
    pipelines = [s for s in scenarios if s["kind"] == "pipeline" and "seconds" in s]
    if pipelines:
        print()
        print(f"{'pipeline':<{w}} {'emails':>10} {'seconds':>8} {'emails/s':>10} {'provider':>10}")
        for s in pipelines:
            label = f"{s['id']}  {s['name']}"
            print(
                f"{label:<{w}} {s['emails']:>10d} {s['seconds']:>8.2f} "
                f"{s['emails_per_s']:>10.0f} {s['provider_accepted']:>10d}"
            )
    migrations = [s for s in scenarios if s["kind"] == "migration" and "seconds" in s]
    if migrations:
        print()
        print(f"{'migration':<{w}} {'contacts':>10} {'seconds':>8} {'contacts/s':>10} "
              f"{'API MB':>8} {'worker MB':>10}")
        for s in migrations:
            label = f"{s['id']}  {s['name']}"
            print(
                f"{label:<{w}} {s['contacts']:>10d} {s['seconds']:>8.2f} {s['contacts_per_s']:>10.0f} "
                f"{s['api_peak_rss_mb']:>8.1f} {s['worker_peak_rss_mb']:>10.1f}"
            )
    with_rows = [s for s in scenarios if "rows_per_request" in s]
    if with_rows:
        print()
        print(f"{'rows written':<{w}} {'rows/req':>10} {'rows/s':>10} {'p99 ms':>8}")
        for s in with_rows:
            label = f"{s['id']}  {s['name']}"
            print(f"{label:<{w}} {s['rows_per_request']:>10d} {s['rows_per_s']:>10.0f} {s['p99_ms']:>8.3f}")
    if costs:
        ids = list(costs)
        print()
        print(f"{'per-email costs (raw/ID-costs.txt)':<44}" + "".join(f"{i:>12}" for i in ids))
        for key, label in COST_ROWS:
            values = [costs[i].get(key) for i in ids]
            if all(x is None for x in values):
                continue
            cells = "".join(
                f"{'':>12}" if not isinstance(x, float) else
                f"{x:>12.0f}" if key == "emails" else
                f"{x:>12.1f}" if abs(x) >= 100 or key in ("seconds", "machine_busy_pct") else
                f"{x:>12.3f}"
                for x in values
            )
            print(f"{label:<44}{cells}")
        for i in ids:
            if costs[i].get("error"):
                print(f"{i}: costs not read: {costs[i]['error']}")
                continue
            if not costs[i].get("statement.1.query"):
                continue
            print(f"\n{i}: statements by total time (calls and ms per email, mean ms, WAL bytes per email, share)")
            for n in range(1, COST_STATEMENTS + 1):
                q = costs[i].get(f"statement.{n}.query")
                if not q:
                    break

                def num(field, n=n, i=i):
                    x = costs[i].get(f"statement.{n}.{field}")
                    return x if isinstance(x, float) else 0.0

                what = costs[i].get(f"statement.{n}.does") or str(q)[:60]
                print(f"  {num('calls_per_email'):>7.3f} {num('ms_per_email'):>8.4f} {num('mean_ms'):>8.3f} "
                      f"{num('wal_bytes_per_email'):>8.0f} {num('share_pct'):>5.1f}%  {what}")
    print()
    for k, r in ratios.items():
        p50 = f"{r['p50_latency']:.2f}x" if r["p50_latency"] is not None else "n/a"
        p99 = f"{r['p99_latency']:.2f}x" if r["p99_latency"] is not None else "n/a"
        print(
            f"{k} (authenticated route vs pgbench, same SQL): "
            f"throughput {r['throughput']:.3f}x, p50 latency {p50}, p99 latency {p99}"
        )

    targets = {}
    for k, minimum in RATIO_TARGETS.items():
        r = ratios.get(k)
        if r:
            targets[k] = {"metric": "throughput ratio", "target_min": minimum,
                          "measured": r["throughput"], "met": r["throughput"] >= minimum}
            verdict = "met" if r["throughput"] >= minimum else "MISSED"
            print(f"{k} target throughput ratio >= {minimum:g}: {r['throughput']:.3f} ({verdict})")
    for sid, minimum in ROWS_TARGETS:
        s = by_id.get(sid)
        if s and "rows_per_s" in s:
            rate = s["rows_per_s"]
            targets[f"{sid} rows/s"] = {"metric": "rows_per_s", "target_min": minimum,
                                        "measured": rate, "met": rate >= minimum}
            verdict = "met" if rate >= minimum else "MISSED"
            print(f"{sid} target >= {minimum:g} rows/s: {rate:.0f} ({verdict})")
    for s in exports:
        peak = s["peak_rss_mb"]
        most = EXPORT_PEAK_RSS_TARGETS_MB.get(s["id"], EXPORT_PEAK_RSS_TARGET_MB)
        targets[s["id"]] = {"metric": "peak_rss_mb", "target_max_mb": most,
                            "measured_mb": peak, "met": peak < most}
        verdict = "met" if peak < most else "MISSED"
        print(f"{s['id']} target peak RSS < {most:g} MB: {peak:.1f} MB ({verdict})")
    for s in migrations:
        rate = s["contacts_per_s"]
        targets[s["id"]] = {"metric": "contacts_per_s", "target_min": MIGRATION_TARGET_PER_S,
                            "measured": rate, "met": rate >= MIGRATION_TARGET_PER_S}
        verdict = "met" if rate >= MIGRATION_TARGET_PER_S else "MISSED"
        print(f"{s['id']} target >= {MIGRATION_TARGET_PER_S:g} contacts per s: {rate:.0f} ({verdict})")
        for process in ("api", "worker"):
            peak = s[f"{process}_peak_rss_mb"]
            met = peak < MIGRATION_PEAK_RSS_TARGET_MB
            targets[f"{s['id']} {process} rss"] = {"metric": "peak_rss_mb",
                                                   "target_max_mb": MIGRATION_PEAK_RSS_TARGET_MB,
                                                   "measured_mb": peak, "met": met}
            print(f"{s['id']} target {process} peak RSS < {MIGRATION_PEAK_RSS_TARGET_MB:g} MB: "
                  f"{peak:.1f} MB ({'met' if met else 'MISSED'})")
    for s in pipelines:
        rate = s["emails_per_s"]
        minimum = PIPELINE_TARGETS.get(s["id"], PIPELINE_TARGET_PER_S)
        targets[s["id"]] = {"metric": "emails_per_s", "target_min": minimum,
                            "measured": rate, "met": rate >= minimum}
        verdict = "met" if rate >= minimum else "MISSED"
        print(f"{s['id']} target >= {minimum:g} per s: {rate:.0f} ({verdict})")
    for (campaign, pipeline, minimum), what in ((CAMPAIGN_TARGET, "campaign"),
                                                 (PERSONAL_TARGET, "personalized /send"),
                                                 (AUTOMATION_TARGET, "automation")):
        sc, sp = by_id.get(campaign), by_id.get(pipeline)
        if sc and sp and sc.get("emails_per_s") and sp.get("emails_per_s"):
            ratio = sc["emails_per_s"] / sp["emails_per_s"]
            ratios[f"{campaign}/{pipeline}"] = {"what": f"{sc['name']} vs {sp['name']}", "throughput": ratio}
            targets[f"{campaign}/{pipeline}"] = {"metric": "emails_per_s ratio", "target_min": minimum,
                                                 "measured": ratio, "met": ratio >= minimum}
            verdict = "met" if ratio >= minimum else "MISSED"
            print(f"{campaign}/{pipeline} target {what} emails/s >= {minimum:g} x the /send pipeline's: "
                  f"{ratio:.3f} ({verdict})")
    pipeline, reference, minimum = SEND_REFERENCE_TARGET
    sp, sr = by_id.get(pipeline), by_id.get(reference)
    if sp and sr and sp.get("emails_per_s") and sr.get("rps"):
        ratio = sp["emails_per_s"] / sr["rps"]
        key = f"{pipeline}/{reference}"
        ratios[key] = {"what": f"{sp['name']} vs {sr['name']}", "throughput": ratio}
        targets[key] = {"metric": "emails_per_s ratio", "target_min": minimum, "measured": ratio,
                        "met": ratio >= minimum}
        verdict = "met" if ratio >= minimum else "MISSED"
        print(f"{key} target /send pipeline emails/s >= {minimum:g} x pgbench running its statements "
              f"({sr['rps']:.0f} emails/s, {sr.get('clients')} clients): {ratio:.3f} ({verdict})")
    for sid, key, limit in TARGETS:
        s = by_id.get(sid)
        if s and key in s:
            targets[sid] = {"metric": key, "target_ms": limit, "measured_ms": s[key],
                            "met": s[key] <= limit}
            verdict = "met" if s[key] <= limit else "MISSED"
            print(f"{sid} target {key.replace('_ms', '')} <= {limit:g} ms: {s[key]:.3f} ms ({verdict})")

    result = {
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "settings": {
            "duration_s": env_int("BENCH_DURATION"),
            "connections": env_int("BENCH_CONNECTIONS"),
            "threads": env_int("BENCH_THREADS"),
            "warmup_s": env_int("BENCH_WARMUP"),
            "rate_limit_backend": os.environ.get("BENCH_RATE_LIMIT_BACKEND") or "service default",
        },
        "scenarios": [rounded(s) for s in scenarios],
        "ratios": {k: rounded(r) for k, r in ratios.items()},
        "targets": targets,
        "ok": ok,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    with open(out_json, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(f"\nresults: {out_json}")
    if not ok:
        bad = ", ".join(s["id"] for s in scenarios if not s["ok"])
        print(f"bench: FAILED scenarios: {bad} (non-2xx responses, socket errors or failed transactions)",
              file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
