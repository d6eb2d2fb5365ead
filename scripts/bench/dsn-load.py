#!/usr/bin/env python3
"""Deliver delivery status notifications (RFC 3464) to the bounce receiver over SMTP.

usage: dsn-load.py HOST:PORT DOMAIN SECRET IDS_FILE CONNECTIONS

IDS_FILE holds one `email_id address` per line (emails the send-worker sent). Each gets one
DSN, to its VERP return path (`bounce+<token>@DOMAIN`, the token as the send-worker makes it:
base32 of the id's 16 bytes and the first 12 bytes of HMAC-SHA256(SECRET, id), lower case,
no padding), over CONNECTIONS SMTP sessions in parallel, each sending its share in turn.

Prints key=value lines: dsns (sent), accepted (answered 250), seconds (first MAIL to the
last answer).
"""

import base64
import hashlib
import hmac
import smtplib
import sys
import threading
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


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    domain, secret = sys.argv[2], sys.argv[3].encode()
    rows = [line.split() for line in open(sys.argv[4], encoding="utf-8") if line.strip()]
    connections = int(sys.argv[5])
    messages = [
        (return_path(domain, secret, email_id), dsn(return_path(domain, secret, email_id), address, n))
        for n, (email_id, address) in enumerate(rows)
    ]
    shares = [messages[i::connections] for i in range(connections)]
    accepted = [0] * connections
    errors = []

    def deliver(i):
        try:
            with smtplib.SMTP(host, int(port), timeout=60) as smtp:
                smtp.ehlo("mx.bench.example")
                for rcpt, message in shares[i]:
                    refused = smtp.sendmail("", [rcpt], message)
                    if not refused:
                        accepted[i] += 1
        except (OSError, smtplib.SMTPException) as e:
            errors.append(f"connection {i}: {e}")

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(connections)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    for e in errors[:5]:
        print(f"error: {e}", file=sys.stderr)
    print(f"dsns={len(messages)}")
    print(f"accepted={sum(accepted)}")
    print(f"seconds={seconds:.3f}")


if __name__ == "__main__":
    main()
