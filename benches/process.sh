#!/usr/bin/env bash
# Process-level benchmark of the front ends beside their peers, in one run: wall time and peak
# RSS of one whole process (spawn → one prompt answered by a local mock model server on
# 127.0.0.1 → exit) per front end and per capability turned on, Codex's `exec` and
# codex-acp on the same mock, 100 k streamed deltas through exec against the mock's own rate,
# the stripped binaries' sizes, and the memory of N idle ZCode sessions. It ends with the
# budgets of benches/README.md, each measured figure beside its bound.
#
#   bash benches/process.sh              # build (release), measure, print a report
#   RUNS=30 SESSIONS=1000 bash benches/process.sh
#   SKIP_BUILD=1 bash benches/process.sh # reuse target/release binaries
#   PEERS=0 bash benches/process.sh      # without Codex and codex-acp (no npm needed)
#
# Public tools only: hyperfine (wall time; installed with apt-get when missing and we are
# root), GNU time (`/usr/bin/time -f %M`, peak RSS), python3 (the mock server, standard
# library only), curl (the mock's own rate), benches' own `zdrive` (a minimal ZCode/ACP client
# that keeps stdin open until the turn ends), and, for the peers, Node with the npm packages
# pinned in benches/peers (Codex, codex-acp and the official ACP client SDK).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release"
RUNS=${RUNS:-20}
SESSIONS=${SESSIONS:-1000}
PEERS=${PEERS:-1}
DELTAS=${DELTAS:-100000}
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
have curl || apt_install curl
have python3 || { note "process.sh: python3 is required for the mock server"; exit 1; }
have hyperfine || { note "process.sh: hyperfine is required (apt-get install hyperfine)"; exit 1; }
[ -x /usr/bin/time ] || { note "process.sh: GNU time is required (apt-get install time)"; exit 1; }

# --- build -------------------------------------------------------------------------------
if [ -z "${SKIP_BUILD:-}" ]; then
  note "process.sh: building release binaries (fat LTO; slow on a small machine)"
  # (separate commands: `--bin` would filter the targets of every -p package)
  (cd "$ROOT" && cargo build -q --release -p adapter-stream-json -p adapter-rpc -p adapter-acp)
  (cd "$ROOT" && cargo build -q --release -p benches --bin zdrive)
  (cd "$ROOT" && cargo build -q --release -p agent-mcp --bin agent-mcp-fixture)
fi
for b in adapter-stream-json adapter-rpc adapter-acp zdrive agent-mcp-fixture; do
  [ -x "$BIN/$b" ] || { note "process.sh: $BIN/$b is missing (build without SKIP_BUILD)"; exit 1; }
done

# --- peers -------------------------------------------------------------------------------
PEER_DIR="$ROOT/benches/peers"
CODEX= CODEX_ACP=
if [ "$PEERS" != 0 ]; then
  have node && have npm || { note "process.sh: Node and npm are required for the peers (PEERS=0 skips them)"; exit 1; }
  if [ ! -d "$PEER_DIR/node_modules/@openai/codex" ]; then
    note "process.sh: installing the peers (npm ci in benches/peers)"
    (cd "$PEER_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
  # The native binaries inside the packages, not their Node launchers: the peers' own time.
  CODEX=$(find "$PEER_DIR/node_modules/@openai" -path '*/bin/codex' -type f | head -n1)
  CODEX_ACP=$(find "$PEER_DIR/node_modules/@zed-industries" -path '*/bin/codex-acp' -type f | head -n1)
  [ -x "$CODEX" ] && [ -x "$CODEX_ACP" ] || { note "process.sh: the peers' binaries are missing under $PEER_DIR/node_modules"; exit 1; }
fi

# --- mock server and scratch dirs --------------------------------------------------------
# shellcheck source=benches/mock-env.sh
. "$ROOT/benches/mock-env.sh"
mkdir -p "$TMP/codex"
cat >"$TMP/script.json" <<'JSON'
{"model": "scripted-demo", "turns": [{"steps": [{"text": "Hello"}, {"text": ", I'm here."}, {"usage": {"input": 20, "output": 6}}]}]}
JSON
SCRIPTED=(--provider scripted --script "$TMP/script.json")
# The capabilities, one at a time: a command hook at session start, one stdio MCP server,
# OTLP export to the mock (which takes POST /v1/traces), the sandbox turned off.
printf '{"hooks": [{"id": "start", "event": "sessionStart", "command": "/bin/true"}]}\n' >"$TMP/hooks.json"
printf '{"mcpServers": {"fixture": {"command": "%s"}}}\n' "$BIN/agent-mcp-fixture" >"$TMP/mcp.json"
# Language servers configured and unused (nothing starts without a tool call).
printf '{"servers": {"pyright-langserver": {"command": "pyright-langserver"}}}\n' >"$TMP/lsp.json"
# The project's context: an AGENTS.md in the workspace and one skill (read at the session's
# start; the skill's body only when the model asks for it).
mkdir -p "$TMP/wsp" "$TMP/skills/release-notes"
printf '# Project rules\n\nRun the tests before you answer.\n' >"$TMP/wsp/AGENTS.md"
printf -- '---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nRead the log, group by area.\n' \
  >"$TMP/skills/release-notes/SKILL.md"
# The unattended-run guards: permission rules from a settings file, a spend cap, a fallback model.
printf '{"permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./secrets/**)"]}}\n' >"$TMP/settings.json"
cat >"$TMP/codex/config.toml" <<TOML
model = "smollm2"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "$URL"
wire_api = "responses"
env_key = "MOCK_API_KEY"
TOML
export MOCK_API_KEY=sk-bench-not-a-key

q() { printf '%q ' "$@"; }
EXEC=("$BIN/adapter-stream-json" exec -o stream-json --cwd "$WS")
ACP_BASE=("$BIN/adapter-acp" app-server --stdio)
ACP=("${ACP_BASE[@]}" --data-dir "$TMP/data/acp")
ACPX=("$BIN/adapter-acp" acp --data-dir "$TMP/data/acpx")
declare -A CMD STDIN DRIVE
add() { # key, stdin file or -, driver (- | prompt | acp), command...
  local key=$1 input=$2 drive=$3
  shift 3
  CMD[$key]=$(q "$@")
  STDIN[$key]=$input
  DRIVE[$key]=$drive
  ORDER+=("$key")
}
ORDER=()
add exec/openai - - "${EXEC[@]}" "${PROVIDER[@]}" "Say hello."
add exec/scripted - - "${EXEC[@]}" "${SCRIPTED[@]}" "Say hello."
add rpc/openai "$TMP/prompt.jsonl" - "$BIN/adapter-rpc" rpc --cwd "$WS" "${PROVIDER[@]}"
add rpc/scripted "$TMP/prompt.jsonl" - "$BIN/adapter-rpc" rpc --cwd "$WS" "${SCRIPTED[@]}"
add app-server/openai - prompt "${ACP[@]}" "${PROVIDER[@]}"
add app-server/scripted - prompt "${ACP[@]}" "${SCRIPTED[@]}"
add acp/openai - acp "${ACPX[@]}" "${PROVIDER[@]}"
add acp/scripted - acp "${ACPX[@]}" "${SCRIPTED[@]}"
add "exec/openai +hooks" - - "${EXEC[@]}" --hooks "$TMP/hooks.json" "${PROVIDER[@]}" "Say hello."
add "exec/openai +mcp" - - "${EXEC[@]}" --mcp-config "$TMP/mcp.json" "${PROVIDER[@]}" "Say hello."
add "exec/openai +otel" - - env OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$PORT" "${EXEC[@]}" "${PROVIDER[@]}" "Say hello."
add "exec/openai +lsp" - - "${EXEC[@]}" --lsp-config "$TMP/lsp.json" "${PROVIDER[@]}" "Say hello."
add "exec/openai +project" - - env ZERO_SKILLS_DIR="$TMP/skills" "$BIN/adapter-stream-json" exec -o stream-json --cwd "$TMP/wsp" "${PROVIDER[@]}" "Say hello."
# (a spend cap needs a priced model: the mock answers to any name)
add "exec/openai +guards" - - "${EXEC[@]}" --settings "$TMP/settings.json" --max-budget-usd 5 --fallback-model gpt-4.1 \
  --provider openai --model gpt-4.1-mini --base-url "$URL" --api-key sk-bench-not-a-key "Say hello."
add "exec/openai -sandbox" - - "${EXEC[@]}" --sandbox off "${PROVIDER[@]}" "Say hello."
if [ -n "$CODEX" ]; then
  add "codex exec (peer)" - - env CODEX_HOME="$TMP/codex" "$CODEX" exec --skip-git-repo-check -C "$WS" "Say hello."
fi

# The command as hyperfine runs it, and as /usr/bin/time wraps the front end itself (for
# app-server and acp inside zdrive, so the driver is not counted).
run_cmd() { # key, prefix for the front end
  local key=$1 prefix=$2 cmd=${CMD[$1]}
  case ${DRIVE[$key]} in
    prompt | acp) cmd="$(q "$BIN/zdrive" "${DRIVE[$key]}" "$WS") -- $prefix$cmd" ;;
    *) cmd="$prefix$cmd" ;;
  esac
  [ "${STDIN[$key]}" = - ] || cmd="$cmd < $(q "${STDIN[$key]}")"
  printf '%s' "$cmd"
}

# --- the disk's state -------------------------------------------------------------------
# app-server and acp create a session's files and sync them before they report a turn's
# end, so their rows follow the disk. Its fdatasync and file-creation latency, printed before
# and after the rows, say what state it was in.
disk_state() { # label
  python3 - "$TMP" "$1" <<'PY'
import os, statistics, sys, time
tmp, label = sys.argv[1], sys.argv[2]
syncs, creates = [], []
with open(os.path.join(tmp, "fsync-probe"), "ab") as f:
    for _ in range(20):
        f.write(b"x" * 512 + b"\n")
        f.flush()
        start = time.perf_counter()
        os.fdatasync(f.fileno())
        syncs.append((time.perf_counter() - start) * 1000)
os.unlink(os.path.join(tmp, "fsync-probe"))
for i in range(20):
    path = os.path.join(tmp, "create-probe-%d" % i)
    start = time.perf_counter()
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    creates.append((time.perf_counter() - start) * 1000)
    os.unlink(path)
print("disk (%s): append + fdatasync %.2f ms (max %.2f), create a file %.3f ms (max %.3f); medians of 20"
      % (label, statistics.median(syncs), max(syncs), statistics.median(creates), max(creates)))
PY
}
# The CPU's state: time the hypervisor gave to others (steal) and time waiting on the disk
# (iowait) while the rows ran, from /proc/stat (Linux; nothing printed elsewhere). A run
# whose rows stall with neither is stalled by something else.
cpu_sample() { [ -r /proc/stat ] && head -n1 /proc/stat || true; }
cpu_state() { # sample before
  python3 - "$1" "$(cpu_sample)" <<'PY'
import sys
a, b = sys.argv[1].split()[1:], sys.argv[2].split()[1:]
if a and b:
    d = [int(y) - int(x) for x, y in zip(a, b)]
    total = sum(d[:8]) or 1
    print("cpu (during the rows): steal %.1f %%, iowait %.1f %%, busy %.1f %% of %d jiffies"
          % (100 * d[7] / total, 100 * d[4] / total, 100 * (total - d[3] - d[4]) / total, total))
PY
}
printf '\n'
disk_state "before the rows"
CPU_BEFORE=$(cpu_sample)

# --- one prompt per process --------------------------------------------------------------
declare -A MEDIAN RSS
printf '\n%-24s %9s %9s %9s %9s %12s %12s\n' "front end/provider" "median ms" "mean ms" "min ms" "σ ms" "peak RSS KiB" "(max of 5)"
for key in "${ORDER[@]}"; do
  cmd=$(run_cmd "$key" "")
  if ! bash -c "$cmd" >"$TMP/out" 2>"$TMP/err"; then
    printf '%-24s failed: %s\n' "$key" "$(tail -n 3 "$TMP/err" | tr '\n' ' ')"
    continue
  fi
  if [ "${DRIVE[$key]}" = - ] && ! grep -q "Hello" "$TMP/out"; then
    printf '%-24s no answer on stdout: %s\n' "$key" "$(head -c 300 "$TMP/out")"
    continue
  fi
  # hyperfine's shell is measured and subtracted (its default), so `<` costs nothing. A
  # front end driven by zdrive is timed by zdrive, from spawning it to its exit, as
  # hyperfine times the others (ZDRIVE_TIMES; the driver's own start and exit left out).
  rm -f "$TMP/zdrive.times"
  ZDRIVE_TIMES="$TMP/zdrive.times" hyperfine -w 3 -r "$RUNS" --export-json "$TMP/h.json" "$cmd" >/dev/null 2>&1 || true
  read -r median mean min sd < <(python3 -c '
import json,os,statistics,sys
r=json.load(open(sys.argv[1]))["results"][0]
ms=[t*1e3 for t in r["times"]]
if os.path.exists(sys.argv[2]):
    ms=[float(l) for l in open(sys.argv[2])][-len(ms):]
print("%.1f %.1f %.1f %.1f" % (statistics.median(ms), statistics.mean(ms), min(ms), statistics.stdev(ms) if len(ms) > 1 else 0))' "$TMP/h.json" "$TMP/zdrive.times")
  lo= hi=
  rcmd=$(run_cmd "$key" "/usr/bin/time -f %M -o $(q "$TMP/rss") ")
  for _ in 1 2 3 4 5; do
    bash -c "$rcmd" >/dev/null 2>&1 || true
    v=$(tail -n1 "$TMP/rss" 2>/dev/null || echo 0)
    [ -z "$lo" ] || [ "$v" -lt "$lo" ] && lo=$v
    [ -z "$hi" ] || [ "$v" -gt "$hi" ] && hi=$v
  done
  MEDIAN[$key]=$median
  RSS[$key]=$lo
  printf '%-24s %9s %9s %9s %9s %12s %12s\n' "$key" "$median" "$mean" "$min" "$sd" "$lo" "$hi"
done
disk_state "after the rows"
[ -z "$CPU_BEFORE" ] || cpu_state "$CPU_BEFORE"
note "(app-server and acp rows are timed by zdrive, the client that drives them, from spawning the front end"
note " to its exit; the others by hyperfine, the bare binary. Peak RSS is the front end's own in every row."
note " Capability rows are exec/openai with one capability turned on, or the sandbox turned off.)"

# --- the ACP prompt beside codex-acp, through the official ACP client SDK ----------------
declare -A ACP_MS
acp_prompt() { # label, agent command…
  local label=$1
  shift
  if node "$PEER_DIR/acp_prompt.mjs" 7 "$WS" -- "$@" >"$TMP/acp.jsonl" 2>"$TMP/acp.err"; then
    ACP_MS[$label]=$(python3 -c '
import json,statistics,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print("%.1f" % statistics.median(r["prompt_ms"] for r in rows))' "$TMP/acp.jsonl")
    printf '%-24s %9s ms (median of 7 session/prompt requests, each in a fresh process)\n' "$label" "${ACP_MS[$label]}"
  else
    printf '%-24s failed: %s\n' "$label" "$(tail -n 3 "$TMP/acp.err" | tr '\n' ' ')"
  fi
}
if [ "$PEERS" != 0 ]; then
  printf '\nACP session/prompt through @agentclientprotocol/sdk, same mock:\n'
  acp_prompt "adapter-acp acp" "${ACPX[@]}" "${PROVIDER[@]}"
  CODEX_HOME="$TMP/codex" acp_prompt "codex-acp (peer)" "$CODEX_ACP"
fi

# --- streamed deltas through exec against the mock's own rate ----------------------------
BULK="http://127.0.0.1:$PORT/bulk/$DELTAS/v1"
printf '\n%s streamed deltas (each its own chunk and write, as a model server flushes):\n' "$DELTAS"
hyperfine -w 1 -r 5 --export-json "$TMP/bulk.json" \
  "curl -s -N -X POST -d '{}' $(q "$BULK/chat/completions") >/dev/null" \
  "$(q "${EXEC[@]}" --provider openai --model smollm2 --base-url "$BULK" --api-key sk-bench-not-a-key "Say hello.") >/dev/null" \
  >/dev/null 2>&1 || true
read -r MOCK_S EXEC_S < <(python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["results"]
print("%.3f %.3f" % (r[0]["median"], r[1]["median"]))' "$TMP/bulk.json")
printf '  the mock to curl (its own rate)  %6s s\n  the mock through exec to a sink  %6s s\n' "$MOCK_S" "$EXEC_S"

# --- binaries ----------------------------------------------------------------------------
printf '\nrelease binaries (stripped):\n'
declare -A SIZE
for b in adapter-stream-json adapter-rpc adapter-acp; do
  SIZE[$b]=$(stat -c %s "$BIN/$b")
  printf '  %-22s %6.1f MiB\n' "$b" "$(python3 -c "print(${SIZE[$b]}/1048576)")"
done

# --- idle sessions -----------------------------------------------------------------------
printf '\nidle ZCode sessions in one app-server process (%s, openai provider):\n' "$SESSIONS"
"$BIN/zdrive" idle "$SESSIONS" "$WS" -- "${ACP_BASE[@]}" --data-dir "$TMP/data/idle" "${PROVIDER[@]}" \
  || note "process.sh: the idle-session run failed"

# --- budgets -----------------------------------------------------------------------------
printf '\nbudgets (benches/README.md):\n'
OVER=0
budget() { # what, measured, <= or >=, bound, unit
  local ok=ok
  python3 -c "import sys; sys.exit(0 if float('$2') $3 float('$4') else 1)" || { ok=OVER; OVER=1; }
  printf '  %-4s %-50s %8s %-4s (bound %s %s)\n' "$ok" "$1" "$2" "$5" "$3" "$4"
}
mib() { python3 -c "print('%.1f' % ($1/1024))"; }
for key in exec/openai rpc/openai; do
  [ -n "${RSS[$key]:-}" ] && budget "$key peak RSS" "$(mib "${RSS[$key]}")" "<=" 10 MiB
done
for key in app-server/openai acp/openai; do
  [ -n "${RSS[$key]:-}" ] && budget "$key peak RSS" "$(mib "${RSS[$key]}")" "<=" 11 MiB
done
if [ -n "${MEDIAN[codex exec (peer)]:-}" ]; then
  for key in exec/openai rpc/openai app-server/openai acp/openai; do
    [ -n "${MEDIAN[$key]:-}" ] && budget "$key time / codex exec's" \
      "$(python3 -c "print('%.3f' % (${MEDIAN[$key]}/${MEDIAN[codex exec (peer)]}))")" "<=" 0.03 ""
  done
fi
if [ -n "${ACP_MS[adapter-acp acp]:-}" ] && [ -n "${ACP_MS[codex-acp (peer)]:-}" ]; then
  budget "ACP prompt / codex-acp's" \
    "$(python3 -c "print('%.3f' % (${ACP_MS[adapter-acp acp]}/${ACP_MS[codex-acp (peer)]}))")" "<=" 0.1 ""
fi
for b in adapter-stream-json adapter-rpc adapter-acp; do
  budget "$b stripped size" "$(python3 -c "print('%.1f' % (${SIZE[$b]}/1048576))")" "<=" 12 MiB
done
if [ -n "${EXEC_S:-}" ]; then
  budget "$DELTAS deltas: exec's rate / the mock's own" \
    "$(python3 -c "print('%.2f' % (${MOCK_S}/${EXEC_S}))")" ">=" 0.6 ""
fi
[ "$OVER" = 0 ] && note "process.sh: every budget holds" || note "process.sh: a budget is over (see OVER above)"
