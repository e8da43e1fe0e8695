#!/usr/bin/env python3
"""A tiny OpenAI-compatible mock for benches/process.sh (standard library only).

POST .../chat/completions answers with a recorded llama-server stream (the file given as the
first argument) as text/event-stream, in one write. POST .../responses answers with the same
text as an OpenAI Responses stream (the wire Codex speaks), also in one write. Under the
prefix /bulk/N/ (as in http://127.0.0.1:PORT/bulk/100000/v1) chat completions streams N
one-word deltas instead, each event its own chunk and its own write, the way a model server
flushes: the bench times a null client (curl) and exec against it. GET .../models lists one
model; POST /v1/traces takes an OTLP export. It listens on 127.0.0.1, port 0, and prints the chosen port on its first line.
"""
import http.server
import json
import re
import sys

BODY = open(sys.argv[1], "rb").read()


def chat_texts(body):
    """The content deltas of a recorded chat-completions stream, in order."""
    out = []
    for line in body.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:]).get("choices", []):
            text = (choice.get("delta") or {}).get("content")
            if text:
                out.append(text)
    return out


def responses_body(texts):
    """The same answer as a Responses API stream (response.created … response.completed)."""
    full = "".join(texts)
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": full, "annotations": []}]}
    events = [("response.created", {"response": {"id": "resp_1", "status": "in_progress", "output": []}}),
              ("response.output_item.added", {"output_index": 0, "item": dict(item, status="in_progress", content=[])})]
    for t in texts:
        events.append(("response.output_text.delta",
                       {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": t}))
    events.append(("response.output_item.done", {"output_index": 0, "item": item}))
    usage = {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": len(texts), "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 20 + len(texts)}
    events.append(("response.completed",
                   {"response": {"id": "resp_1", "status": "completed", "output": [item], "usage": usage}}))
    return "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(dict(data, type=name)))
                   for name, data in events).encode()


RESPONSES = responses_body(chat_texts(BODY))
BULK = re.compile(r"^/bulk/(\d+)/")
DELTA = b'data: {"choices":[{"index":0,"delta":{"content":"word "}}]}\n\n'
HEAD = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}\n\n'
TAIL = (b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":%d}}\n\ndata: [DONE]\n\n')


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as model servers set it: the head and the body are two writes, and with
    # Nagle on, the body of a second request on a kept-alive connection waits for the
    # client's delayed ACK (40 ms on Linux).
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _bulk(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(HEAD)
        for _ in range(n):
            self._chunk(DELTA)
        self._chunk(TAIL % n)
        self.wfile.write(b"0\r\n\r\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        bulk = BULK.match(self.path)
        if bulk and self.path.endswith("/chat/completions"):
            self._bulk(int(bulk.group(1)))
        elif self.path.endswith("/chat/completions"):
            self._send(200, "text/event-stream", BODY)
        elif self.path.endswith("/v1/traces"):
            # OTLP/HTTP export: an empty ExportTraceServiceResponse.
            self._send(200, "application/x-protobuf", b"")
        elif self.path.endswith("/responses"):
            self._send(200, "text/event-stream", RESPONSES)
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
