//! Reliability of the zut RPC front end: every input line answered under arbitrary input,
//! garbage interleaved with commands through the binary, the provider fault matrix in one
//! long-lived process, no orphans after abort or stdin EOF, a closed stdout, a client that
//! stops reading, and the token comparison.
//!
//! Property runs use `AGENT_SDK_PROPTEST_CASES` cases (default 256).

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use adapter_rpc::auth::Token;
use adapter_rpc::{serve, ServerConfig};
use agent_core::Agent;
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::{events, text_turn, Opts, Rpc, WAIT};
use proptest::prelude::*;
use secrecy::SecretString;
use serde_json::{json, Value};
use test_support::prop::{cases, runner};
use test_support::{procs, sse, End, Fault, FaultServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// ---------------------------------------------------------------------------------------------
// Every line answered
// ---------------------------------------------------------------------------------------------

/// Arbitrary JSON, a long string among the leaves.
fn json_value() -> BoxedStrategy<Value> {
    test_support::prop::json_value(vec![json!("x".repeat(5000))])
}

const COMMANDS: [&str; 13] = [
    "ping",
    "get_state",
    "get_messages",
    "get_models",
    "set_model",
    "set_reasoning",
    "abort",
    "clear",
    "prompt",
    "compact",
    "hello",
    "nope",
    "",
];
const FIELDS: [&str; 8] = [
    "id",
    "type",
    "message",
    "images",
    "model",
    "reasoning",
    "token",
    "extra",
];

/// A valid command with a field dropped, added or retyped.
fn mutated_command() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(&COMMANDS[..]),
        prop::sample::select(&FIELDS[..]),
        json_value(),
        0..3u8,
    )
        .prop_map(|(kind, field, value, op)| {
            let mut command = json!({"id": "m", "type": kind, "message": "hi",
                                     "model": "scripted-demo", "reasoning": "high"});
            let map = command.as_object_mut().expect("object");
            match op {
                0 => {
                    map.remove(field);
                }
                _ => {
                    map.insert(field.to_string(), value);
                }
            }
            command.to_string().into_bytes()
        })
}

/// Garbage lines (never containing `\n`).
fn garbage_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..48),
        2 => json_value().prop_map(|v| v.to_string().into_bytes()),
        4 => mutated_command(),
        1 => (1usize..300).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d)).into_bytes()),
        1 => (1usize..300).prop_map(|d| format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d)).into_bytes()),
        1 => Just(vec![b'x'; 5000]),
        1 => Just(b" \t\r".to_vec()),
        1 => Just(vec![0xff, 0xfe, b'{', 0x00]),
        1 => Just("\u{2028}".as_bytes().to_vec()),
    ]
    .prop_map(|mut line| {
        for b in line.iter_mut() {
            if *b == b'\n' {
                *b = b' ';
            }
        }
        line
    })
}

fn is_blank(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok_and(|t| t.trim().is_empty())
}

/// Serves `input` in-process (lines over 4 KiB are too long) and returns the output lines.
async fn serve_lines(input: Vec<u8>) -> Vec<Value> {
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("ok")])).build();
    let config = ServerConfig {
        max_line_bytes: 4096,
        ..ServerConfig::default()
    };
    let (client, server_out) = tokio::io::duplex(1 << 16);
    let reader = tokio::spawn(async move {
        let mut client = client;
        let mut out = Vec::new();
        let _ = client.read_to_end(&mut out).await;
        out
    });
    let result = tokio::time::timeout(
        WAIT,
        serve(
            agent,
            config,
            tokio::io::BufReader::new(&input[..]),
            server_out,
        ),
    )
    .await
    .expect("serve ended in time");
    assert!(result.is_ok(), "serve failed: {result:?}");
    let out = tokio::time::timeout(WAIT, reader)
        .await
        .expect("output closed")
        .expect("reader");
    String::from_utf8(out)
        .expect("output is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad frame ({e}): {l}")))
        .collect()
}

#[test]
fn every_non_blank_line_gets_exactly_one_response_and_valid_ids_succeed() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let strategy = prop::collection::vec(garbage_line(), 0..8);
    let result = runner(cases()).run(&strategy, |garbage| {
        let mut input = Vec::new();
        let mut expected = 0;
        let mut valid = Vec::new();
        for (i, line) in garbage.iter().enumerate() {
            input.extend_from_slice(line);
            input.push(b'\n');
            if !is_blank(line) {
                expected += 1;
            }
            let id = format!("valid-{i}");
            input.extend_from_slice(json!({"id": id, "type": "ping"}).to_string().as_bytes());
            input.push(b'\n');
            expected += 1;
            valid.push(id);
        }
        let frames = rt.block_on(serve_lines(input));
        let responses: Vec<&Value> = frames.iter().filter(|f| f["type"] == "response").collect();
        prop_assert_eq!(responses.len(), expected, "one response per non-blank line");
        for id in &valid {
            let answers: Vec<&&Value> = responses
                .iter()
                .filter(|r| r["id"] == id.as_str())
                .collect();
            prop_assert_eq!(answers.len(), 1, "{} answered once", id);
            prop_assert_eq!(&answers[0]["success"], true, "{}", answers[0]);
        }
        for response in &responses {
            if response["success"] == false {
                prop_assert!(
                    response["error"].as_str().is_some_and(|e| !e.is_empty()),
                    "a failure says why: {}",
                    response
                );
            }
        }
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

#[tokio::test]
async fn nesting_past_serde_limits_and_overlong_lines_are_clear_failures() {
    let mut input = Vec::new();
    for depth in [129, 2_000] {
        input.extend_from_slice(format!("{}{}\n", "[".repeat(depth), "]".repeat(depth)).as_bytes());
    }
    input.extend_from_slice(format!("{}\n", "y".repeat(10_000)).as_bytes());
    input.extend_from_slice(b"{\"id\":\"after\",\"type\":\"ping\"}\n");
    let frames = serve_lines(input).await;
    assert_eq!(frames.len(), 4, "{frames:?}");
    for frame in &frames[..2] {
        assert_eq!(frame["success"], false);
        let error = frame["error"].as_str().expect("error");
        assert!(
            error.starts_with("malformed json: recursion limit exceeded"),
            "{error}"
        );
    }
    assert_eq!(
        frames[2]["error"],
        "line too long: a command line may hold at most 4096 bytes"
    );
    assert_eq!(frames[3]["id"], "after");
    assert_eq!(frames[3]["success"], true);
}

#[tokio::test]
async fn chaos_garbage_interleaved_with_commands_through_the_binary() {
    let mut rpc = Rpc::scripted(json!([text_turn("answer one"), text_turn("answer two")]));
    let garbage: [&[u8]; 8] = [
        b"not json",
        b"[1,2]",
        b"{\"type\":7}",
        b"\xff\xfe{\x00",
        "{\"type\":\"ping\",\"id\":{\"nested\":[1]}}\u{2028}".as_bytes(),
        b"{\"type\":\"set_model\",\"model\":42}",
        b"{\"type\":\"prompt\",\"images\":\"nope\"}",
        b"null",
    ];
    let mut ids = Vec::new();
    for (i, junk) in garbage.iter().enumerate() {
        let mut line = junk.to_vec();
        line.push(b'\n');
        rpc.write(&line).await;
        let id = format!("p{i}");
        rpc.send(json!({"id": id, "type": "ping"})).await;
        ids.push(id);
        if i == 3 {
            rpc.send(json!({"id": "q1", "type": "prompt", "message": "first"}))
                .await;
        }
    }
    rpc.send(json!({"id": "q2", "type": "prompt", "message": "second"}))
        .await;
    rpc.send(json!({"id": "end", "type": "get_state"})).await;
    let mut frames = Vec::new();
    let mut dones = 0;
    let mut end_seen = false;
    while dones < 2 || !end_seen {
        let frame = rpc.next().await;
        if frame["type"] == "done" {
            dones += 1;
        }
        if frame["id"] == "end" {
            end_seen = true;
        }
        frames.push(frame);
    }
    for id in ids
        .iter()
        .chain(["q1".to_string(), "q2".to_string()].iter())
    {
        let answers: Vec<&Value> = frames.iter().filter(|f| f["id"] == id.as_str()).collect();
        assert_eq!(answers.len(), 1, "{id}: {frames:?}");
        assert_eq!(answers[0]["success"], true, "{id}: {}", answers[0]);
    }
    let failures = frames
        .iter()
        .filter(|f| f["type"] == "response" && f["success"] == false)
        .count();
    // `null` is a command without a type (unknown command); the images prompt fails too.
    assert_eq!(failures, garbage.len(), "{frames:?}");
    let texts: String = events(&frames)
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .filter_map(|e| e["delta"].as_str().map(str::to_string))
        .collect();
    assert!(
        texts.contains("answer one") && texts.contains("answer two"),
        "{texts}"
    );
}

// ---------------------------------------------------------------------------------------------
// Provider fault matrix in one process
// ---------------------------------------------------------------------------------------------

fn http_opts<'a>(url: &str, dir: Option<tempfile::TempDir>) -> Opts<'a> {
    Opts {
        args: [
            "--provider",
            "openai",
            "--base-url",
            url,
            "--api-key",
            "sk-rpc-fault-key-0123456789",
            "--model",
            "gpt-test",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        env: vec![
            ("AGENT_SDK_MAX_RETRIES", "1"),
            ("AGENT_SDK_RETRY_BACKOFF_MS", "1"),
            ("AGENT_SDK_IDLE_TIMEOUT_MS", "500"),
        ],
        dir,
        ..Opts::default()
    }
}

/// Sends a prompt and reads to its `done`; checks the order rules of the end.
async fn prompt(rpc: &mut Rpc, id: &str) -> Vec<Value> {
    let started = rpc
        .call(json!({"type": "prompt", "message": "go"}), id)
        .await;
    assert_eq!(started["success"], true, "{started}");
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    assert_eq!(evs.last().expect("done")["type"], "done");
    assert_eq!(
        evs.iter().filter(|e| e["type"] == "done").count(),
        1,
        "{id}: one done"
    );
    // Still usable.
    let pong = rpc
        .call(json!({"type": "ping"}), &format!("{id}-ping"))
        .await;
    assert_eq!(pong["success"], true);
    evs
}

fn failed(evs: &[Value], case: &str, words: &str) {
    let errors: Vec<&Value> = evs.iter().filter(|e| e["type"] == "error").collect();
    assert_eq!(errors.len(), 1, "{case}: {evs:?}");
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(words),
        "{case}: {message:?} lacks {words:?}"
    );
    assert_eq!(
        evs[evs.len() - 2]["type"],
        "error",
        "{case}: error right before done"
    );
}

fn succeeded(evs: &[Value], case: &str, text: &str) {
    assert!(!evs.iter().any(|e| e["type"] == "error"), "{case}: {evs:?}");
    let texts: String = evs
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .filter_map(|e| e["delta"].as_str().map(str::to_string))
        .collect();
    assert!(texts.contains(text), "{case}: {texts:?}");
}

#[tokio::test]
async fn the_fault_matrix_in_one_process_ends_every_prompt_with_done() {
    let ok = |t: &str| Fault::sse(sse::chat::text(t));
    let partial = |t: &str| sse::chat::Stream::new().delta(t);
    let server = FaultServer::start([
        // 1: 429 then success.
        Fault::status(429).header("retry-after", "1"),
        ok("after 429"),
        // 2-5: 500/502/503/529 then success.
        Fault::status(500),
        ok("after 500"),
        Fault::status(502),
        ok("after 502"),
        Fault::status(503),
        ok("after 503"),
        Fault::status(529),
        ok("after 529"),
        // 6: 503 twice: the budget runs out.
        Fault::status(503),
        Fault::status(503),
        // 7: reset after content.
        Fault::sse_then(partial("reset soon").unfinished(), End::Reset),
        // 8: truncated frame.
        Fault::truncated(&partial("half").delta("cut here").done(), 2),
        // 9: stall past the idle timeout.
        Fault::sse_then(partial("silence").unfinished(), End::Stall),
        // 10: empty body.
        Fault::empty(),
        // 11: invalid JSON arguments, then an answer.
        Fault::sse(sse::chat::tool_call("list_dir", "{\"path\": nope")),
        ok("handled bad args"),
        // 12: unknown tool, then an answer.
        Fault::sse(sse::chat::tool_call("no_such_tool", "{}")),
        ok("handled unknown tool"),
        // 13: an error body echoing the request headers.
        Fault::EchoHeaders,
        // 14: fine again.
        ok("still here"),
    ]);
    let mut rpc = Rpc::spawn(http_opts(&server.v1(), None));
    for (i, code) in [429, 500, 502, 503, 529].iter().enumerate() {
        let evs = prompt(&mut rpc, &format!("s{code}")).await;
        succeeded(&evs, &format!("HTTP {code}"), &format!("after {code}"));
        assert_eq!(
            server.request_count(),
            2 * (i + 1),
            "HTTP {code}: one retry"
        );
    }
    let evs = prompt(&mut rpc, "exhausted").await;
    failed(&evs, "503 twice", "server error");
    let evs = prompt(&mut rpc, "reset").await;
    failed(&evs, "reset", "");
    assert!(
        evs.iter().any(|e| e["delta"] == "reset soon"),
        "content before the reset is kept"
    );
    let evs = prompt(&mut rpc, "truncated").await;
    failed(&evs, "truncated", "ended before");
    let evs = prompt(&mut rpc, "stall").await;
    failed(&evs, "stall", "idle");
    let evs = prompt(&mut rpc, "empty").await;
    failed(&evs, "empty", "");
    for (case, text) in [
        ("bad args", "handled bad args"),
        ("unknown tool", "handled unknown tool"),
    ] {
        let evs = prompt(&mut rpc, case).await;
        succeeded(&evs, case, text);
        let result = evs
            .iter()
            .find(|e| e["type"] == "tool_result")
            .unwrap_or_else(|| panic!("{case}: no tool_result: {evs:?}"));
        assert_eq!(result["is_error"], true, "{case}: {result}");
    }
    let evs = prompt(&mut rpc, "echo").await;
    failed(&evs, "echo", "bad request");
    let evs = prompt(&mut rpc, "last").await;
    succeeded(&evs, "after every fault", "still here");
    assert!(server
        .requests()
        .iter()
        .all(|r| r.head().contains("sk-rpc-fault-key")));
    assert!(
        !rpc.pipe.raw.iter().any(|l| l.contains("sk-rpc-fault-key")),
        "the key never reaches stdout"
    );
    rpc.close();
    assert!(rpc.exit().await.success());
    let stderr = rpc.stderr().await;
    assert!(!stderr.contains("sk-rpc-fault-key"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn connection_refused_fails_the_prompt_and_the_server_stays_up() {
    let url = format!("{}/v1", test_support::refused_url());
    let mut rpc = Rpc::spawn(http_opts(&url, None));
    let evs = prompt(&mut rpc, "refused").await;
    failed(&evs, "refused", "connect");
    let evs = prompt(&mut rpc, "again").await;
    failed(&evs, "refused again", "connect");
    rpc.close();
    assert!(rpc.exit().await.success());
}

// ---------------------------------------------------------------------------------------------
// No orphans, no hangs
// ---------------------------------------------------------------------------------------------

fn bash_turns(command: &str) -> Value {
    json!([
        {"steps": [{"tool_call": {"id": "b1", "name": "bash",
            "args": [json!({"command": command}).to_string()]}}]},
        text_turn("after bash")
    ])
}

#[tokio::test]
async fn abort_during_a_long_bash_call_leaves_no_process_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("bash.pid");
    let command = format!(
        "sleep 300 & sleep 300 & echo $$ > {}; wait",
        pid_file.display()
    );
    let mut rpc = Rpc::spawn(Opts {
        script: Some(bash_turns(&command)),
        dir: Some(dir),
        ..Opts::default()
    });
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let pgid = procs::pid_in(&pid_file, WAIT).await;
    assert!(!procs::group(pgid).is_empty(), "the bash group runs");
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    rpc.until_type("done").await;
    let left = procs::wait_group_gone(pgid, Duration::from_secs(10)).await;
    assert!(
        left.is_empty(),
        "processes of group {pgid} outlived the call: {left:?}"
    );
    let pong = rpc.call(json!({"type": "ping"}), "after").await;
    assert_eq!(pong["success"], true);
}

#[tokio::test]
async fn stdin_eof_during_a_bash_call_finishes_it_and_leaves_no_process_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("bash.pid");
    // The shell ends after a second; its background child would live on without the group
    // kill.
    let command = format!("sleep 300 & echo $$ > {}; sleep 1", pid_file.display());
    let mut rpc = Rpc::spawn(Opts {
        script: Some(bash_turns(&command)),
        dir: Some(dir),
        ..Opts::default()
    });
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let pgid = procs::pid_in(&pid_file, WAIT).await;
    rpc.close();
    let rest = rpc.rest().await;
    assert_eq!(rest.last().expect("frames")["type"], "done", "{rest:?}");
    assert!(rpc.exit().await.success());
    let left = procs::wait_group_gone(pgid, Duration::from_secs(10)).await;
    assert!(
        left.is_empty(),
        "processes of group {pgid} outlived the call: {left:?}"
    );
}

#[tokio::test]
async fn a_closed_stdout_ends_the_server_with_exit_1_and_no_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(common::bin())
        .arg("rpc")
        .arg("--cwd")
        .arg(dir.path())
        .env_remove("ZUTCORE_RPC_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    for i in 0..50 {
        let line = format!("{}\n", json!({"id": i.to_string(), "type": "ping"}));
        if stdin.write_all(line.as_bytes()).await.is_err() {
            break;
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exited")
        .expect("wait");
    assert_eq!(status.code(), Some(1));
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .await;
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("writing frames"), "{stderr}");
}

#[tokio::test]
async fn a_client_that_stops_reading_does_not_grow_memory() {
    // Up to 1024 frames wait for the writer (8 MiB of 8 KiB deltas), plus the pipe and the
    // kernel's socket buffers: far less than the 64 MiB the server would push.
    const TOTAL: usize = 64 << 20;
    const CHUNK: usize = 8192;
    // `TOTAL` bytes of text in `CHUNK`-byte deltas, then the finish chunk and `[DONE]`.
    let server = FaultServer::start([Fault::chat_flood(CHUNK, TOTAL / CHUNK)]);
    let url = server.v1();
    let mut child = std::process::Command::new(common::bin());
    child
        .arg("rpc")
        .args([
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "gpt-test",
        ])
        .env("AGENT_SDK_MAX_RETRIES", "0")
        .env_remove("ZUTCORE_RPC_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = child.spawn().expect("spawn");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"flood\"}\n")
        .expect("write");
    stdin.flush().expect("flush");
    // Read the `started` response, then nothing more.
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).expect("response");
    assert!(first.contains("\"started\":true"), "{first}");
    let baseline = procs::rss_kib(pid);
    // Stalled: no frame went out for two seconds.
    let stalled_at =
        server.wait_for_flood_stall(Duration::from_secs(2), TOTAL / CHUNK, WAIT) * CHUNK;
    let rss = procs::rss_kib(pid);
    eprintln!("stalled after {stalled_at} of {TOTAL} bytes; RSS {baseline} -> {rss} KiB");
    assert!(
        stalled_at < TOTAL / 4 * 3,
        "the server pushed {stalled_at} of {TOTAL} bytes past a client that reads nothing"
    );
    assert!(
        rss < baseline + 64 * 1024,
        "RSS grew from {baseline} KiB to {rss} KiB while the client read nothing"
    );
    drop(stdin);
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
        rest
    });
    let rest = tokio::task::spawn_blocking(move || reader.join().expect("reader"))
        .await
        .expect("join");
    let status = child.wait().expect("wait");
    assert!(status.success());
    assert!(
        rest.trim_end().ends_with("{\"type\":\"done\"}"),
        "{}",
        &rest[rest.len().saturating_sub(200)..]
    );
}

// ---------------------------------------------------------------------------------------------
// Auth
// ---------------------------------------------------------------------------------------------

#[test]
fn the_token_check_accepts_exactly_the_token() {
    let strategy = ("\\PC{0,40}", "\\PC{0,40}");
    let result = runner(cases()).run(&strategy, |(secret, candidate)| {
        let token = Token::new(SecretString::from(secret.clone()));
        prop_assert!(token.matches(&secret));
        prop_assert_eq!(token.matches(&candidate), candidate == secret);
        // Near misses: a prefix, an extension, one byte changed.
        if !secret.is_empty() {
            let mut chars: Vec<char> = secret.chars().collect();
            chars.pop();
            prop_assert!(!token.matches(&chars.iter().collect::<String>()));
            let longer = format!("{secret}x");
            prop_assert!(!token.matches(&longer));
            let mut flipped = secret.clone().into_bytes();
            flipped[0] ^= 0x01;
            if let Ok(flipped) = String::from_utf8(flipped) {
                prop_assert!(!token.matches(&flipped));
            }
        }
        prop_assert_eq!(format!("{token:?}"), "Token([REDACTED])");
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

#[test]
fn the_token_compare_is_the_constant_time_one() {
    // Timing is not measured (no timed assertions); the source is checked to use `subtle`'s
    // constant-time equality and never `==` on the secret.
    let source = include_str!("../src/auth.rs");
    assert!(
        source.contains("ct_eq("),
        "auth.rs compares with subtle's ct_eq"
    );
    assert!(
        !source.contains("expose_secret() =="),
        "auth.rs never compares the secret with =="
    );
}
