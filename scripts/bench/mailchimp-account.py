#!/usr/bin/env python3
"""A Mailchimp-shaped account for the migration scenario of scripts/bench.sh.

usage: mailchimp-account.py PORT API_KEY CONTACTS

Serves on 127.0.0.1:PORT the parts of Mailchimp's Marketing API 3.0 a migration reads, with
HTTP basic auth (any user name, API_KEY as the password), as the in-test server of
services/mail-api/tests/api/platform_migrations/mailchimp.rs does: GET /3.0/ping, /3.0/lists,
/3.0/lists/{id}/members (`status`, `count`, `offset`; `total_items`), /3.0/templates
(`type=user`), /3.0/campaigns and /3.0/campaigns/{id}/content. The account has CONTACTS members
in 3 audiences (member i in audience i % 3), one in 25 of them unsubscribed, 5 user templates
and 2 campaigns. Pages are made when asked, from the member's index: nothing of the account
is held in memory.

Every answer is counted; a line `served=<requests>` is printed to stdout on SIGTERM.
"""

import base64
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LISTS = [("aud1", "Customers"), ("aud2", "Newsletter"), ("aud3", "Leads")]


def unsubscribed(i):
    return i % 25 == 7


def member(i):
    merge = {"FNAME": f"First{i}", "LNAME": f"Last{i}", "ADDRESS": ""}
    if i % 2 == 0:
        merge["CITY"] = "Paris"
    return {
        "id": f"hash{i}",
        "email_address": f"member{i}@bench.example",
        "status": "unsubscribed" if unsubscribed(i) else "subscribed",
        "merge_fields": merge,
        "tags": [{"id": 1, "name": "vip"}] if i % 10 == 0 else [],
    }


class Account:
    def __init__(self, key, contacts):
        self.key = key
        self.contacts = contacts
        self.served = 0

    def audience(self, index, status):
        """The member indexes of audience `index` with `status` (None: all), as a range or a
        list of the matching ones' positions (computed, not stored)."""
        members = range(index, self.contacts, 3)
        if status is None:
            return members
        if status == "unsubscribed":
            return [i for i in members if unsubscribed(i)]
        if status == "subscribed":
            return [i for i in members if not unsubscribed(i)]
        return []


def paged(query, key, items, make):
    count = int(query.get("count", ["10"])[0])
    offset = int(query.get("offset", ["0"])[0])
    return {key: [make(x) for x in items[offset:offset + count]], "total_items": len(items)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    account = None

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.account.served += 1

    def authorized(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Basic "):
            return False
        try:
            _, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        except ValueError:
            return False
        return password == self.account.key

    def do_GET(self):
        if not self.authorized():
            return self.answer(401, {"title": "API Key Invalid", "status": 401})
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        parts = url.path.removeprefix("/3.0/").split("/")
        if parts == ["ping"]:
            return self.answer(200, {"health_status": "Everything's Chimpy!"})
        if parts == ["lists"]:
            return self.answer(200, paged(query, "lists", LISTS, lambda l: {"id": l[0], "name": l[1]}))
        if len(parts) == 3 and parts[0] == "lists" and parts[2] == "members":
            index = next((n for n, (id_, _) in enumerate(LISTS) if id_ == parts[1]), None)
            if index is None:
                return self.answer(404, {"status": 404})
            status = query.get("status", [None])[0]
            return self.answer(200, paged(query, "members", self.account.audience(index, status), member))
        if parts == ["templates"]:
            return self.answer(200, paged(query, "templates", range(1, 6),
                                          lambda i: {"id": 100 + i, "name": f"Template {i}", "type": "user"}))
        if parts == ["campaigns"]:
            return self.answer(200, paged(query, "campaigns", range(1, 3), lambda i: {
                "id": f"camp{i}", "status": "sent",
                "settings": {"title": f"Spring {i}", "subject_line": f"Spring sale {i}"}}))
        if len(parts) == 3 and parts[0] == "campaigns" and parts[2] == "content":
            return self.answer(200, {"html": f"<p>Campaign {parts[1]}</p>", "plain_text": "Campaign"})
        return self.answer(404, {"status": 404, "path": url.path})


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    port, key, contacts = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    Handler.account = Account(key, contacts)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def stop(*_):
        print(f"served={Handler.account.served}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
