#!/usr/bin/env python3
"""A stand-in OTLP/HTTP collector for benches/export.sh: answers every POST with 200 after
DELAY_MS milliseconds, counting requests and bytes. Loopback only.

Usage: otlp_sink.py PORT [DELAY_MS]
"""
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        if DELAY:
            time.sleep(DELAY)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
