#!/usr/bin/env python3
"""Per-email resource costs of a bench scenario (scripts/bench.sh): snapshots before and after
its measured window, and their difference divided by the emails it moved.

usage:
  costs.py snapshot NAME=PID...   key=value lines: the clock, the CPU time of each named
                                  process with all its descendants, and the machine's CPU
                                  time (/proc/stat); bench.sh appends the database's and the
                                  broker's counters to the same file
  costs.py diff BEFORE AFTER EMAILS CLK_TCK [STATEMENTS_TSV]
                                  key=value lines of what one email cost between the two
                                  snapshots; with STATEMENTS_TSV (pg_stat_statements rows
                                  read after the window, reset at its start: calls, total_ms,
                                  rows, wal_bytes, query, tab-separated, a header line
                                  first), the statements' figures per email and the TOP
                                  statements by total time (statement.N.calls_per_email,
                                  .ms_per_email, .mean_ms, .rows_per_call,
                                  .wal_bytes_per_email, .share_pct, .does: what it writes,
                                  .query: its first characters)

CPU time: utime + stime + cutime + cstime of /proc/PID/stat (clock ticks), summed over the
process and every live descendant. A child that exited and was waited for is in its parent's
cutime/cstime (PostgreSQL's backends in the postmaster's), so the sum only grows, whichever
children come and go during the window. A process that is gone counts 0 (its figure is then
meaningless and the diff says so with a negative or missing value).

The snapshot keys: clock (seconds, wall), cpu.NAME (ticks), machine.busy and machine.total
(ticks of all CPUs: busy = user + nice + system + irq + softirq + steal), cores; bench.sh adds
wal.lsn_bytes, wal.records, wal.fpi, db.xacts, db.inserted, db.updated, db.deleted,
db.autovacuums, db.autoanalyzes, db.checkpoints, amqp.received, amqp.routed, amqp.delivered,
amqp.acked (any of them may be missing).
"""

import os
import re
import sys

# Statements kept in the costs file (the most time first), and the characters of each one's text.
TOP = 10
QUERY_CHARS = 160


def does(query):
    """What a statement writes, in a few words ("INSERT email_log, INSERT outbox"), or the
    table a read starts from ("SELECT sites")."""
    writes = []
    # Not the lock clause FOR UPDATE nor the upsert's DO UPDATE.
    for verb, table in re.findall(r'(?<!FOR )(?<!DO )\b(INSERT INTO|UPDATE|DELETE FROM)\s+"?(\w+)', query, re.I):
        w = f"{verb.split()[0].upper()} {table}"
        if w not in writes:
            writes.append(w)
    if writes:
        return ", ".join(writes)
    words = query.split()
    verb = words[0].upper() if words else ""
    if verb in ("WITH", "(") or verb.startswith("--"):
        verb = "SELECT"
    # The first table read (not a function such as unnest(...)).
    m = re.search(r'\bFROM\s+"?(\w+)"?(?!\w|\s*\()', query, re.I)
    return f"{verb} {m.group(1)}" if m and verb == "SELECT" else query[:40]


def read_kv(path):
    values = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                values[k] = v
    return values


def proc_stats():
    """pid -> (ppid, utime + stime + cutime + cstime) of every process readable now."""
    stats = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2:].split()
        # fields[0] is the state (field 3): ppid is field 4, utime..cstime fields 14..17.
        try:
            stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
        except (IndexError, ValueError):
            continue
    return stats


def tree_ticks(stats, root):
    if root not in stats:
        return None
    children = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


def machine():
    with open("/proc/stat", encoding="utf-8") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    user, nice, system, idle, iowait, irq, softirq, steal = (cpu + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def snapshot(args):
    import time

    stats = proc_stats()
    print(f"clock={time.time():.6f}")
    for arg in args:
        name, _, pid = arg.partition("=")
        ticks = tree_ticks(stats, int(pid)) if pid.isdigit() else None
        print(f"cpu.{name}={'' if ticks is None else ticks}")
    busy, total = machine()
    print(f"machine.busy={busy}")
    print(f"machine.total={total}")
    print(f"cores={os.cpu_count()}")


def number(values, key):
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return None


def fmt(x, digits=4):
    if x is None:
        return ""
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def diff(before_path, after_path, emails, clk_tck, statements=None):
    before, after = read_kv(before_path), read_kv(after_path)
    emails = int(emails)
    clk_tck = float(clk_tck)
    out = [("emails", str(emails))]
    seconds = (number(after, "clock") or 0) - (number(before, "clock") or 0)
    out.append(("seconds", f"{seconds:.3f}"))
    out.append(("clk_tck", f"{clk_tck:g}"))
    out.append(("cores", after.get("cores", "")))

    def delta(key):
        a, b = number(after, key), number(before, key)
        return None if a is None or b is None else a - b

    def per_email(x, scale=1.0):
        return None if x is None or emails <= 0 else x * scale / emails

    ms_per_tick = 1000.0 / clk_tck
    accounted = 0.0
    names = sorted(k[4:] for k in after if k.startswith("cpu."))
    for name in names:
        ticks = delta(f"cpu.{name}")
        if ticks is not None:
            accounted += ticks
        out.append((f"cpu_ms_per_email.{name}", fmt(per_email(ticks, ms_per_tick))))
    busy, total = delta("machine.busy"), delta("machine.total")
    out.append(("cpu_ms_per_email.machine", fmt(per_email(busy, ms_per_tick))))
    out.append(("cpu_ms_per_email.other", fmt(per_email(None if busy is None else busy - accounted, ms_per_tick))))
    if busy is not None and total:
        out.append(("machine_busy_pct", f"{100.0 * busy / total:.1f}"))
    for key, name in (("wal.lsn_bytes", "wal_bytes_per_email"), ("wal.records", "wal_records_per_email"),
                      ("wal.fpi", "wal_fpi_per_email"), ("db.xacts", "xacts_per_email"),
                      ("db.inserted", "rows_inserted_per_email"), ("db.updated", "rows_updated_per_email"),
                      ("db.deleted", "rows_deleted_per_email"), ("amqp.received", "broker_published_per_email"),
                      ("amqp.routed", "broker_routed_per_email"), ("amqp.delivered", "broker_delivered_per_email"),
                      ("amqp.acked", "broker_acked_per_email")):
        out.append((name, fmt(per_email(delta(key)), 3 if "wal_bytes" in name else 4)))
    for key, name in (("db.autovacuums", "autovacuums"), ("db.autoanalyzes", "autoanalyzes"),
                      ("db.checkpoints", "checkpoints")):
        runs = delta(key)
        if runs is not None:
            out.append((name, f"{runs:g}"))
    wal = delta("wal.lsn_bytes")
    if wal is not None and seconds > 0:
        out.append(("wal_mb_per_s", f"{wal / seconds / 1e6:.2f}"))
    if statements:
        # calls, total_exec_ms, rows, wal_bytes, query: every statement of the database,
        # the most time first.
        rows = []
        with open(statements, encoding="utf-8") as fh:
            for line in fh:
                cols = line.rstrip("\n").split("\t", 4)
                if len(cols) == 5 and cols[0].isdigit():
                    calls, ms, nrows, wal = int(cols[0]), float(cols[1]), int(cols[2]), float(cols[3] or 0)
                    rows.append((calls, ms, nrows, wal, cols[4]))
        total_ms = sum(r[1] for r in rows)
        out.append(("statements", str(len(rows))))
        out.append(("statements_calls_per_email", fmt(per_email(sum(r[0] for r in rows)))))
        out.append(("statements_ms_per_email", fmt(per_email(total_ms))))
        out.append(("statements_wal_bytes_per_email", fmt(per_email(sum(r[3] for r in rows)), 1)))
        for i, (calls, ms, nrows, wal, query) in enumerate(sorted(rows, key=lambda r: -r[1])[:TOP], 1):
            out.append((f"statement.{i}.calls_per_email", fmt(per_email(calls))))
            out.append((f"statement.{i}.ms_per_email", fmt(per_email(ms))))
            out.append((f"statement.{i}.mean_ms", fmt(ms / calls if calls else None)))
            out.append((f"statement.{i}.rows_per_call", fmt(nrows / calls if calls else None, 2)))
            out.append((f"statement.{i}.wal_bytes_per_email", fmt(per_email(wal), 1)))
            out.append((f"statement.{i}.share_pct", fmt(100.0 * ms / total_ms if total_ms else None, 1)))
            out.append((f"statement.{i}.does", does(query)))
            out.append((f"statement.{i}.query", query[:QUERY_CHARS]))
    for k, v in out:
        print(f"{k}={v}")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "snapshot":
        snapshot(sys.argv[2:])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "diff":
        diff(*sys.argv[2:])
    else:
        sys.exit(__doc__.strip().splitlines()[2])


if __name__ == "__main__":
    main()
