#!/usr/bin/env python3
"""Data for the search and write scenarios of scripts/bench.sh.

usage:
  seed.py decisions N USER_ID PRODUCT   CSV rows for COPY decisions (id, user_id,
                                        environment, decision, reasoning, product_name,
                                        tags, decided_at); deterministic
  seed.py corpus N USER_ID              CSV rows for COPY free_form_entries (id, user_id,
                                        environment, content, tags, source, created_at)
  seed.py keyword-paths                 request paths for keyword search
  seed.py semantic-paths                request paths for semantic search (questions
                                        sharing few words with the decisions)
  seed.py memory-search-paths           request paths for GET /memory/search
  seed.py post-bodies N PRODUCT         JSON bodies for POST /memory/decisions
  seed.py decision-bodies N             the first N decisions of `decisions`, as JSON lines

The vocabulary gives 8 x 40 x 25 x 15 = 120,000 distinct decisions; a query of a
technology and an area matches about 1 in 1,000 of them, a single technology 1 in 40.
"""

import csv
import datetime
import json
import sys
import urllib.parse
import uuid

VERBS = ["Adopt", "Replace", "Keep", "Drop", "Evaluate", "Migrate to", "Standardise on", "Retire"]
TECHS = ["PostgreSQL", "MongoDB", "Redis", "Kafka", "RabbitMQ", "Elasticsearch", "Kubernetes",
         "Terraform", "Rust", "Go", "Python", "TypeScript", "React", "Svelte", "Tailwind",
         "GraphQL", "gRPC", "Stripe", "Sentry", "Grafana", "Prometheus", "Vault", "Nginx",
         "Envoy", "ClickHouse", "Snowflake", "Airflow", "dbt", "Figma", "Linear", "Jira",
         "Slack", "Zendesk", "Intercom", "Segment", "Amplitude", "LaunchDarkly", "Cloudflare",
         "Fastly", "Auth0"]
AREAS = ["billing", "checkout", "onboarding", "search", "analytics", "notifications", "mobile",
         "admin", "reporting", "invoicing", "payments", "identity", "support", "marketing",
         "pricing", "catalog", "inventory", "shipping", "refunds", "compliance", "security",
         "logging", "backups", "deploys", "experiments"]
PARTS = ["ledger", "dashboard", "pipeline", "queue", "cache", "gateway", "worker", "scheduler",
         "importer", "exporter", "webhook", "portal", "console", "agent", "index"]
QUESTIONS = [
    "which database did we pick for payments?",
    "what do we use to send messages between services?",
    "how do we watch errors in production?",
    "what language are the backend workers written in?",
    "which tool did we choose for feature toggles?",
    "where do we keep secrets?",
    "what runs our containers?",
    "how are invoices generated?",
    "what did we decide about the mobile app styling?",
    "which warehouse holds the analytics data?",
    "how do customers log in?",
    "what handles support tickets?",
    "which CDN sits in front of the site?",
    "how do we schedule batch jobs?",
    "what did we choose for the refunds queue?",
    "which frontend framework does the admin console use?",
    "how do we store shipping events?",
    "what powers product search?",
    "which dashboards do we use for metrics?",
    "what did we drop from the deploy pipeline?",
]


def decision(i):
    tech = TECHS[i % 40]
    area = AREAS[(i // 40) % 25]
    part = PARTS[(i // 1000) % 15]
    verb = VERBS[(i // 15000) % 8]
    text = f"{verb} {tech} for the {area} {part}"
    reasoning = (f"Chosen after the {area} review: {tech} handles the {part} load "
                 f"with fewer incidents and less operational work.")
    return text, reasoning, [tech.lower(), area, part]


def cmd_decisions(n, user_id, product):
    out = csv.writer(sys.stdout)
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    for i in range(n):
        text, reasoning, tags = decision(i)
        decided = start + datetime.timedelta(minutes=i)
        out.writerow([str(uuid.UUID(int=i + 1, version=4)), user_id, "live", text, reasoning,
                      product, "{" + ",".join(tags) + "}", decided.isoformat()])


def cmd_corpus(n, user_id):
    out = csv.writer(sys.stdout)
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    for i in range(n):
        text, reasoning, tags = decision(i * 7 + 3)
        note = f"Note {i}: {reasoning} Follow up on {text.lower()} next quarter."
        created = start + datetime.timedelta(minutes=i)
        out.writerow([str(uuid.UUID(int=(1 << 64) + i + 1, version=4)), user_id, "live", note,
                      "{" + ",".join(tags) + "}", "bench", created.isoformat()])


def path(route, **params):
    return f"{route}?{urllib.parse.urlencode(params)}"


def cmd_keyword_paths():
    route = "/api/v1/memory/decisions/search"
    for i in range(200):
        if i % 5 == 4:
            q = TECHS[(i * 7) % 40]
        elif i % 2:
            q = f"{TECHS[(i * 3) % 40]} {AREAS[(i * 11) % 25]}"
        else:
            q = f"{AREAS[(i * 13) % 25]} {PARTS[(i * 7) % 15]}"
        print(path(route, q=q, limit=10))


def cmd_semantic_paths():
    for q in QUESTIONS:
        print(path("/api/v1/memory/decisions/search", q=q, limit=10))


def cmd_memory_search_paths():
    for q in QUESTIONS:
        print(path("/api/v1/memory/search", q=q, limit=10))


def cmd_post_bodies(n, product):
    for i in range(n):
        text, reasoning, _ = decision(i * 7919 % 120000)
        print(json.dumps({"decision": f"{text} (bench {i})", "reasoning": reasoning,
                          "product_name": product}))


def cmd_decision_bodies(n):
    for i in range(n):
        text, reasoning, _ = decision(i)
        print(json.dumps({"decision": text, "reasoning": reasoning}))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "decisions" and len(args) == 3:
        cmd_decisions(int(args[0]), args[1], args[2])
    elif cmd == "corpus" and len(args) == 2:
        cmd_corpus(int(args[0]), args[1])
    elif cmd == "keyword-paths" and not args:
        cmd_keyword_paths()
    elif cmd == "semantic-paths" and not args:
        cmd_semantic_paths()
    elif cmd == "memory-search-paths" and not args:
        cmd_memory_search_paths()
    elif cmd == "post-bodies" and len(args) == 2:
        cmd_post_bodies(int(args[0]), args[1])
    elif cmd == "decision-bodies" and len(args) == 1:
        cmd_decision_bodies(int(args[0]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
