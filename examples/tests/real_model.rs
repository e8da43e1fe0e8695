//! Real model, real server (issue 11): every front end and the provider layer against
//! llama.cpp's `llama-server` running SmolLM2-135M-Instruct on loopback.
//!
//! Start the server with `eval "$(scripts/real-model.sh start)"` (`.ci/run` does this on every
//! run); it exports `AGENT_SDK_LLAMA_URL`. Without that variable every test prints a
//! `skipped: …` line and passes, so `cargo test --workspace` still works on a machine without
//! the server; with `AGENT_SDK_REAL_MODEL=required` (set by `.ci/run`) a missing URL fails.
//!
//! Every test talks to the server through a small recording proxy on `127.0.0.1:0`, so it
//! can compare what the front end reports (text, usage) with what the server actually sent,
//! and check the requests our providers build. The model's wording is not meaningful: the
//! tests assert protocol, not content. The server runs with `--temp 0`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    message::{Role, ToolCall},
    provider::{ProviderEvent, ProviderRequest, ProviderStop, ToolSpec},
    ContentBlock, Message, ReasoningLevel,
};
use agent_providers::{build_provider, ProviderConfig, ProviderId};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Directory holding the front-end binaries, when not next to the test executable.
const BIN_DIR_ENV: &str = "AGENT_SDK_BIN_DIR";
/// The model alias the script gives the server.
const MODEL: &str = "smollm2";
/// A key the front ends send; llama-server ignores it, and it must never reach their output.
const API_KEY: &str = "sk-real-model-test-key";
/// Bound on one front-end run or one model call (the server queues requests on 2 slots).
const WAIT: Duration = Duration::from_secs(120);
/// Bound on building a missing binary.
const BUILD_WAIT: Duration = Duration::from_secs(1200);
/// The text prompt of every front-end turn.
const PROMPT: &str = "Say hello to me in one short sentence.";

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// The server's base URL, or `None` (after the one `skipped: …` line, which names the test)
/// when the tests should skip; `AGENT_SDK_REAL_MODEL=required` fails instead
/// (`test_support::real_model`).
fn server(_test: &str) -> Option<String> {
    test_support::real_model::server_url()
}

/// The three HTTP providers, each with the base URL its API wants on this server.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Anthropic,
    Responses,
}

impl Api {
    fn provider(self) -> &'static str {
        match self {
            Api::Chat => "openai",
            Api::Anthropic => "anthropic",
            Api::Responses => "openai-responses",
        }
    }

    fn id(self) -> ProviderId {
        match self {
            Api::Chat => ProviderId::OpenAi,
            Api::Anthropic => ProviderId::Anthropic,
            Api::Responses => ProviderId::OpenAiResponses,
        }
    }

    /// `--base-url` for this API on a server at `root`.
    fn base_url(self, root: &str) -> String {
        match self {
            // The Anthropic provider appends `/v1/messages`.
            Api::Anthropic => root.to_string(),
            Api::Chat | Api::Responses => format!("{root}/v1"),
        }
    }

    /// The path the provider must post to.
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
            Api::Responses => "/v1/responses",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A recording proxy
// ---------------------------------------------------------------------------------------------

/// One request through the proxy and the server's answer.
#[derive(Debug, Clone)]
struct Exchange {
    method: String,
    path: String,
    /// The request body as the client sent it (before any test rewrite).
    request: Value,
    /// The body forwarded to the server.
    forwarded: Value,
    status: u16,
    /// The response body, recorded before each piece is passed on to the client.
    body: Arc<Mutex<Vec<u8>>>,
}

impl Exchange {
    fn body(&self) -> String {
        String::from_utf8_lossy(&self.body.lock().expect("body lock")).into_owned()
    }

    /// The `data:` payloads of an SSE body, parsed (`[DONE]` skipped).
    fn sse(&self) -> Vec<Value> {
        let body = self.body();
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad SSE data ({e}): {d}")))
            .collect()
    }
}

/// Rewrites a request body before it is forwarded: `(path, body, index of the request)`.
type Rewrite = Arc<dyn Fn(&str, &mut Value, usize) + Send + Sync>;

/// An HTTP/1.1 proxy on `127.0.0.1:0` in front of the server that records every exchange.
struct Proxy {
    url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start(upstream: &str, rewrite: Option<Rewrite>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let url = format!("http://{}", listener.local_addr().expect("proxy addr"));
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .expect("reqwest client");
        let upstream = upstream.to_string();
        let task_log = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (client, upstream, log, rewrite) = (
                    client.clone(),
                    upstream.clone(),
                    task_log.clone(),
                    rewrite.clone(),
                );
                tokio::spawn(async move {
                    if let Err(e) = proxy_one(stream, &client, &upstream, &log, rewrite).await {
                        eprintln!("proxy: {e}");
                    }
                });
            }
        });
        Self { url, log, task }
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().expect("log lock").clone()
    }

    /// The only exchange, asserted to be a `200` POST to `path`.
    fn single(&self, path: &str) -> Exchange {
        let all = self.exchanges();
        assert_eq!(all.len(), 1, "exactly one model call: {:#?}", summary(&all));
        let x = all.into_iter().next().expect("one exchange");
        assert_ok(&x, path);
        x
    }
}

fn summary(all: &[Exchange]) -> Vec<String> {
    all.iter()
        .map(|x| format!("{} {} -> {}", x.method, x.path, x.status))
        .collect()
}

fn assert_ok(x: &Exchange, path: &str) {
    assert_eq!(x.method, "POST");
    assert_eq!(x.path, path);
    assert_eq!(
        x.status,
        200,
        "the server refused the request: {}",
        x.body()
    );
}

/// Serves one connection: one request, forwarded, answered with `connection: close`.
async fn proxy_one(
    stream: TcpStream,
    client: &reqwest::Client,
    upstream: &str,
    log: &Mutex<Vec<Exchange>>,
    rewrite: Option<Rewrite>,
) -> Result<(), String> {
    let mut reader = BufReader::new(stream);
    let mut head: Vec<String> = Vec::new();
    loop {
        let mut line = String::new();
        let n = tokio::time::timeout(WAIT, reader.read_line(&mut line))
            .await
            .map_err(|_| "timed out reading a request head".to_string())?
            .map_err(|e| format!("read head: {e}"))?;
        if n == 0 {
            return Ok(()); // the client closed an idle connection
        }
        let line = line.trim_end().to_string();
        if line.is_empty() {
            break;
        }
        if head.len() > 200 {
            return Err("request head too long".into());
        }
        head.push(line);
    }
    let first = head.first().ok_or("empty request head")?.clone();
    let mut parts = first.split_whitespace();
    let method = parts.next().ok_or("no method")?.to_string();
    let path = parts.next().ok_or("no path")?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    for line in &head[1..] {
        let (name, value) = line.split_once(':').ok_or("bad header line")?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        if name == "content-length" {
            length = value.parse().map_err(|e| format!("content-length: {e}"))?;
        }
        if name == "transfer-encoding" {
            return Err("chunked request bodies are not supported by this proxy".into());
        }
        headers.push((name, value));
    }
    let mut body = vec![0u8; length];
    tokio::time::timeout(WAIT, reader.read_exact(&mut body))
        .await
        .map_err(|_| "timed out reading a request body".to_string())?
        .map_err(|e| format!("read body: {e}"))?;
    let request: Value = match body.is_empty() {
        true => Value::Null,
        false => serde_json::from_slice(&body).map_err(|e| format!("request JSON: {e}"))?,
    };
    let mut forwarded = request.clone();
    let index = log.lock().expect("log lock").len();
    if let Some(rewrite) = &rewrite {
        rewrite(&path, &mut forwarded, index);
    }
    let method_value = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let mut upstream_request = client.request(method_value, format!("{upstream}{path}"));
    for (name, value) in &headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "accept-encoding"
        ) {
            upstream_request = upstream_request.header(name.as_str(), value.as_str());
        }
    }
    if !body.is_empty() {
        let bytes = match rewrite.is_some() {
            true => serde_json::to_vec(&forwarded).map_err(|e| e.to_string())?,
            false => body,
        };
        upstream_request = upstream_request.body(bytes);
    }
    let mut response = tokio::time::timeout(WAIT, upstream_request.send())
        .await
        .map_err(|_| "timed out waiting for the server".to_string())?
        .map_err(|e| format!("upstream: {e}"))?;
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_string();
    let recorded: Arc<Mutex<Vec<u8>>> = Arc::default();
    log.lock().expect("log lock").push(Exchange {
        method,
        path,
        request,
        forwarded,
        status: status.as_u16(),
        body: recorded.clone(),
    });
    let mut stream = reader.into_inner();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Unknown"),
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("write head: {e}"))?;
    loop {
        let chunk = tokio::time::timeout(WAIT, response.chunk())
            .await
            .map_err(|_| "the server stream went silent".to_string())?
            .map_err(|e| format!("upstream body: {e}"))?;
        let Some(chunk) = chunk else { break };
        recorded
            .lock()
            .expect("body lock")
            .extend_from_slice(&chunk);
        stream
            .write_all(&chunk)
            .await
            .map_err(|e| format!("write body: {e}"))?;
        stream.flush().await.map_err(|e| format!("flush: {e}"))?;
    }
    let _ = stream.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// What the server said
// ---------------------------------------------------------------------------------------------

/// Usage as the server reported it, normalised: `prompt` counts every input token.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct ServerUsage {
    prompt: u64,
    cached: u64,
    output: u64,
}

impl ServerUsage {
    fn total(self) -> u64 {
        self.prompt + self.output
    }
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The usage the server streamed in `x`, in the exchange's API.
fn server_usage(x: &Exchange) -> ServerUsage {
    let events = x.sse();
    let usage = if x.path.ends_with("/chat/completions") {
        let u = events
            .iter()
            .rev()
            .find(|e| e["usage"].is_object())
            .map(|e| e["usage"].clone())
            .unwrap_or_else(|| panic!("no usage chunk in the server stream: {}", x.body()));
        ServerUsage {
            prompt: num(&u["prompt_tokens"]),
            cached: num(&u["prompt_tokens_details"]["cached_tokens"]),
            output: num(&u["completion_tokens"]),
        }
    } else if x.path.ends_with("/messages") {
        // message_start carries the input counts, message_delta the output; later values win.
        let (mut input, mut read, mut write, mut output) = (0, 0, 0, 0);
        let mut seen = false;
        for e in &events {
            let u = match e["type"].as_str() {
                Some("message_start") => &e["message"]["usage"],
                Some("message_delta") => &e["usage"],
                _ => continue,
            };
            seen |= u.is_object();
            for (slot, key) in [
                (&mut input, "input_tokens"),
                (&mut read, "cache_read_input_tokens"),
                (&mut write, "cache_creation_input_tokens"),
                (&mut output, "output_tokens"),
            ] {
                if let Some(n) = u[key].as_u64() {
                    *slot = n;
                }
            }
        }
        assert!(seen, "no usage in the server stream: {}", x.body());
        ServerUsage {
            prompt: input + read + write,
            cached: read,
            output,
        }
    } else {
        let u = events
            .iter()
            .find(|e| e["type"] == "response.completed")
            .map(|e| e["response"]["usage"].clone())
            .unwrap_or_else(|| panic!("no response.completed in the server stream: {}", x.body()));
        ServerUsage {
            prompt: num(&u["input_tokens"]),
            cached: num(&u["input_tokens_details"]["cached_tokens"]),
            output: num(&u["output_tokens"]),
        }
    };
    assert!(
        usage.prompt > 0,
        "the server counted no prompt tokens: {usage:?}"
    );
    usage
}

/// The answer text the server streamed in `x`.
fn server_text(x: &Exchange) -> String {
    let mut text = String::new();
    for e in x.sse() {
        if x.path.ends_with("/chat/completions") {
            if let Some(t) = e["choices"][0]["delta"]["content"].as_str() {
                text.push_str(t);
            }
        } else if x.path.ends_with("/messages") {
            if e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta" {
                text.push_str(e["delta"]["text"].as_str().unwrap_or_default());
            }
        } else if e["type"] == "response.output_text.delta" {
            text.push_str(e["delta"].as_str().unwrap_or_default());
        }
    }
    text
}

// ---------------------------------------------------------------------------------------------
// The binaries
// ---------------------------------------------------------------------------------------------

/// `target/<profile>`: the test executable lives in its `deps/`.
fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable is in target/<profile>/deps")
        .to_path_buf()
}

/// The workspace every front end runs in: one fixed, empty directory, because the front ends
/// put the workspace path into the system prompt, and one path for all tests lets the server
/// reuse its prompt cache between them (the turns only read; sessions live in temp dirs).
fn workspace() -> PathBuf {
    let dir = target_profile_dir().join("real-model-workspace");
    std::fs::create_dir_all(&dir).expect("create the shared workspace");
    dir
}

static BUILD_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The front-end binary `name` of package `package`: from [`BIN_DIR_ENV`], else next to the
/// test executable (where `cargo test --workspace` has just built it), else built now with
/// `cargo build` into a separate target directory (the workspace one is locked by the running
/// `cargo test`).
async fn binary(package: &str, name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV) {
        let path = PathBuf::from(dir).join(name);
        assert!(
            path.is_file(),
            "{BIN_DIR_ENV} has no {name}: {}",
            path.display()
        );
        return path;
    }
    let profile = target_profile_dir();
    let path = profile.join(name);
    // Cargo unlinks and re-links `target/<profile>/<bin>` at the end of every build, so a
    // concurrent build elsewhere in the workspace can hide it for a moment: look again for a
    // few seconds (bounded) before deciding that it is missing.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if path.is_file() {
            return path;
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _guard = BUILD_LOCK.lock().await;
    let own = profile.join("real-model-bins");
    let built = own.join("debug").join(name);
    if built.is_file() {
        return built;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("{} is missing; building it with cargo", path.display());
    let mut child = Command::new(cargo)
        .args(["build", "-p", package, "--bin", name, "--target-dir"])
        .arg(&own)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn cargo build");
    let status = tokio::time::timeout(BUILD_WAIT, child.wait())
        .await
        .unwrap_or_else(|_| panic!("building {name} took longer than {BUILD_WAIT:?}"))
        .expect("cargo build");
    assert!(
        status.success(),
        "cargo build -p {package} --bin {name} failed"
    );
    assert!(
        built.is_file(),
        "cargo build produced no {}",
        built.display()
    );
    built
}

/// Removes every variable that could point a front end elsewhere than the proxy.
fn clean_env(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ZERO_PROVIDER",
        "ZERO_CHECKPOINTS",
        "ZUTCORE_RPC_TOKEN",
        "ADAPTER_ACP_PROVIDER",
        "ADAPTER_ACP_MODEL",
        "ADAPTER_ACP_BASE_URL",
        "ADAPTER_ACP_SCRIPT",
        "ADAPTER_ACP_DATA_DIR",
        "ZCODE_DATA_BASE_DIR",
    ] {
        cmd.env_remove(var);
    }
}

/// The provider flags every front end takes.
/// Text turns offer the model one small tool: the tool schemas are most of the prompt, and
/// on 2 CPU cores llama-server evaluates prompts at about 200 tokens/s, so offering all eight
/// tools made every uncached turn take ~10 s.
const ONE_TOOL: &str = "read_file";
/// The tools the ZCode and ACP front ends are told to leave out (all but [`ONE_TOOL`]).
const OTHER_TOOLS: &str =
    "write_file edit_file list_dir glob grep bash plan ask_user exit_plan_mode";

fn provider_args(api: Api, proxy: &Proxy) -> Vec<String> {
    vec![
        "--provider".into(),
        api.provider().into(),
        "--base-url".into(),
        api.base_url(&proxy.url),
        "--model".into(),
        MODEL.into(),
        "--api-key".into(),
        API_KEY.into(),
    ]
}

/// A spawned front end speaking JSON lines on stdin/stdout.
struct LineProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    raw: Vec<String>,
}

impl LineProcess {
    fn spawn(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn front end");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            raw: Vec::new(),
        }
    }

    async fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let line = format!("{message}\n");
        tokio::time::timeout(WAIT, async {
            stdin.write_all(line.as_bytes()).await.expect("write");
            stdin.flush().await.expect("flush");
        })
        .await
        .expect("writing to the front end timed out");
    }

    /// The next stdout line as JSON; `None` at end of output.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("timed out waiting for a line from the front end")
            .expect("read stdout")?;
        let value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        self.raw.push(line);
        Some(value)
    }

    async fn next_some(&mut self) -> Value {
        match self.next().await {
            Some(v) => v,
            None => {
                let stderr = self.stderr().await;
                panic!("the front end closed stdout; stderr:\n{stderr}")
            }
        }
    }

    /// Closes stdin, drains stdout and returns the exit code.
    async fn finish(&mut self) -> (Option<i32>, Vec<Value>) {
        self.stdin = None;
        let mut rest = Vec::new();
        while let Some(v) = self.next().await {
            rest.push(v);
        }
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the front end did not exit after stdin closed")
            .expect("wait");
        (status.code(), rest)
    }

    async fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ =
                tokio::time::timeout(Duration::from_secs(5), err.read_to_string(&mut text)).await;
        }
        text
    }

    fn assert_no_key(&self) {
        for line in &self.raw {
            assert!(
                !line.contains(API_KEY),
                "the API key leaked to stdout: {line}"
            );
        }
    }
}

/// The types of `frames` (`field`), with runs of the `repeated` types collapsed to one.
fn shape(frames: &[Value], field: &str, repeated: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in frames {
        let t = f[field].as_str().unwrap_or("?").to_string();
        if repeated.contains(&t.as_str()) && out.last() == Some(&t) {
            continue;
        }
        out.push(t);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// adapter-stream-json exec
// ---------------------------------------------------------------------------------------------

async fn stream_json_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-stream-json", "adapter-stream-json").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.arg("exec")
        .args(["-o", "stream-json"])
        .args(["--enabled-tools", ONE_TOOL])
        .args(provider_args(api, &proxy))
        .arg(PROMPT)
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    clean_env(&mut cmd, home.path());
    let child = cmd.spawn().expect("spawn adapter-stream-json");
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("adapter-stream-json did not finish in time")
        .expect("wait");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stdout.contains(API_KEY), "the API key leaked to stdout");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line ({e}): {l}")))
        .collect();

    // The full sequence, framing included.
    assert_eq!(
        shape(&events, "type", &["text"]),
        ["run_start", "text", "usage", "final", "run_end"],
        "{stdout}"
    );
    let run_id = events[0]["runId"].as_str().expect("runId");
    for e in &events {
        assert_eq!(e["schemaVersion"], 2, "{e}");
        assert_eq!(e["runId"], run_id, "one runId per run: {e}");
    }
    assert_eq!(events[0]["model"], MODEL);
    assert_eq!(events[0]["cwd"], work.display().to_string());

    // What the server sent is what the front end reports.
    let x = proxy.single(api.path());
    assert_eq!(x.request["model"], MODEL);
    assert_eq!(x.request["stream"], true);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].as_str().expect("text delta"))
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing: {stdout}");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let fin = &events[events.len() - 2];
    assert_eq!(fin["text"], text.as_str());
    let usage = server_usage(&x);
    let reported = events.iter().find(|e| e["type"] == "usage").expect("usage");
    assert_eq!(
        reported["promptTokens"], usage.prompt,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["completionTokens"], usage.output,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{reported} vs {usage:?}"
    );
    let end = events.last().expect("run_end");
    assert_eq!(end["status"], "success", "{end}");
    assert_eq!(end["exitCode"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_openai() {
    stream_json_text_turn(Api::Chat, "stream_json_exec_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_anthropic() {
    stream_json_text_turn(Api::Anthropic, "stream_json_exec_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_openai_responses() {
    stream_json_text_turn(
        Api::Responses,
        "stream_json_exec_text_turn_openai_responses",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// adapter-rpc rpc
// ---------------------------------------------------------------------------------------------

async fn rpc_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-rpc", "adapter-rpc").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.arg("rpc")
        .arg("--cwd")
        .arg(&work)
        .args(["--tools", ONE_TOOL])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut rpc = LineProcess::spawn(cmd);

    rpc.send(&json!({"id": "h", "type": "hello"})).await;
    let hello = rpc.next_some().await;
    assert_eq!(hello["type"], "response", "{hello}");
    assert_eq!(hello["success"], true, "{hello}");
    assert_eq!(hello["data"]["provider"], api.provider(), "{hello}");
    assert_eq!(hello["data"]["model"], MODEL, "{hello}");

    rpc.send(&json!({"id": "1", "type": "prompt", "message": PROMPT}))
        .await;
    let mut frames = Vec::new();
    loop {
        let frame = rpc.next_some().await;
        let done = frame["type"] == "done";
        frames.push(frame);
        if done {
            break;
        }
    }
    assert_eq!(
        shape(&frames, "type", &["text_delta"]),
        [
            "response",
            "user_message",
            "turn_start",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "usage",
            "assistant_message",
            "turn_end",
            "done"
        ],
        "{frames:#?}"
    );
    assert_eq!(frames[0]["data"]["started"], true);
    assert_eq!(
        frames[1]["content"],
        json!([{"type": "text", "text": PROMPT}])
    );
    assert_eq!(frames[2], json!({"type": "turn_start", "step": 1}));
    assert_eq!(frames[3]["scope"], "agent");
    assert_eq!(frames[3]["provider"], api.provider());
    assert_eq!(frames[3]["model"], MODEL);
    assert_eq!(frames[4]["scope"], "provider");
    assert_eq!(frames[4]["attempt"], 1);

    let x = proxy.single(api.path());
    let text: String = frames
        .iter()
        .filter(|f| f["type"] == "text_delta")
        .map(|f| f["delta"].as_str().expect("delta"))
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let message = frames
        .iter()
        .find(|f| f["type"] == "assistant_message")
        .expect("assistant_message");
    assert_eq!(message["content"], json!([{"type": "text", "text": text}]));
    let usage = server_usage(&x);
    let reported = frames.iter().find(|f| f["type"] == "usage").expect("usage");
    let prompt =
        num(&reported["input"]) + num(&reported["cache_read"]) + num(&reported["cache_write"]);
    assert_eq!(prompt, usage.prompt, "{reported} vs {usage:?}");
    assert_eq!(
        reported["cache_read"], usage.cached,
        "{reported} vs {usage:?}"
    );
    assert_eq!(reported["output"], usage.output, "{reported} vs {usage:?}");
    assert_eq!(reported["cumulative"]["output"], usage.output, "{reported}");
    let turn_end = &frames[frames.len() - 2];
    assert_eq!(turn_end, &json!({"type": "turn_end", "stop": "end"}));

    // The transcript holds the turn; then a clean exit when stdin closes.
    rpc.send(&json!({"id": "s", "type": "get_state"})).await;
    let state = rpc.next_some().await;
    assert_eq!(state["success"], true, "{state}");
    assert_eq!(state["data"]["message_count"], 2, "{state}");
    assert_eq!(state["data"]["busy"], false, "{state}");
    let (code, rest) = rpc.finish().await;
    assert!(rest.is_empty(), "nothing after the last response: {rest:?}");
    assert_eq!(code, Some(0), "stderr: {}", rpc.stderr().await);
    rpc.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_openai() {
    rpc_text_turn(Api::Chat, "rpc_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_anthropic() {
    rpc_text_turn(Api::Anthropic, "rpc_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_openai_responses() {
    rpc_text_turn(Api::Responses, "rpc_text_turn_openai_responses").await;
}

// ---------------------------------------------------------------------------------------------
// adapter-acp app-server --stdio
// ---------------------------------------------------------------------------------------------

/// The reply to JSON-RPC request `id`, skipping (and keeping) notifications.
async fn app_reply(p: &mut LineProcess, id: i64, kept: &mut Vec<Value>) -> Value {
    loop {
        let m = p.next_some().await;
        if m["id"] == id && m.get("method").is_none() {
            assert!(m.get("error").is_none(), "request {id} failed: {m}");
            return m["result"].clone();
        }
        kept.push(m);
    }
}

async fn app_server_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-acp", "adapter-acp").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let data = home.path().join("acp-data");
    let mut cmd = Command::new(bin);
    cmd.args(["app-server", "--stdio", "--data-dir"])
        .arg(&data)
        .args(["--disallowed-tools", OTHER_TOOLS])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut app = LineProcess::spawn(cmd);
    let mut notes = Vec::new();
    let ws = work.display().to_string();

    app.send(&json!({"id": 1, "method": "session/create", "params": {
        "workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo"}}))
        .await;
    let created = app_reply(&mut app, 1, &mut notes).await;
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    app.send(&json!({"id": 2, "method": "session/read", "params": {"sessionId": sid}}))
        .await;
    let read = app_reply(&mut app, 2, &mut notes).await;
    assert_eq!(
        read["settings"]["model"]["current"]["modelId"], MODEL,
        "{read}"
    );
    app.send(&json!({"id": 3, "method": "session/subscribe", "params": {
        "sessionId": sid, "deliveryKind": "desktop-continuous",
        "includeSnapshot": false, "afterSeq": 0}}))
        .await;
    app_reply(&mut app, 3, &mut notes).await;
    app.send(&json!({"id": 4, "method": "session/send", "params": {
        "sessionId": sid, "content": PROMPT}}))
        .await;
    let sent = app_reply(&mut app, 4, &mut notes).await;
    assert_eq!(sent["accepted"], true, "{sent}");

    // Session events (some may have arrived with the replies) up to the end of the turn.
    let mut events: Vec<Value> = notes
        .drain(..)
        .filter(|m| m["method"] == "session/event")
        .map(|m| m["params"].clone())
        .collect();
    while !events
        .iter()
        .any(|e| e["type"] == "turn.completed" || e["type"] == "turn.failed")
    {
        let m = app.next_some().await;
        if m["method"] == "session/event" {
            events.push(m["params"].clone());
        }
    }
    for pair in events.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64(),
            pair[0]["seq"].as_u64().map(|s| s + 1),
            "consecutive seqs"
        );
    }
    for e in &events {
        assert_eq!(e["sessionId"], sid.as_str());
    }
    let kinds: Vec<Value> = events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or("?");
            json!({"k": match e["payload"]["kind"].as_str() {
                Some(kind) => format!("{t}:{kind}"),
                None => t.to_string(),
            }})
        })
        .collect();
    let kinds = shape(&kinds, "k", &["model.streaming:text_delta"]);
    let turn: Vec<&str> = kinds
        .iter()
        .map(String::as_str)
        .filter(|k| !k.starts_with("session."))
        .collect();
    assert_eq!(
        turn,
        [
            "turn.started",
            "model.streaming:text_delta",
            "turn.completed"
        ],
        "{kinds:?}"
    );

    let x = proxy.single(api.path());
    let text: String = events
        .iter()
        .filter(|e| e["payload"]["kind"] == "text_delta")
        .map(|e| {
            e["payload"]["delta"]
                .as_str()
                .or(e["payload"]["text"].as_str())
                .unwrap_or_else(|| panic!("a text_delta without text: {e}"))
        })
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let done = events.last().expect("turn.completed");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["resultType"], "success", "{done}");
    assert_eq!(done["payload"]["response"], text.as_str());
    assert_eq!(done["payload"]["toolCallCount"], 0);
    let usage = server_usage(&x);
    let reported = &done["payload"]["usage"];
    assert_eq!(
        reported["inputTokens"], usage.prompt,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["outputTokens"], usage.output,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["cacheReadTokens"], usage.cached,
        "{reported} vs {usage:?}"
    );

    app.send(&json!({"id": 5, "method": "session/read", "params": {"sessionId": sid}}))
        .await;
    let read = app_reply(&mut app, 5, &mut notes).await;
    assert_eq!(read["projection"]["status"], "idle", "{read}");
    assert_eq!(read["projection"]["turnCount"], 1, "{read}");
    assert_eq!(
        read["projection"]["totalTokenCount"],
        usage.total(),
        "{read}"
    );
    let (code, _) = app.finish().await;
    assert_eq!(code, Some(0), "stderr: {}", app.stderr().await);
    app.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_openai() {
    app_server_text_turn(Api::Chat, "app_server_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_anthropic() {
    app_server_text_turn(Api::Anthropic, "app_server_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_openai_responses() {
    app_server_text_turn(Api::Responses, "app_server_text_turn_openai_responses").await;
}

// ---------------------------------------------------------------------------------------------
// adapter-acp acp (Agent Client Protocol)
// ---------------------------------------------------------------------------------------------

/// The reply to ACP request `id`; `session/update` notifications are collected.
async fn acp_reply(p: &mut LineProcess, id: i64, updates: &mut Vec<Value>) -> Value {
    loop {
        let m = p.next_some().await;
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        if m["id"] == id && m.get("method").is_none() {
            assert!(m.get("error").is_none(), "request {id} failed: {m}");
            return m["result"].clone();
        }
        if m["method"] == "session/update" {
            updates.push(m["params"].clone());
        }
    }
}

async fn acp_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-acp", "adapter-acp").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.args(["acp", "--data-dir"])
        .arg(home.path().join("acp-data"))
        .args(["--disallowed-tools", OTHER_TOOLS])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut acp = LineProcess::spawn(cmd);
    let mut updates = Vec::new();

    acp.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false},
                               "terminal": false}}}),
    )
    .await;
    let init = acp_reply(&mut acp, 0, &mut updates).await;
    assert_eq!(init["protocolVersion"], 1, "{init}");
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {
        "cwd": work.display().to_string(), "mcpServers": []}}),
    )
    .await;
    let session = acp_reply(&mut acp, 1, &mut updates).await;
    let sid = session["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    updates.clear();
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": sid, "prompt": [{"type": "text", "text": PROMPT}]}}),
    )
    .await;
    let result = acp_reply(&mut acp, 2, &mut updates).await;
    assert_eq!(result["stopReason"], "end_turn", "{result}");

    let x = proxy.single(api.path());
    for u in &updates {
        assert_eq!(u["sessionId"], sid.as_str(), "{u}");
    }
    let kinds: Vec<Value> = updates.iter().map(|u| u["update"].clone()).collect();
    assert_eq!(
        shape(&kinds, "sessionUpdate", &["agent_message_chunk"]),
        ["agent_message_chunk", "usage_update"],
        "{updates:#?}"
    );
    let text: String = kinds
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| {
            assert_eq!(u["content"]["type"], "text", "{u}");
            u["content"]["text"].as_str().expect("text chunk")
        })
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(
        text,
        server_text(&x),
        "message chunks are the server's text"
    );
    let usage = server_usage(&x);
    let context = kinds.last().expect("usage_update");
    assert_eq!(context["used"], usage.total(), "{context} vs {usage:?}");
    // The turn's usage rides in the response's `_meta.usage` (ACP has no usage field yet).
    let reported = &result["_meta"]["usage"];
    assert_eq!(
        reported["inputTokens"], usage.prompt,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["outputTokens"], usage.output,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["cachedReadTokens"], usage.cached,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{result} vs {usage:?}"
    );
    assert_eq!(reported["modelCalls"], 1, "{result}");
    assert_eq!(reported["toolCalls"], 0, "{result}");
    let (code, _) = acp.finish().await;
    assert_eq!(code, Some(0), "stderr: {}", acp.stderr().await);
    acp.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_openai() {
    acp_text_turn(Api::Chat, "acp_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_anthropic() {
    acp_text_turn(Api::Anthropic, "acp_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_openai_responses() {
    acp_text_turn(Api::Responses, "acp_text_turn_openai_responses").await;
}

// ---------------------------------------------------------------------------------------------
// A tool turn through the provider layer, with the assistant-prefill technique
// ---------------------------------------------------------------------------------------------

/// The prefill that makes the 135M model emit tool calls (with the Qwen2.5 template).
const PREFILL: &str = "<tool_call>\n";

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a city.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name."}},
            "required": ["city"]
        }),
    }
}

/// The test-only request option: the provider has no `tool_choice`, so the proxy adds the
/// API's "a tool is required" choice to the first request (the one ending in the prefill).
fn require_a_tool(api: Api) -> Rewrite {
    Arc::new(move |_path: &str, body: &mut Value, index: usize| {
        if index == 0 {
            body["tool_choice"] = match api {
                Api::Anthropic => json!({"type": "any"}),
                Api::Chat | Api::Responses => json!("required"),
            };
        }
    })
}

/// Streams one provider call, bounded, and returns its events.
async fn call(provider: &dyn agent_core::Provider, request: ProviderRequest) -> Vec<ProviderEvent> {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("the provider stream went silent");
        match next {
            None => return events,
            Some(Ok(event)) => events.push(event),
            Some(Err(e)) => panic!("provider error: {e:?} after {events:#?}"),
        }
    }
}

/// The kinds of provider events, runs of deltas collapsed.
fn provider_shape(events: &[ProviderEvent]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in events {
        let k = match e {
            ProviderEvent::RequestStarted { .. } => "request_started",
            ProviderEvent::RetryScheduled { .. } => "retry_scheduled",
            ProviderEvent::ResponseStarted => "response_started",
            ProviderEvent::TextDelta(_) => "text",
            ProviderEvent::ReasoningDelta(_) => "reasoning",
            ProviderEvent::ReasoningEnd { .. } => "reasoning_end",
            ProviderEvent::ToolCallStart { .. } => "tool_call_start",
            ProviderEvent::ToolCallDelta { .. } => "tool_call_delta",
            ProviderEvent::ToolCallEnd { .. } => "tool_call_end",
            ProviderEvent::Usage(_) => "usage",
            ProviderEvent::Stop(_) => "stop",
        };
        if matches!(k, "text" | "tool_call_delta" | "reasoning") && out.last() == Some(&k) {
            continue;
        }
        out.push(k);
    }
    out
}

fn provider_usage(events: &[ProviderEvent]) -> agent_core::Usage {
    let usages: Vec<&agent_core::Usage> = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 1, "exactly one usage: {events:#?}");
    *usages[0]
}

fn assert_usage_matches(events: &[ProviderEvent], x: &Exchange) {
    let usage = provider_usage(events);
    let server = server_usage(x);
    assert_eq!(
        usage.prompt_tokens(),
        server.prompt,
        "{usage:?} vs {server:?}"
    );
    assert_eq!(usage.cache_read, server.cached, "{usage:?} vs {server:?}");
    assert_eq!(usage.output, server.output, "{usage:?} vs {server:?}");
}

/// The calls of a provider stream, checking each one's lifecycle: it starts once, its
/// argument deltas come between its start and its end, and it ends once before the usage.
/// Calls may interleave (Chat Completions ends them all at `finish_reason`).
fn call_lifecycle(events: &[ProviderEvent]) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut args: Vec<String> = Vec::new();
    let mut ended: Vec<bool> = Vec::new();
    let find = |calls: &[ToolCall], id: &str| calls.iter().position(|c| c.id == id);
    for e in events {
        match e {
            ProviderEvent::ToolCallStart { id, name } => {
                assert!(find(&calls, id).is_none(), "call {id} started twice");
                calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: Value::Null,
                });
                args.push(String::new());
                ended.push(false);
            }
            ProviderEvent::ToolCallDelta { id, delta } => {
                let i = find(&calls, id).unwrap_or_else(|| panic!("delta before start: {id}"));
                assert!(!ended[i], "delta after the end of {id}");
                args[i].push_str(delta);
            }
            ProviderEvent::ToolCallEnd { id } => {
                let i = find(&calls, id).unwrap_or_else(|| panic!("end before start: {id}"));
                assert!(!ended[i], "call {id} ended twice");
                ended[i] = true;
            }
            ProviderEvent::Usage(_) | ProviderEvent::Stop(_) => {
                assert!(
                    ended.iter().all(|e| *e),
                    "usage/stop before every call ended"
                );
            }
            ProviderEvent::TextDelta(t) => {
                assert!(t.trim().is_empty(), "prose in a tool-call reply: {t:?}");
            }
            _ => {}
        }
    }
    for (call, a) in calls.iter_mut().zip(&args) {
        call.args = serde_json::from_str(a).unwrap_or_else(|e| panic!("arguments {a:?}: {e}"));
    }
    calls
}

/// Runs `get_weather` (the test's tool) on `args`.
fn get_weather(args: &Value) -> String {
    let city = args["city"].as_str().unwrap_or("an unknown city");
    format!("It is 18 degrees and sunny in {city}.")
}

async fn tool_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, Some(require_a_tool(api))).await;
    let mut config = ProviderConfig::new(api.id());
    config.base_url = Some(api.base_url(&proxy.url));
    config.model = Some(MODEL.into());
    let provider = build_provider(&config).expect("provider");
    let user = Message::user_text("What is the weather in Paris and in London?");
    let request = |messages: Vec<Message>| ProviderRequest {
        model: MODEL.into(),
        system: Some("You are a helpful assistant with tools.".into()),
        messages,
        tools: vec![weather_tool()],
        reasoning: ReasoningLevel::Off,
        max_output_tokens: Some(160),
        output_schema: None,
    };

    // 1. The prefilled request: two parallel calls.
    let first = call(
        provider.as_ref(),
        request(vec![user.clone(), Message::assistant_text(PREFILL)]),
    )
    .await;
    let shape = provider_shape(&first);
    assert_eq!(shape[0], "request_started", "{first:#?}");
    assert_eq!(
        &shape[shape.len() - 2..],
        ["usage", "stop"],
        "usage then stop end the stream: {first:#?}"
    );
    assert_eq!(
        first.last(),
        Some(&ProviderEvent::Stop(ProviderStop::ToolUse)),
        "{first:#?}"
    );
    let calls = call_lifecycle(&first);
    assert_eq!(calls.len(), 2, "two parallel calls: {first:#?}");
    assert_ne!(calls[0].id, calls[1].id, "distinct call ids");
    for c in &calls {
        assert_eq!(c.name, "get_weather");
        assert!(c.args["city"].is_string(), "{}", c.args);
    }
    let x1 = proxy.exchanges().first().cloned().expect("first exchange");
    assert_ok(&x1, api.path());
    assert_usage_matches(&first, &x1);
    // The prefill went out as the last message of the request, in the API's shape.
    let sent_last = match api {
        Api::Chat | Api::Anthropic => x1.request["messages"].as_array().and_then(|m| m.last()),
        Api::Responses => x1.request["input"].as_array().and_then(|m| m.last()),
    }
    .cloned()
    .expect("messages");
    assert_eq!(sent_last["role"], "assistant", "{sent_last}");
    assert!(sent_last.to_string().contains("<tool_call>"), "{sent_last}");

    // 2. Execute both calls and send the results back, paired with their calls.
    let results: Vec<ContentBlock> = calls
        .iter()
        .map(|c| ContentBlock::ToolResult {
            call_id: c.id.clone(),
            is_error: false,
            content: vec![ContentBlock::text(get_weather(&c.args))],
        })
        .collect();
    let assistant = Message::new(
        Role::Assistant,
        calls.iter().cloned().map(ContentBlock::ToolCall).collect(),
    );
    let second = call(
        provider.as_ref(),
        request(vec![user, assistant, Message::new(Role::Tool, results)]),
    )
    .await;
    let all = proxy.exchanges();
    assert_eq!(all.len(), 2, "{:#?}", summary(&all));
    let x2 = all[1].clone();
    assert_ok(&x2, api.path());
    assert!(
        x2.forwarded.get("tool_choice").is_none(),
        "only the first request is rewritten"
    );
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_pairing(api, &x2.request, &ids);
    let shape = provider_shape(&second);
    assert!(
        !shape.contains(&"tool_call_start"),
        "the answer to the results is prose here: {second:#?}"
    );
    assert_eq!(shape.first(), Some(&"request_started"));
    assert_eq!(&shape[shape.len() - 2..], ["usage", "stop"], "{second:#?}");
    assert!(
        matches!(
            second.last(),
            Some(ProviderEvent::Stop(
                ProviderStop::EndTurn | ProviderStop::MaxTokens
            ))
        ),
        "{second:#?}"
    );
    let text: String = second
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, server_text(&x2), "text deltas are the server's text");
    assert_usage_matches(&second, &x2);
    assert!(
        server_usage(&x2).prompt > server_usage(&x1).prompt,
        "the results made the prompt longer"
    );
}

/// Asserts `body` carries the two calls and their results in the API's own pairing.
fn assert_pairing(api: Api, body: &Value, ids: &[&str]) {
    match api {
        Api::Chat => {
            let messages = body["messages"].as_array().expect("messages");
            let n = messages.len();
            assert!(n >= 4, "{body}");
            let assistant = &messages[n - 3];
            assert_eq!(assistant["role"], "assistant", "{assistant}");
            let call_ids: Vec<&str> = assistant["tool_calls"]
                .as_array()
                .expect("tool_calls")
                .iter()
                .map(|c| {
                    assert_eq!(c["type"], "function");
                    assert_eq!(c["function"]["name"], "get_weather");
                    let args: Value = serde_json::from_str(
                        c["function"]["arguments"]
                            .as_str()
                            .expect("arguments string"),
                    )
                    .expect("arguments JSON");
                    assert!(args["city"].is_string());
                    c["id"].as_str().expect("id")
                })
                .collect();
            assert_eq!(call_ids, ids);
            for (i, id) in ids.iter().enumerate() {
                let tool = &messages[n - 2 + i];
                assert_eq!(tool["role"], "tool", "{tool}");
                assert_eq!(tool["tool_call_id"], *id, "{tool}");
                assert!(tool["content"].to_string().contains("18 degrees"), "{tool}");
            }
        }
        Api::Anthropic => {
            let messages = body["messages"].as_array().expect("messages");
            let n = messages.len();
            assert!(n >= 3, "{body}");
            let assistant = &messages[n - 2];
            assert_eq!(assistant["role"], "assistant", "{assistant}");
            let uses: Vec<&str> = assistant["content"]
                .as_array()
                .expect("content blocks")
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    assert_eq!(b["name"], "get_weather");
                    assert!(b["input"]["city"].is_string(), "{b}");
                    b["id"].as_str().expect("id")
                })
                .collect();
            assert_eq!(uses, ids);
            let user = &messages[n - 1];
            assert_eq!(user["role"], "user", "{user}");
            let results: Vec<&str> = user["content"]
                .as_array()
                .expect("content blocks")
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    assert!(b["content"].to_string().contains("18 degrees"), "{b}");
                    b["tool_use_id"].as_str().expect("tool_use_id")
                })
                .collect();
            assert_eq!(
                results, ids,
                "one user message answers every call, in order"
            );
        }
        Api::Responses => {
            let input = body["input"].as_array().expect("input items");
            let calls: Vec<&str> = input
                .iter()
                .filter(|i| i["type"] == "function_call")
                .map(|i| {
                    assert_eq!(i["name"], "get_weather");
                    i["call_id"].as_str().expect("call_id")
                })
                .collect();
            assert_eq!(calls, ids);
            let outputs: Vec<&str> = input
                .iter()
                .filter(|i| i["type"] == "function_call_output")
                .map(|i| {
                    assert!(i["output"].to_string().contains("18 degrees"), "{i}");
                    i["call_id"].as_str().expect("call_id")
                })
                .collect();
            assert_eq!(outputs, ids);
            let last_call = input
                .iter()
                .rposition(|i| i["type"] == "function_call")
                .expect("calls");
            let first_output = input
                .iter()
                .position(|i| i["type"] == "function_call_output")
                .expect("outputs");
            assert!(last_call < first_output, "outputs follow their calls");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_openai() {
    tool_turn(Api::Chat, "provider_tool_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_anthropic() {
    tool_turn(Api::Anthropic, "provider_tool_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tool_turn_openai_responses() {
    tool_turn(Api::Responses, "provider_tool_turn_openai_responses").await;
}
