#!/usr/bin/env python3
"""Deliver delivery status notifications (RFC 3464) to the bounce receiver over SMTP.

usage: dsn-load.py HOST:PORT DOMAIN SECRET IDS_FILE CONNECTIONS

IDS_FILE holds one `email_id address` per line (emails the send-worker sent). Each gets one
DSN, to its VERP return path (`bounce+<token>@DOMAIN`, the token as the send-worker makes it:
base32 of the id's 16 bytes and the first 12 bytes of HMAC-SHA256(SECRET, id), lower case,
no padding), over CONNECTIONS SMTP sessions in parallel, each sending its share in turn.

Each session pipelines its commands (RFC 2920) as a production MTA does: a message's data
goes out only after its DATA was answered 354, in one write with the next message's MAIL,
RCPT and DATA, so a message costs one round trip. (smtplib's four round trips a message, in
threads under the GIL, cost the shared machine more CPU than the receiver's work.)

Prints key=value lines: dsns (sent), accepted (answered 250), seconds (first MAIL to the
last answer).
"""

import asyncio
import base64
import hashlib
import hmac
import sys
import time
import uuid

TAG_BYTES = 12


def return_path(domain, secret, email_id):
    raw = uuid.UUID(email_id).bytes
    tag = hmac.new(secret, raw, hashlib.sha256).digest()[:TAG_BYTES]
    token = base64.b32encode(raw + tag).decode().rstrip("=").lower()
    return f"bounce+{token}@{domain}"


def dsn(rcpt, recipient, n):
    return (
        "From: MAILER-DAEMON@mx.bench.example (Mail Delivery System)\r\n"
        f"To: {rcpt}\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "Date: Thu, 3 Dec 2026 10:00:00 +0000\r\n"
        f"Message-ID: <dsn-{n}@mx.bench.example>\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/report; report-type=delivery-status;\r\n"
        '\tboundary="DSN.BOUNDARY"\r\n'
        "\r\n"
        "--DSN.BOUNDARY\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n"
        "\r\n"
        "Your message could not be delivered.\r\n"
        "\r\n"
        "--DSN.BOUNDARY\r\n"
        "Content-Type: message/delivery-status\r\n"
        "\r\n"
        "Reporting-MTA: dns; mx.bench.example\r\n"
        "\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        f"Diagnostic-Code: smtp; 550 5.1.1 <{recipient}>: user unknown\r\n"
        "\r\n"
        "--DSN.BOUNDARY--\r\n"
    )


class Session:
    """One SMTP session: its replies read one at a time, multi-line ones whole."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def reply(self):
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("the receiver closed the session")
            if line[3:4] != b"-":
                return int(line[:3]), line.decode("ascii", "replace").rstrip()

    async def expect(self, code, what):
        got, text = await self.reply()
        if got != code:
            raise RuntimeError(f"{what}: expected {code}, got {text!r}")


def envelope(rcpt):
    return f"MAIL FROM:<>\r\nRCPT TO:<{rcpt}>\r\nDATA\r\n".encode()


def data(message):
    """The message as DATA sends it: dot-stuffed, ended by a line holding one dot."""
    stuffed = "\r\n".join("." + line if line.startswith(".") else line for line in message.split("\r\n"))
    return (stuffed.rstrip("\r\n") + "\r\n.\r\n").encode()


async def deliver(host, port, share):
    """Sends `share` (return paths and their data) over one session; the number of messages
    answered 250."""
    if not share:
        return 0
    reader, writer = await asyncio.open_connection(host, port)
    s = Session(reader, writer)
    await s.expect(220, "greeting")
    writer.write(b"EHLO mx.bench.example\r\n")
    await s.expect(250, "EHLO")
    accepted = 0
    writer.write(envelope(share[0][0]))
    for i, (rcpt, message) in enumerate(share):
        await s.expect(250, "MAIL")
        await s.expect(250, "RCPT")
        await s.expect(354, "DATA")
        last = i + 1 == len(share)
        writer.write(message + (b"QUIT\r\n" if last else envelope(share[i + 1][0])))
        code, _ = await s.reply()
        accepted += code == 250
    await s.expect(221, "QUIT")
    writer.close()
    await writer.wait_closed()
    return accepted


async def deliver_all(host, port, shares):
    results = await asyncio.gather(*(deliver(host, port, share) for share in shares), return_exceptions=True)
    errors = [f"connection {i}: {r}" for i, r in enumerate(results) if isinstance(r, BaseException)]
    return sum(r for r in results if isinstance(r, int)), errors


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    domain, secret = sys.argv[2], sys.argv[3].encode()
    rows = [line.split() for line in open(sys.argv[4], encoding="utf-8") if line.strip()]
    connections = int(sys.argv[5])
    messages = []
    for n, (email_id, address) in enumerate(rows):
        rcpt = return_path(domain, secret, email_id)
        messages.append((rcpt, data(dsn(rcpt, address, n))))
    shares = [messages[i::connections] for i in range(connections)]
    start = time.monotonic()
    accepted, errors = asyncio.run(deliver_all(host, int(port), shares))
    seconds = time.monotonic() - start
    for e in errors[:5]:
        print(f"error: {e}", file=sys.stderr)
    print(f"dsns={len(messages)}")
    print(f"accepted={accepted}")
    print(f"seconds={seconds:.3f}")


if __name__ == "__main__":
    main()
