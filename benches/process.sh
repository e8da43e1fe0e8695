#!/usr/bin/env bash
# Process-level benchmark of the front ends: wall time and peak RSS of one whole process
# (spawn → one prompt answered by a local mock OpenAI-compatible server on 127.0.0.1 → exit),
# and the memory of N idle ZCode sessions in one app-server process.
#
#   bash benches/process.sh              # build (release), measure, print a report
#   RUNS=30 SESSIONS=1000 bash benches/process.sh
#   SKIP_BUILD=1 bash benches/process.sh # reuse target/release binaries
#
# Public tools only: hyperfine (wall time; installed with apt-get when missing and we are
# root, else the script falls back to timing with /usr/bin/time), GNU time (`/usr/bin/time
# -f %M`, peak RSS), python3 (the mock server, standard library only), and benches' own
# `zdrive`, a minimal ZCode client that keeps app-server's stdin open until the turn ends.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release"
RUNS=${RUNS:-20}
SESSIONS=${SESSIONS:-1000}
FIXTURE=${FIXTURE:-$ROOT/../shared/fixtures/sse/llama-server-smollm2/smollm2.openai.stream.plain.sse}

note() { printf '%s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------------------------
have() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
  if [ "$(id -u)" = 0 ] && have apt-get; then
    note "process.sh: installing $* with apt-get"
    { apt-get update -qq && apt-get install -y -qq "$@"; } >/dev/null 2>&1 || true
  fi
}
have hyperfine || apt_install hyperfine
[ -x /usr/bin/time ] || apt_install time
have python3 || { note "process.sh: python3 is required for the mock server"; exit 1; }
if [ ! -x /usr/bin/time ]; then
  note "process.sh: GNU time (/usr/bin/time) is missing and could not be installed: no RSS figures"
fi
if ! have hyperfine; then
  note "process.sh: hyperfine is missing and could not be installed: wall times come from /usr/bin/time (less precise, no warm-up statistics)"
fi

# --- build -------------------------------------------------------------------------------
if [ -z "${SKIP_BUILD:-}" ]; then
  note "process.sh: building release binaries (fat LTO; slow on a small machine)"
  # (separate commands: `--bin` would filter the targets of every -p package)
  (cd "$ROOT" && cargo build -q --release -p adapter-stream-json -p adapter-rpc)
  (cd "$ROOT" && cargo build -q --release -p benches --bin zdrive)
  (cd "$ROOT" && cargo build -q --release -p adapter-acp) || note "process.sh: adapter-acp did not build; its rows are skipped"
fi
for b in adapter-stream-json adapter-rpc adapter-acp zdrive; do
  [ -x "$BIN/$b" ] || note "process.sh: $BIN/$b is missing"
done

# --- mock server and scratch dirs --------------------------------------------------------
TMP=$(mktemp -d)
MOCK_PID=
cleanup() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
if [ ! -f "$FIXTURE" ]; then
  note "process.sh: no recorded stream at $FIXTURE; using a synthetic one"
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
[ -n "$PORT" ] || { note "process.sh: the mock server did not start"; exit 1; }
URL="http://127.0.0.1:$PORT/v1"
WS="$TMP/ws"
mkdir -p "$WS" "$TMP/data"
printf '# bench\n' >"$WS/README.md"
export XDG_DATA_HOME="$TMP/data"
PROVIDER=(--provider openai --model smollm2 --base-url "$URL" --api-key sk-bench-not-a-key)
printf '%s\n' '{"id":"1","type":"prompt","message":"Say hello."}' >"$TMP/prompt.jsonl"
cat >"$TMP/script.json" <<'JSON'
{"model": "scripted-demo", "turns": [{"steps": [{"text": "Hello"}, {"text": ", I'm here."}, {"usage": {"input": 20, "output": 6}}]}]}
JSON
SCRIPTED=(--provider scripted --script "$TMP/script.json")

q() { printf '%q ' "$@"; }
declare -A CMD
CMD[exec/openai]="$(q "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" "${PROVIDER[@]}" "Say hello.")"
CMD[exec/scripted]="$(q "$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS" "${SCRIPTED[@]}" "Say hello.")"
CMD[rpc/openai]="$(q "$BIN/adapter-rpc" rpc --cwd "$WS" "${PROVIDER[@]}") < $(q "$TMP/prompt.jsonl")"
CMD[rpc/scripted]="$(q "$BIN/adapter-rpc" rpc --cwd "$WS" "${SCRIPTED[@]}") < $(q "$TMP/prompt.jsonl")"
ACP_BASE=("$BIN/adapter-acp" app-server --stdio)
ACP=("${ACP_BASE[@]}" --data-dir "$TMP/data/acp")
CMD[app-server/openai]="$(q "$BIN/zdrive" prompt "$WS" -- "${ACP[@]}" "${PROVIDER[@]}")"
CMD[app-server/scripted]="$(q "$BIN/zdrive" prompt "$WS" -- "${ACP[@]}" "${SCRIPTED[@]}")"
ACPX=("$BIN/adapter-acp" acp --data-dir "$TMP/data/acpx")
CMD[acp/openai]="$(q "$BIN/zdrive" acp "$WS" -- "${ACPX[@]}" "${PROVIDER[@]}")"
CMD[acp/scripted]="$(q "$BIN/zdrive" acp "$WS" -- "${ACPX[@]}" "${SCRIPTED[@]}")"
ORDER=(exec/openai exec/scripted rpc/openai rpc/scripted app-server/openai app-server/scripted acp/openai acp/scripted)

# --- measure -----------------------------------------------------------------------------
# Peak RSS of the front end itself: /usr/bin/time wraps the binary (for app-server inside
# zdrive, so the driver is not counted), best (lowest) and worst of 5 runs, in KiB.
rss_cmd() {
  local key=$1
  case $key in
    app-server/openai) q "$BIN/zdrive" prompt "$WS" -- /usr/bin/time -f %M -o "$TMP/rss" "${ACP[@]}" "${PROVIDER[@]}" ;;
    app-server/scripted) q "$BIN/zdrive" prompt "$WS" -- /usr/bin/time -f %M -o "$TMP/rss" "${ACP[@]}" "${SCRIPTED[@]}" ;;
    acp/openai) q "$BIN/zdrive" acp "$WS" -- /usr/bin/time -f %M -o "$TMP/rss" "${ACPX[@]}" "${PROVIDER[@]}" ;;
    acp/scripted) q "$BIN/zdrive" acp "$WS" -- /usr/bin/time -f %M -o "$TMP/rss" "${ACPX[@]}" "${SCRIPTED[@]}" ;;
    *) printf '/usr/bin/time -f %%M -o %q %s' "$TMP/rss" "${CMD[$key]}" ;;
  esac
}

printf '\n%-22s %10s %10s %10s %12s %12s\n' "front end/provider" "mean ms" "min ms" "σ ms" "peak RSS KiB" "(max of 5)"
for key in "${ORDER[@]}"; do
  cmd=${CMD[$key]}
  if ! bash -c "$cmd" >"$TMP/out" 2>"$TMP/err"; then
    printf '%-22s failed: %s\n' "$key" "$(tail -n 3 "$TMP/err" | tr '\n' ' ')"
    continue
  fi
  if ! grep -q "Hello" "$TMP/out" && [[ $key != app-server/* && $key != acp/* ]]; then
    printf '%-22s no answer on stdout: %s\n' "$key" "$(head -c 300 "$TMP/out")"
    continue
  fi
  mean=- min=- sd=-
  if have hyperfine; then
    hyperfine -w 3 -r "$RUNS" --export-json "$TMP/h.json" "$cmd" >/dev/null 2>&1 || true
    read -r mean min sd < <(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["results"][0]
print("%.1f %.1f %.1f" % (r["mean"]*1e3, r["min"]*1e3, (r.get("stddev") or 0)*1e3))' "$TMP/h.json")
  fi
  lo= hi=
  if [ -x /usr/bin/time ]; then
    rcmd=$(rss_cmd "$key")
    for _ in 1 2 3 4 5; do
      bash -c "$rcmd" >/dev/null 2>&1 || true
      v=$(tail -n1 "$TMP/rss" 2>/dev/null || echo 0)
      [ -z "$lo" ] || [ "$v" -lt "$lo" ] && lo=$v
      [ -z "$hi" ] || [ "$v" -gt "$hi" ] && hi=$v
    done
    if ! have hyperfine; then
      rcmd="/usr/bin/time -f %e -o $(q "$TMP/wall") ${cmd}"
      bash -c "$rcmd" >/dev/null 2>&1 || true
      mean=$(python3 -c 'import sys;print("%.1f"%(float(open(sys.argv[1]).read().split()[-1])*1e3))' "$TMP/wall")
    fi
  fi
  printf '%-22s %10s %10s %10s %12s %12s\n' "$key" "$mean" "$min" "$sd" "${lo:--}" "${hi:--}"
done
note "(app-server and acp rows include zdrive, the client that drives it; exec/rpc rows are the bare binary."
note " hyperfine subtracts the shell's spawn time for the rpc rows, which need a shell for '<'.)"

# --- idle sessions -----------------------------------------------------------------------
if [ -x "$BIN/adapter-acp" ] && [ -x "$BIN/zdrive" ]; then
  printf '\nidle ZCode sessions in one app-server process (%s, openai provider):\n' "$SESSIONS"
  "$BIN/zdrive" idle "$SESSIONS" "$WS" -- "${ACP_BASE[@]}" --data-dir "$TMP/data/idle" "${PROVIDER[@]}" \
    || note "process.sh: the idle-session run failed"
fi
