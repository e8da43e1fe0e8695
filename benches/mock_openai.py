#!/usr/bin/env python3
"""A tiny OpenAI-compatible mock for benches/process.sh (standard library only).

POST .../chat/completions answers with a recorded llama-server stream (the file given as the
first argument) as text/event-stream; GET .../models lists one model. It listens on
127.0.0.1, port 0, and prints the chosen port on its first line of stdout.
"""
import http.server
import json
import sys

BODY = open(sys.argv[1], "rb").read()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path.endswith("/chat/completions"):
            self._send(200, "text/event-stream", BODY)
        else:
            self._send(404, "application/json", b'{"error":{"message":"not found"}}')

    def do_GET(self):
        if self.path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "smollm2", "object": "model"}]})
            self._send(200, "application/json", body.encode())
        else:
            self._send(404, "application/json", b'{"error":{"message":"not found"}}')


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
