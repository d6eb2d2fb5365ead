"""A webhook receiver for the bench (scenario y): answers 204 to every POST, counts them, and
serves the count at GET /stats. usage: webhook-receiver.py PORT"""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNT = 0
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (the standard library's name)
        global COUNT
        self.rfile.read(int(self.headers.get("content-length", "0")))
        with LOCK:
            COUNT += 1
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):  # noqa: N802
        body = str(COUNT).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
