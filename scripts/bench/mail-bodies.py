#!/usr/bin/env python3
"""Request bodies for the mail write scenarios of scripts/bench.sh (one JSON body a line).

usage:
  mail-bodies.py identify N   bodies for POST /api/v1/identify
  mail-bodies.py events N     bodies for POST /api/v1/events
  mail-bodies.py send N SITE  bodies for POST /api/v1/send (a new recipient a line; HTML
                              with two links and text, tracking on)
  mail-bodies.py send-personal N SITE
                              the same, personalized: subject, HTML and text with template
                              syntax (variables, a default, a filter) and `data`

Emails vary so that the routes insert and update as they would in use: even lines name a new
contact, odd lines one of the contacts named just before (about half inserts, half updates on a
pass through the file; bench.sh measures from the middle of the file, past the lines its
warm-up sent). Deterministic (fixed seed).
"""

import json
import random
import sys

EVENTS = ["page_view", "page_view", "login", "signup", "purchase"]


def emails(n, prefix, rng):
    for i in range(n):
        # Odd lines: one of the 50 even (new) emails just before them, which the same wrk
        # thread sent a moment ago (each thread reads consecutive lines).
        k = i if i % 2 == 0 else max(0, i - 1 - 2 * rng.randrange(0, 50))
        yield f"{prefix}-{k}@bench.example"


def identify(n, rng):
    for email in emails(n, "bench", rng):
        # The same shape as the pgbench script's upsert (names, properties, tags).
        yield {
            "email": email,
            "first_name": "Ada",
            "properties": {"plan": "pro", "visits": 3},
            "tags": ["bench", "wrk"],
        }


def events(n, rng):
    for i, email in enumerate(emails(n, "evt", rng)):
        yield {
            "email": email,
            "event": EVENTS[i % len(EVENTS)],
            "data": {"path": f"/p/{i % 997}"},
        }


def send(n, site_id):
    for i in range(n):
        yield {
            "to": f"send-{i}@bench.example",
            "site_id": site_id,
            "subject": f"Your receipt #{i}",
            "html": f'<p>Thanks for order {i}!</p><p><a href="https://shop.example/orders/{i}">'
            'Your order</a> · <a href="https://shop.example/help">Help</a></p>',
            "text": f"Thanks for order {i}! https://shop.example/orders/{i}",
            "tags": ["receipt"],
        }


def send_personal(n, site_id):
    for i in range(n):
        yield {
            "to": f"sendp-{i}@bench.example",
            "site_id": site_id,
            "subject": "Your receipt #{{ data.order }}",
            "html": '<p>Thanks {{ first_name | default("there") }} for order {{ data.order }}!</p>'
            '<p><a href="https://shop.example/orders/{{ data.order }}">Your order</a> · '
            '<a href="https://shop.example/help">Help</a> ({{ site.name | upper }})</p>',
            "text": "Thanks for order {{ data.order }}! https://shop.example/orders/{{ data.order }}",
            "data": {"order": i},
            "tags": ["receipt"],
        }


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else None
    if kind in ("identify", "events") and len(sys.argv) == 3:
        rng = random.Random(42)
        bodies = (identify if kind == "identify" else events)(int(sys.argv[2]), rng)
    elif kind == "send" and len(sys.argv) == 4:
        bodies = send(int(sys.argv[2]), sys.argv[3])
    elif kind == "send-personal" and len(sys.argv) == 4:
        bodies = send_personal(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(__doc__.strip().splitlines()[2])
    out = sys.stdout
    for body in bodies:
        out.write(json.dumps(body, separators=(",", ":")))
        out.write("\n")


if __name__ == "__main__":
    main()
