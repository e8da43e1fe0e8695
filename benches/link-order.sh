#!/usr/bin/env bash
# Writes each front end's linker symbol-ordering file (adapter-*/link/symbols.order): the
# functions that one prompt per front end and provider executes, in the order the runs first
# reach them. Each adapter's build.rs hands its file to rust-lld, which places those
# functions together at the start of `.text` (see adapter-acp/build.rs for why).
#
#   bash benches/link-order.sh         # build with link maps, trace, write the three files
#   CHECK=1 bash benches/link-order.sh # only say how much of each file the build still has
#
# Run it again after a change of dependencies or of what a prompt runs: the files name
# symbols with their hashes, and a name the build no longer has is skipped (a stale file
# costs memory, never a failed link). Then `bash benches/process.sh` shows the effect.
#
# Needs valgrind (lackey traces every superblock executed; slow, but it sees all of it),
# python3 and the mock server of process.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release"
note() { printf '%s\n' "$*" >&2; }
[ -n "${CHECK:-}" ] || command -v valgrind >/dev/null || { note "link-order.sh: valgrind is required (apt-get install valgrind)"; exit 1; }

# The mock model server of process.sh, on a recorded stream.
FIXTURE=${FIXTURE:-$ROOT/../shared/fixtures/sse/llama-server-smollm2/smollm2.openai.stream.plain.sse}
# shellcheck source=benches/mock-env.sh
. "$ROOT/benches/mock-env.sh"
mkdir -p "$TMP/maps" "$TMP/traces"

note "link-order.sh: building the release binaries with link maps"
(cd "$ROOT" && AGENT_SDK_LINK_MAP="$TMP/maps" cargo build -q --release \
  -p adapter-stream-json -p adapter-rpc -p adapter-acp)
(cd "$ROOT" && cargo build -q --release -p benches --bin zdrive)
(cd "$ROOT" && cargo build -q --release -p agent-mcp --bin agent-mcp-fixture)
if [ -n "${CHECK:-}" ]; then
  for pkg in adapter-stream-json adapter-rpc adapter-acp; do
    python3 "$ROOT/benches/link_order.py" --check "$ROOT/$pkg/link/symbols.order" "$TMP/maps/$pkg.map"
  done
  exit 0
fi

printf '%s\n' '{"id":"1","type":"prompt","message":"What is in this workspace?"}' >"$TMP/demo.jsonl"

# trace NAME COMMAND…: one run under lackey, its superblocks in $TMP/traces/NAME.
trace() {
  local name=$1
  shift
  valgrind -q --tool=lackey --trace-superblocks=yes --vex-guest-chase=no \
    --log-file="$TMP/traces/$name" "$@"
}
export ZDRIVE_TIMEOUT_S=600
# The first run of each binary decides most of the order: the budgeted prompt on the
# OpenAI wire. The scripted demo adds the tool path (list_dir) and the demo provider.
trace exec-openai "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" "${PROVIDER[@]}" "Say hello." >/dev/null
trace exec-demo "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" "What is in this workspace?" >/dev/null
trace rpc-openai "$BIN/adapter-rpc" rpc --cwd "$WS" "${PROVIDER[@]}" <"$TMP/prompt.jsonl" >/dev/null
trace rpc-demo "$BIN/adapter-rpc" rpc --cwd "$WS" <"$TMP/demo.jsonl" >/dev/null
# Then exec with each capability of process.sh's rows turned on, so what a capability runs
# sits after the base path instead of spread over the file (it only adds to the order: the
# base runs' functions keep their places).
printf '{"hooks": [{"id": "start", "event": "sessionStart", "command": "/bin/true"}]}\n' >"$TMP/hooks.json"
printf '{"mcpServers": {"fixture": {"command": "%s"}}}\n' "$BIN/agent-mcp-fixture" >"$TMP/mcp.json"
printf '# Rules\n\nBe brief.\n' >"$WS/AGENTS.md"
trace exec-hooks "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" --hooks "$TMP/hooks.json" "${PROVIDER[@]}" "Say hello." >/dev/null
trace exec-mcp "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" --mcp-config "$TMP/mcp.json" "${PROVIDER[@]}" "Say hello." >/dev/null
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$PORT" \
  trace exec-otel "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" "${PROVIDER[@]}" "Say hello." >/dev/null
rm "$WS/AGENTS.md"
"$BIN/zdrive" acp "$WS" -- valgrind -q --tool=lackey --trace-superblocks=yes --vex-guest-chase=no \
  --log-file="$TMP/traces/acp-openai" "$BIN/adapter-acp" acp --data-dir "$TMP/data/acp" "${PROVIDER[@]}" >/dev/null
"$BIN/zdrive" prompt "$WS" -- valgrind -q --tool=lackey --trace-superblocks=yes --vex-guest-chase=no \
  --log-file="$TMP/traces/app-server-openai" "$BIN/adapter-acp" app-server --stdio --data-dir "$TMP/data/zcode" "${PROVIDER[@]}" >/dev/null

order() { # package, traces…
  local pkg=$1
  shift
  mkdir -p "$ROOT/$pkg/link"
  python3 "$ROOT/benches/link_order.py" "$TMP/maps/$pkg.map" "$@" >"$ROOT/$pkg/link/symbols.order"
}
T="$TMP/traces"
order adapter-stream-json "$T/exec-openai" "$T/exec-demo" "$T/exec-hooks" "$T/exec-mcp" "$T/exec-otel"
order adapter-rpc "$T/rpc-openai" "$T/rpc-demo"
order adapter-acp "$T/acp-openai" "$T/app-server-openai"
note "link-order.sh: wrote adapter-*/link/symbols.order; rebuild (cargo build --release) to use them"
