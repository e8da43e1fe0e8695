# Sourced by process.sh and link-order.sh: the scratch directory and the mock model server they
# both run one prompt against. Expects ROOT, FIXTURE and a `note` function; sets TMP (removed at
# exit, with the server stopped), PORT, URL, WS (a one-file workspace), XDG_DATA_HOME, PROVIDER
# (the flags that point a front end at the mock) and $TMP/prompt.jsonl (one rpc prompt).
# shellcheck shell=bash
TMP=$(mktemp -d)
MOCK_PID=
cleanup() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
SELF=$(basename "$0")
if [ ! -f "$FIXTURE" ]; then
  note "$SELF: no recorded stream at $FIXTURE; using a synthetic one"
  FIXTURE="$TMP/stream.sse"
  {
    printf 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}\n\n'
    for w in Hello , " I" "'m" " here" .; do
      printf 'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' "$w"
    done
    printf 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    printf 'data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":6}}\n\ndata: [DONE]\n\n'
  } >"$FIXTURE"
fi
python3 "$ROOT/benches/mock_openai.py" "$FIXTURE" >"$TMP/port" &
MOCK_PID=$!
for _ in $(seq 1 100); do
  [ -s "$TMP/port" ] && break
  sleep 0.05 # waiting for the server to print its port (bounded: 5 s)
done
PORT=$(head -n1 "$TMP/port")
[ -n "$PORT" ] || { note "$SELF: the mock server did not start"; exit 1; }
URL="http://127.0.0.1:$PORT/v1"
WS="$TMP/ws"
mkdir -p "$WS" "$TMP/data"
printf '# bench\n' >"$WS/README.md"
export XDG_DATA_HOME="$TMP/data"
PROVIDER=(--provider openai --model smollm2 --base-url "$URL" --api-key sk-bench-not-a-key)
printf '%s\n' '{"id":"1","type":"prompt","message":"Say hello."}' >"$TMP/prompt.jsonl"
