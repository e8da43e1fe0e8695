#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests of the PostgreSQL session store
# (agent-store-postgres): `initdb` + `pg_ctl` in a temporary directory, listening on a free
# loopback port, trust authentication, gone after `stop`.
#
# Usage:
#   scripts/pg-test.sh start    create a cluster and start it; prints `export AGENT_SDK_PG_URL=…`
#                               (and the other variables below) on stdout — eval them — and writes
#                               the same to the state file
#   scripts/pg-test.sh stop     stop the server and delete its directory
#   scripts/pg-test.sh pause    stop the server, keeping its data and port (a database outage)
#   scripts/pg-test.sh resume   start a paused server again on the same port
#   scripts/pg-test.sh env      print the export lines of the running server
#
# Exported:
#   AGENT_SDK_PG_URL    postgres://postgres@127.0.0.1:PORT/postgres (a superuser: tests create a
#                       database each)
#   AGENT_SDK_PG_DIR    the server's directory (data, socket, log)
#   AGENT_SDK_PG_PORT   the port
#
# Environment:
#   AGENT_SDK_PG_STATE  state file (default: $TMPDIR/agent-sdk-pg.env); one server per state file,
#                       so a test can run a private server beside the shared one
#   AGENT_SDK_PG_BIN    directory of initdb/pg_ctl (default: from PATH, else the newest
#                       /usr/lib/postgresql/*/bin)
#   PG_READY_TIMEOUT    seconds to wait for the server to accept connections (default: 60)
#   AGENT_SDK_PG_OWNER  a pid: `start` leaves a watchdog (in a session of its own) that stops the
#                       server once that process is gone (the tests' helpers pass the
#                       `cargo test` running them, so no server outlives the run)
#
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user (or
# `nobody`) and the server runs as that user. Progress goes to stderr; stdout of `start`/`env`
# carries only the export lines.
set -euo pipefail

STATE="${AGENT_SDK_PG_STATE:-${TMPDIR:-/tmp}/agent-sdk-pg.env}"
READY_TIMEOUT="${PG_READY_TIMEOUT:-60}"

log() { printf 'pg-test: %s\n' "$*" >&2; }
die() { printf 'pg-test: error: %s\n' "$*" >&2; exit 1; }

bin_dir() {
    if [[ -n "${AGENT_SDK_PG_BIN:-}" ]]; then
        [[ -x "${AGENT_SDK_PG_BIN}/pg_ctl" ]] || die "no pg_ctl in AGENT_SDK_PG_BIN=${AGENT_SDK_PG_BIN}"
        printf '%s\n' "$AGENT_SDK_PG_BIN"
        return 0
    fi
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v pg_ctl)")"
        return 0
    fi
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
    [[ -n "$dir" && -x "${dir}/pg_ctl" ]] \
        || die "PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql); \
the PostgreSQL session store tests need it (apt-get install postgresql)"
    printf '%s\n' "$dir"
}

# The user the server runs as: ourselves, or when we are root one PostgreSQL accepts.
server_user() {
    if [[ "$(id -u)" != 0 ]]; then
        id -un
    elif id postgres >/dev/null 2>&1; then
        echo postgres
    else
        echo nobody
    fi
}

# Runs a command as the server's user.
as_server() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u "$(server_user)" -- "$@"
    else
        "$@"
    fi
}

free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
        return 0
    fi
    local port
    for _ in $(seq 1 100); do
        port=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free port found"
}

# The start time of process $1 (field 22 of /proc/PID/stat), nothing when it is gone: a pid
# told apart from a later process with the same pid.
proc_start() {
    local stat rest
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
    rest="${stat##*) }"
    # shellcheck disable=SC2086
    set -- $rest
    [[ "${1:-}" == Z || "${1:-}" == X ]] && return 0
    printf '%s\n' "${20:-}"
}

# Leaves a watchdog that runs `stop` (on this state file) once process $1 is gone; it runs in a
# session of its own, so a Ctrl-C to the owner's terminal does not take it down first.
spawn_watchdog() {
    local owner="$1" dir="$2" started self
    started="$(proc_start "$owner")"
    [[ -n "$started" ]] || die "the owner process ${owner} is gone"
    self="$(readlink -f "$0")"
    AGENT_SDK_PG_STATE="$STATE" setsid "$self" watch "$owner" "$started" \
        </dev/null >>"${dir}/watchdog.log" 2>&1 &
    log "watchdog $! stops the server when process ${owner} ends"
}

# The watchdog's loop (internal): waits for process $1 (started at $2) to end, then stops.
watch() {
    local owner="$1" started="$2"
    while [[ "$(proc_start "$owner")" == "$started" ]]; do
        sleep 1
    done
    stop
}

load_state() {
    [[ -f "$STATE" ]] || die "no server recorded (${STATE} is missing); run: $0 start"
    # shellcheck disable=SC1090
    source "$STATE"
}

print_env() {
    load_state
    printf 'export AGENT_SDK_PG_URL=%q\n' "$AGENT_SDK_PG_URL"
    printf 'export AGENT_SDK_PG_DIR=%q\n' "$AGENT_SDK_PG_DIR"
    printf 'export AGENT_SDK_PG_PORT=%q\n' "$AGENT_SDK_PG_PORT"
}

ready() {
    local bin="$1" port="$2" dir="$3" deadline=$((SECONDS + READY_TIMEOUT))
    until "${bin}/pg_isready" -q -h 127.0.0.1 -p "$port" -t 2 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            tail -n 40 "${dir}/server.log" >&2 || true
            log "error: the server did not accept connections within ${READY_TIMEOUT}s (log: ${dir}/server.log)"
            return 1
        fi
        sleep 0.2
    done
}

pg_start() {
    local bin="$1" dir="$2" port="$3"
    as_server "${bin}/pg_ctl" -D "${dir}/data" -l "${dir}/server.log" -w -t "$READY_TIMEOUT" \
        -o "-p ${port} -k ${dir}/socket -c listen_addresses=127.0.0.1 -c max_connections=300" \
        start >/dev/null || {
        tail -n 40 "${dir}/server.log" >&2 || true
        log "error: pg_ctl start failed (log: ${dir}/server.log)"
        return 1
    }
    ready "$bin" "$port" "$dir"
}

start() {
    local bin dir port user
    if [[ -f "$STATE" ]]; then
        # shellcheck disable=SC1090
        source "$STATE"
        bin="$(bin_dir)"
        if "${bin}/pg_isready" -q -h 127.0.0.1 -p "${AGENT_SDK_PG_PORT:-0}" -t 2 2>/dev/null; then
            log "already running at ${AGENT_SDK_PG_URL}"
            print_env
            return 0
        fi
        rm -f "$STATE"
    fi
    bin="$(bin_dir)"
    user="$(server_user)"
    dir="$(mktemp -d "${TMPDIR:-/tmp}/agent-sdk-pg.XXXXXX")"
    mkdir -p "${dir}/socket"
    if [[ "$(id -u)" == 0 ]]; then
        chown -R "$user" "$dir"
    fi
    log "initdb in ${dir} (as ${user})"
    as_server "${bin}/initdb" -D "${dir}/data" -U postgres --auth=trust -E UTF8 --locale=C \
        --no-sync >"${dir}/initdb.log" 2>&1 || {
        tail -n 40 "${dir}/initdb.log" >&2
        die "initdb failed (log: ${dir}/initdb.log)"
    }
    port="$(free_port)"
    if ! pg_start "$bin" "$dir" "$port"; then
        # Never leave a half-started server behind.
        as_server "${bin}/pg_ctl" -D "${dir}/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$dir"
        die "could not start PostgreSQL"
    fi
    mkdir -p "$(dirname "$STATE")"
    {
        printf 'AGENT_SDK_PG_URL=%q\n' "postgres://postgres@127.0.0.1:${port}/postgres"
        printf 'AGENT_SDK_PG_DIR=%q\n' "$dir"
        printf 'AGENT_SDK_PG_PORT=%q\n' "$port"
    } >"$STATE"
    log "PostgreSQL at 127.0.0.1:${port} (${dir})"
    if [[ -n "${AGENT_SDK_PG_OWNER:-}" ]]; then
        spawn_watchdog "$AGENT_SDK_PG_OWNER" "$dir"
    fi
    print_env
}

stop() {
    if [[ ! -f "$STATE" ]]; then
        log "nothing to stop (${STATE} is missing)"
        return 0
    fi
    load_state
    local bin
    bin="$(bin_dir)"
    if [[ -d "${AGENT_SDK_PG_DIR}/data" ]]; then
        as_server "${bin}/pg_ctl" -D "${AGENT_SDK_PG_DIR}/data" -m immediate -w stop \
            >/dev/null 2>&1 || true
    fi
    case "$AGENT_SDK_PG_DIR" in
        */agent-sdk-pg.*) rm -rf "$AGENT_SDK_PG_DIR" ;;
        *) log "not deleting unexpected directory ${AGENT_SDK_PG_DIR}" ;;
    esac
    rm -f "$STATE"
    log "stopped"
}

pause() {
    load_state
    local bin
    bin="$(bin_dir)"
    as_server "${bin}/pg_ctl" -D "${AGENT_SDK_PG_DIR}/data" -m fast -w stop >/dev/null \
        || die "pg_ctl stop failed"
    log "paused (data kept in ${AGENT_SDK_PG_DIR})"
}

resume() {
    load_state
    local bin
    bin="$(bin_dir)"
    pg_start "$bin" "$AGENT_SDK_PG_DIR" "$AGENT_SDK_PG_PORT" || die "could not resume PostgreSQL"
    log "resumed at ${AGENT_SDK_PG_URL}"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    pause) pause ;;
    resume) resume ;;
    env) print_env ;;
    watch) watch "$2" "$3" ;;
    *)
        printf 'usage: %s start|stop|pause|resume|env\n' "$0" >&2
        exit 2
        ;;
esac
