//! Property tests of the ZCode app-server's input handling, in process (`serve` on an
//! in-memory duplex): arbitrary bytes, arbitrary JSON values and mutations of valid frames
//! (dropped / added / retyped fields, huge strings, deep nesting, invalid UTF-8, NUL,
//! U+2028) each get the protocol's own error form (or a proper reply), never a panic, and
//! a probe request sent right behind every case is answered: the server keeps serving.
//!
//! 256 cases per property; `AGENT_SDK_PROPTEST_CASES` runs more.

use std::time::Duration;

use adapter_acp::zcode::{serve, ServerOptions};
use agent_host::session::AgentFactory;
use agent_providers::{ProviderConfig, ProviderId};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const WAIT: Duration = Duration::from_secs(20);
/// Every error code the ZCode protocol uses.
const CODES: [i64; 7] = [-32700, -32600, -32601, -32602, -32603, -32004, -32010];

fn cases() -> u32 {
    std::env::var("AGENT_SDK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

struct Harness {
    rt: tokio::runtime::Runtime,
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    session: String,
    workspace: String,
    probes: u64,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&workspace).expect("ws");
        let script = dir.path().join("script.json");
        let turns: Vec<Value> = (0..64)
            .map(|_| json!({"steps": [{"text": "ok"}]}))
            .collect();
        std::fs::write(
            &script,
            json!({"model": "scripted-test", "turns": turns}).to_string(),
        )
        .expect("script");
        let mut config = ProviderConfig::new(ProviderId::Scripted);
        config.script = Some(script);
        let options = ServerOptions {
            factory: AgentFactory::new(config),
            data_dir: dir.path().join("data"),
            storage: None,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        let server = rt.spawn(serve(options, server_in, server_out));
        let mut harness = Self {
            rt,
            input,
            output: BufReader::new(output).lines(),
            server: Some(server),
            session: String::new(),
            workspace: workspace.display().to_string(),
            probes: 0,
            _dir: dir,
        };
        let ws = harness.workspace.clone();
        let created = harness.request(json!({"id": "setup", "method": "session/create",
            "params": {"workspace": {"workspacePath": ws, "workspaceKey": "k"}, "mode": "plan"}}));
        harness.session = created["result"]["session"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        harness
    }

    /// Sends a whole request and returns its reply (skipping other lines).
    fn request(&mut self, frame: Value) -> Value {
        let id = frame["id"].clone();
        let lines = self.exchange(frame.to_string().as_bytes(), &id);
        lines
            .into_iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .expect("reply")
    }

    /// Writes `bytes` + newline, then a probe; returns every line up to the probe's reply.
    fn exchange(&mut self, bytes: &[u8], wait_for: &Value) -> Vec<Value> {
        self.probes += 1;
        let probe = format!("probe-{}", self.probes);
        let probe_line = json!({"id": probe, "method": "session/list", "params": {}}).to_string();
        let Self {
            rt, input, output, ..
        } = self;
        rt.block_on(async {
            tokio::time::timeout(WAIT, async {
                input.write_all(bytes).await.expect("write");
                input.write_all(b"\n").await.expect("write");
                input.write_all(probe_line.as_bytes()).await.expect("write");
                input.write_all(b"\n").await.expect("write");
                input.flush().await.expect("flush");
            })
            .await
            .expect("the server stopped reading its input");
            let mut lines = Vec::new();
            let mut seen_wait = wait_for.is_null();
            loop {
                let line = tokio::time::timeout(WAIT, output.next_line())
                    .await
                    .expect("no answer to the probe: the server stopped serving")
                    .expect("read")
                    .expect("the server closed its output");
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("output is not JSON ({e}): {line}"));
                let is_probe = value["id"] == json!(probe) && value.get("method").is_none();
                if value["id"] == *wait_for && value.get("method").is_none() {
                    seen_wait = true;
                }
                if !is_probe {
                    lines.push(value);
                }
                if is_probe && seen_wait {
                    return lines;
                }
            }
        })
    }

    /// Feeds one case and checks what came back.
    fn check(&mut self, bytes: &[u8]) -> Result<(), TestCaseError> {
        let lines = self.exchange(bytes, &Value::Null);
        for message in &lines {
            prop_assert!(message.is_object(), "not an object: {message}");
            prop_assert!(message.get("jsonrpc").is_none(), "jsonrpc: {message}");
            if let Some(error) = message.get("error") {
                let code = error["code"].as_i64().unwrap_or_default();
                prop_assert!(CODES.contains(&code), "unknown code: {message}");
                prop_assert!(
                    error["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "empty message: {message}"
                );
            }
        }
        // A single line that is not JSON gets exactly one parse error for the line.
        if !bytes.contains(&b'\n') {
            let expected = match std::str::from_utf8(bytes) {
                Err(_) => Some(-32700),
                Ok(text) if text.trim().is_empty() => None,
                Ok(text) => match serde_json::from_str::<Value>(text.trim()) {
                    Err(_) => Some(-32700),
                    Ok(Value::Object(_)) => None,
                    Ok(_) => Some(-32600),
                },
            };
            let invalid: Vec<&Value> = lines
                .iter()
                .filter(|m| m["id"] == "invalid-message")
                .collect();
            match expected {
                Some(code) => {
                    prop_assert_eq!(invalid.len(), 1, "one error for the line: {:?}", lines);
                    prop_assert_eq!(&invalid[0]["error"]["code"], &json!(code));
                }
                None if text_is_blank(bytes) => prop_assert!(lines.is_empty(), "{:?}", lines),
                None => {}
            }
        }
        Ok(())
    }

    fn shutdown(mut self) {
        let server = self.server.take().expect("server");
        let Self { rt, input, .. } = self;
        drop(input);
        let result = rt
            .block_on(async { tokio::time::timeout(WAIT, server).await })
            .expect("the server did not stop at end of input")
            .expect("the server task panicked");
        assert!(result.is_ok(), "{result:?}");
    }
}

fn text_is_blank(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|t| t.trim().is_empty())
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
        Just(json!("nul\u{0}and\u{2028}sep\u{2029}")),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_string()),
                    Just("method".to_string()),
                    Just("params".to_string()),
                    Just("result".to_string()),
                    Just("error".to_string()),
                    Just("sessionId".to_string()),
                    "[a-zA-Z]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

#[test]
fn prop_arbitrary_bytes_never_stop_the_server() {
    let mut harness = Harness::new();
    let cell = std::cell::RefCell::new(&mut harness);
    let strategy = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        // Mostly printable, with the characters that break naive line handling.
        prop::collection::vec(
            prop_oneof![
                Just(b'{'),
                Just(b'}'),
                Just(b'"'),
                Just(b'\\'),
                Just(0u8),
                Just(0xffu8),
                Just(b'\r'),
                any::<u8>()
            ],
            0..256
        ),
    ];
    runner()
        .run(&strategy, |bytes| cell.borrow_mut().check(&bytes))
        .expect("property");
    harness.shutdown();
}

#[test]
fn prop_arbitrary_json_values_get_protocol_errors() {
    let mut harness = Harness::new();
    let cell = std::cell::RefCell::new(&mut harness);
    runner()
        .run(&json_value(), |value| {
            cell.borrow_mut().check(value.to_string().as_bytes())
        })
        .expect("property");
    harness.shutdown();
}

/// One change to a valid frame.
#[derive(Debug, Clone)]
enum Mutation {
    /// Drop the n-th field (top level, then params).
    Drop(usize),
    /// Add a field.
    Add(String, Value),
    /// Replace the n-th field's value.
    Retype(usize, Value),
    /// Replace the n-th field's value with a huge string.
    Huge(usize, usize),
    /// Wrap the n-th field's value in `depth` arrays.
    Nest(usize, usize),
    /// Put a NUL, U+2028 and U+2029 into the n-th field's string.
    Separators(usize),
    /// Overwrite a byte of the serialised line with an invalid UTF-8 byte.
    BadByte(usize, u8),
    /// Cut the serialised line short.
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Drop),
        ("[a-zA-Z]{1,10}", json_value()).prop_map(|(k, v)| Mutation::Add(k, v)),
        (any::<usize>(), json_value()).prop_map(|(n, v)| Mutation::Retype(n, v)),
        (any::<usize>(), 1usize..2_000_000).prop_map(|(n, len)| Mutation::Huge(n, len)),
        (any::<usize>(), 1usize..400).prop_map(|(n, d)| Mutation::Nest(n, d)),
        any::<usize>().prop_map(Mutation::Separators),
        (any::<usize>(), 0x80u8..=0xff).prop_map(|(n, b)| Mutation::BadByte(n, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// The (object, key) slots of a frame: its top-level fields, then its params' fields.
fn slots(frame: &Value) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = frame
        .as_object()
        .map(|o| o.keys().map(|k| (false, k.clone())).collect())
        .unwrap_or_default();
    if let Some(params) = frame["params"].as_object() {
        out.extend(params.keys().map(|k| (true, k.clone())));
    }
    out
}

fn slot_mut(frame: &mut Value, n: usize) -> Option<(&mut Map<String, Value>, String)> {
    let all = slots(frame);
    if all.is_empty() {
        return None;
    }
    let (in_params, key) = all[n % all.len()].clone();
    let object = match in_params {
        true => frame.get_mut("params")?.as_object_mut()?,
        false => frame.as_object_mut()?,
    };
    Some((object, key))
}

fn apply(mut frame: Value, mutation: &Mutation) -> Vec<u8> {
    match mutation {
        Mutation::Drop(n) => {
            if let Some((object, key)) = slot_mut(&mut frame, *n) {
                object.remove(&key);
            }
        }
        Mutation::Add(key, value) => {
            if let Some(object) = frame.as_object_mut() {
                object.insert(key.clone(), value.clone());
            }
        }
        Mutation::Retype(n, value) => {
            if let Some((object, key)) = slot_mut(&mut frame, *n) {
                object.insert(key, value.clone());
            }
        }
        Mutation::Huge(n, len) => {
            if let Some((object, key)) = slot_mut(&mut frame, *n) {
                object.insert(key, Value::String("x".repeat(*len)));
            }
        }
        Mutation::Nest(n, depth) => {
            if let Some((object, key)) = slot_mut(&mut frame, *n) {
                let mut value = object.remove(&key).unwrap_or(Value::Null);
                for _ in 0..*depth {
                    value = Value::Array(vec![value]);
                }
                object.insert(key, value);
            }
        }
        Mutation::Separators(n) => {
            if let Some((object, key)) = slot_mut(&mut frame, *n) {
                let old = object.get(&key).and_then(Value::as_str).unwrap_or("");
                object.insert(key, Value::String(format!("{old}\u{0}\u{2028}\u{2029}")));
            }
        }
        Mutation::BadByte(n, byte) => {
            let mut bytes = frame.to_string().into_bytes();
            let at = n % bytes.len();
            bytes[at] = *byte;
            return bytes;
        }
        Mutation::Truncate(n) => {
            let bytes = frame.to_string().into_bytes();
            let at = n % bytes.len();
            return bytes[..at].to_vec();
        }
    }
    to_bytes(&frame)
}

/// Serialises without serde_json's recursion limit (nesting is the point of some cases).
fn to_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                write_value(v, out);
            }
            out.push(b'}');
        }
        leaf => out.extend_from_slice(leaf.to_string().as_bytes()),
    }
}

fn valid_frames(session: &str, workspace: &str) -> Vec<Value> {
    let sid = json!(session);
    vec![
        json!({"id": 1, "method": "session/create", "params": {"workspace": {"workspacePath": workspace, "workspaceKey": "k"}, "mode": "plan"}}),
        json!({"id": "r", "method": "session/read", "params": {"sessionId": sid, "messageLimit": 3}}),
        json!({"id": 2, "method": "session/list", "params": {"limit": 5}}),
        json!({"id": 3, "method": "session/resume", "params": {"sessionId": sid}}),
        json!({"id": 4, "method": "session/messages", "params": {"sessionId": sid, "limit": 2}}),
        json!({"id": 5, "method": "session/events", "params": {"sessionId": sid, "afterSeq": 0}}),
        json!({"id": 6, "method": "session/steer", "params": {"sessionId": sid, "content": "x"}}),
        json!({"id": 7, "method": "session/setMode", "params": {"sessionId": sid, "mode": "plan"}}),
        json!({"id": 8, "method": "session/setThoughtLevel", "params": {"sessionId": sid, "thoughtLevel": "low"}}),
        json!({"id": 9, "method": "session/goal", "params": {"sessionId": sid, "action": "show"}}),
        json!({"id": 10, "method": "session/fork", "params": {"sessionId": sid, "target": {"type": "turn", "turnIndex": 0}}}),
        json!({"id": 11, "method": "session/cancelBackgroundTask", "params": {"sessionId": sid, "taskId": "t"}}),
        json!({"id": "s", "method": "session/send", "params": {"sessionId": sid, "content": "hello", "inputId": "i"}}),
        json!({"id": "server-1", "result": {"decision": "allow"}}),
        json!({"method": "session/steer", "params": {"sessionId": sid, "content": "n"}}),
    ]
}

#[test]
fn prop_mutated_valid_frames_get_replies_or_protocol_errors() {
    let mut harness = Harness::new();
    let frames = valid_frames(&harness.session, &harness.workspace);
    let cell = std::cell::RefCell::new(&mut harness);
    let strategy = (0..frames.len(), prop::collection::vec(mutation(), 1..3));
    runner()
        .run(&strategy, |(index, mutations)| {
            let mut bytes = to_bytes(&frames[index]);
            for m in &mutations {
                // Byte-level mutations apply to the text; the rest to a parse of it.
                bytes = match serde_json::from_slice::<Value>(&bytes) {
                    Ok(frame) => apply(frame, m),
                    Err(_) => bytes,
                };
            }
            bytes.retain(|b| *b != b'\n');
            cell.borrow_mut().check(&bytes)
        })
        .expect("property");
    harness.shutdown();
}

#[test]
fn deep_nesting_and_huge_lines_get_clear_errors() {
    let mut harness = Harness::new();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let lines = harness.exchange(deep.as_bytes(), &Value::Null);
    let error = &lines[0]["error"];
    assert_eq!(error["code"], -32700, "{lines:?}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("nested deeper than 128")),
        "{error}"
    );
    // A 4 MiB string inside a request is within the line limit and answered normally.
    let sid = harness.session.clone();
    let reply = harness.request(json!({"id": "big", "method": "session/steer",
        "params": {"sessionId": sid, "content": "y".repeat(4 << 20)}}));
    assert_eq!(reply["result"]["accepted"], true, "{reply}");
    harness.shutdown();
}
