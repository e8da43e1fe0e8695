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
//!
//! The shared parts (server, recording proxy, binaries) are here; the front ends' tests are in
//! `real_model/front_ends.rs`, the provider layer's tool turn in `real_model/provider_tools.rs`.

#[path = "real_model/front_ends.rs"]
mod front_ends;
#[path = "real_model/provider_tools.rs"]
mod provider_tools;

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
        // The providers' TLS setup: reqwest is built without a crypto provider of its own.
        let client = agent_providers::http::client_builder()
            .expect("TLS setup")
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

    /// The model calls: every exchange but the model list (`GET …/models`), which the ACP and
    /// ZCode servers ask for once per connection, in the background.
    fn exchanges(&self) -> Vec<Exchange> {
        let log = self.log.lock().expect("log lock");
        (log.iter())
            .filter(|x| !(x.method == "GET" && x.path.ends_with("/models")))
            .cloned()
            .collect()
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
