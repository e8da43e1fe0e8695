//! Chaos through both binaries: garbage lines (random bytes, invalid UTF-8, NUL, U+2028,
//! deep nesting, over-long lines, wrong JSON shapes, mangled requests) interleaved with
//! valid requests, pipelined. Every valid request is answered exactly once, garbage gets
//! the protocol's own errors, and the process exits cleanly at the end of input.

mod common;

use std::collections::HashMap;

use common::acp_client::Acp;
use common::{Client, Env};
use serde_json::{json, Value};

/// Lines over this many bytes are refused (set small so the test can cross it).
const LIMIT: usize = 4096;

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One garbage line (never containing a newline).
fn garbage(rng: &mut Rng, jsonrpc: bool) -> Vec<u8> {
    let mut line = match rng.below(12) {
        0 => (0..rng.below(200)).map(|_| rng.next() as u8).collect(),
        1 => b"\xff\xfe{\"id\":1}".to_vec(),
        2 => "{\"id\":\"x\u{0}\",\"method\":\"\u{2028}\"}"
            .as_bytes()
            .to_vec(),
        3 => format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
        4 => vec![b'a'; LIMIT + 1 + rng.below(50_000)],
        5 => b"null".to_vec(),
        6 => b"[1,2,3]".to_vec(),
        7 => b"{\"method\": 42}".to_vec(),
        8 => b"{not json".to_vec(),
        9 => json!({"id": {"nested": true}, "method": "session/list"})
            .to_string()
            .into_bytes(),
        10 => json!({"result": {"unsolicited": true}, "id": "nobody-asked"})
            .to_string()
            .into_bytes(),
        _ => b"\"just a string\"".to_vec(),
    };
    if jsonrpc && rng.below(2) == 0 {
        // A JSON-RPC-looking frame with broken params.
        line = json!({"jsonrpc": "2.0", "method": "session/prompt", "params": {"sessionId": 7}})
            .to_string()
            .into_bytes();
    }
    line.retain(|b| *b != b'\n');
    line
}

/// Error replies with `code` whose message contains `needle`.
fn count(errors: &[Value], code: i64, needle: &str) -> usize {
    errors
        .iter()
        .filter(|m| {
            m["error"]["code"] == code
                && m["error"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains(needle))
        })
        .count()
}

/// A script of `turns` turns that each answer "ok".
fn ok_script(env: &Env, turns: usize) -> std::path::PathBuf {
    let turns: Vec<Value> = (0..turns)
        .map(|_| json!({"steps": [{"text": "ok"}]}))
        .collect();
    common::write_script(env.root.path(), json!(turns))
}

/// Counts `line` as over the limit or not UTF-8 (or neither).
fn tally(line: &[u8], too_long: &mut usize, not_utf8: &mut usize) {
    if line.len() > LIMIT {
        *too_long += 1;
    } else if std::str::from_utf8(line).is_err() {
        *not_utf8 += 1;
    }
}

/// One clear error per over-long line and per line that is not UTF-8, and the seed made some.
fn assert_errors(errors: &[Value], too_long: usize, not_utf8: usize) {
    assert_eq!(
        count(errors, -32600, &format!("limit of {LIMIT} bytes")),
        too_long,
        "one clear error per over-long line"
    );
    assert_eq!(count(errors, -32700, "not valid UTF-8"), not_utf8);
    assert!(not_utf8 >= 1, "the seed produced non-UTF-8 lines");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zcode_answers_every_valid_request_between_garbage() {
    let env = Env::new();
    let script = ok_script(&env, 20);
    let limit = LIMIT.to_string();
    let mut args = vec!["app-server".to_string(), "--stdio".to_string()];
    args.extend(env.scripted(&script));
    let mut c = Client::spawn_with(&args, &[("ADAPTER_ACP_MAX_LINE_BYTES", &limit)], None);
    let sid = c.create(&env.workspace_str(), "plan").await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut expected: Vec<String> = Vec::new();
    let mut too_long = 0;
    let mut not_utf8 = 0;
    for round in 0..10 {
        for n in 0..20 {
            let line = garbage(&mut rng, false);
            tally(&line, &mut too_long, &mut not_utf8);
            c.send_bytes(&line).await;
            let id = format!("valid-{round}-{n}");
            let (method, params) = match n % 4 {
                0 => ("session/list", json!({})),
                1 => ("session/read", json!({"sessionId": sid})),
                2 => ("session/events", json!({"sessionId": sid, "afterSeq": 0})),
                _ => (
                    "session/steer",
                    json!({"sessionId": sid, "content": "go on"}),
                ),
            };
            c.send(json!({"id": id, "method": method, "params": params}))
                .await;
            expected.push(id);
        }
        for id in &expected[expected.len() - 20..] {
            let reply = c.reply(json!(id)).await;
            assert!(reply.get("result").is_some(), "{id}: {reply}");
        }
    }
    // Every garbage line was answered with a protocol error, never with our ids.
    let errors: Vec<Value> = c
        .raw
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["id"] == "invalid-message")
        .collect();
    assert!(errors
        .iter()
        .all(|m| [-32700, -32600].contains(&m["error"]["code"].as_i64().unwrap_or_default())));
    assert_errors(&errors, too_long, not_utf8);
    assert!(c.shutdown().await, "clean exit at end of input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_answers_every_valid_request_between_garbage() {
    let env = Env::new();
    let script = ok_script(&env, 40);
    let limit = LIMIT.to_string();
    let mut acp = Acp::spawn(
        &env.scripted(&script),
        &[("ADAPTER_ACP_MAX_LINE_BYTES", &limit)],
        None,
    );
    acp.initialize().await;
    let sid = acp.new_session(&env.workspace()).await;
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut too_long = 0;
    let mut not_utf8 = 0;
    for _ in 0..10 {
        let mut ids: HashMap<i64, &str> = HashMap::new();
        for n in 0..20 {
            let line = garbage(&mut rng, true);
            tally(&line, &mut too_long, &mut not_utf8);
            acp.send_raw(&line).await;
            let (method, params) = match n % 3 {
                0 => ("session/list", json!({})),
                1 => (
                    "session/set_mode",
                    json!({"sessionId": sid, "modeId": "plan"}),
                ),
                _ => (
                    "session/prompt",
                    json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
                ),
            };
            // One prompt at a time: the others are still answered (with an error) at once.
            let id = acp.request(method, params).await;
            ids.insert(id, method);
        }
        for (id, method) in ids {
            let reply = acp.reply(id).await;
            match method {
                "session/prompt" => assert!(
                    reply["result"]["stopReason"] == "end_turn" || reply["error"]["code"].is_i64(),
                    "{reply}"
                ),
                _ => assert!(reply.get("result").is_some(), "{method}: {reply}"),
            }
        }
    }
    let errors: Vec<Value> = acp
        .raw
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["id"].is_null() && m.get("error").is_some())
        .collect();
    assert_errors(&errors, too_long, not_utf8);
    assert!(acp.shutdown().await, "clean exit at end of input");
}
