//! End-to-end tests: spawn `adapter-rpc rpc` and drive it over pipes.

mod common;

use base64::Engine;
use common::{events, text_turn, types, Opts, Rpc};
use serde_json::{json, Value};
use test_support::{sse, MockModel, Reply, Sse};

fn demo_turns() -> Value {
    json!([text_turn("hello")])
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ping_echoes_id_and_omits_it_when_absent_or_empty() {
    let mut rpc = Rpc::scripted(demo_turns());
    let resp = rpc.call(json!({"type": "ping"}), "9").await;
    assert_eq!(
        resp,
        json!({"type": "response", "id": "9", "command": "ping", "success": true, "data": {"pong": true}})
    );
    rpc.send(json!({"type": "ping"})).await;
    let resp = rpc.next().await;
    assert_eq!(
        resp,
        json!({"type": "response", "command": "ping", "success": true, "data": {"pong": true}})
    );
    rpc.send(json!({"type": "ping", "id": ""})).await;
    let resp = rpc.next().await;
    assert!(resp.get("id").is_none(), "empty id must be omitted: {resp}");
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn malformed_and_unknown_lines_are_answered_and_the_server_keeps_going() {
    let mut rpc = Rpc::scripted(demo_turns());
    rpc.send_raw("{not json").await;
    let r = rpc.next().await;
    assert_eq!(r["command"], "");
    assert_eq!(r["success"], false);
    assert!(r.get("id").is_none());
    assert!(
        r["error"].as_str().unwrap().starts_with("malformed json: "),
        "{r}"
    );

    // A numeric id or a non-string type is malformed; the id is not echoed and nothing runs.
    for line in [
        r#"{"id":7,"type":"ping"}"#,
        r#"{"id":"x","type":5}"#,
        "[]",
        "\"x\"",
        "1",
        r#"{"type":"ping"} x"#,
    ] {
        rpc.send_raw(line).await;
        let r = rpc.next().await;
        assert_eq!(r["success"], false, "{line}: {r}");
        assert_eq!(r["command"], "", "{line}: {r}");
        assert!(r.get("id").is_none(), "{line}: {r}");
        assert!(
            r["error"].as_str().unwrap().starts_with("malformed json: "),
            "{line}: {r}"
        );
    }

    rpc.send_raw("null").await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"m"}"#).await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "", "id": "m", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"u","type":"frobnicate"}"#).await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "frobnicate", "id": "u", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"r","type":"reload_ext"}"#).await;
    assert_eq!(rpc.next().await["error"], "unknown command");

    // Blank and whitespace-only lines are skipped silently.
    rpc.write(b"\n   \n\t\r\n").await;
    let r = rpc.call(json!({"type": "ping"}), "after").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn state_models_messages_and_clear() {
    let mut rpc = Rpc::scripted(demo_turns());
    let hello = rpc
        .call(json!({"type": "hello", "token": "anything"}), "0")
        .await;
    assert_eq!(hello["success"], true);
    assert_eq!(hello["data"]["protocol_version"], 1);
    assert_eq!(hello["data"]["provider"], "scripted");
    assert_eq!(hello["data"]["model"], "scripted-test");
    assert!(hello["data"]["version"].is_string());

    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    let data = &state["data"];
    assert_eq!(data["provider"], "scripted");
    assert_eq!(data["model"], "scripted-test");
    assert_eq!(data["cwd"], rpc.dir.path().display().to_string());
    assert_eq!(data["message_count"], 0);
    assert_eq!(data["busy"], false);
    assert_eq!(data["usage"]["reasoning"], Value::Null);
    for key in [
        "input",
        "output",
        "cache_read",
        "cache_write",
        "cache_measured_prompt",
        "cache_measured_read",
        "cost_usd",
    ] {
        assert!(data["usage"][key].is_number(), "usage.{key}: {data}");
    }

    let models = rpc.call(json!({"type": "get_models"}), "gm").await;
    let list = models["data"]["models"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], "scripted-test");
    assert_eq!(list[0]["provider"], "scripted");
    assert!(list[0]["context_window"].as_u64().unwrap() > 0);
    assert!(list[0]["max_output"].as_u64().unwrap() > 0);
    assert!(list[0]["reasoning"].is_boolean());

    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    assert_eq!(messages["data"], json!({"messages": []}));

    rpc.send(json!({"type": "prompt", "message": "hi"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(frames[0]["data"]["started"], true);

    let messages = rpc.call(json!({"type": "get_messages"}), "m2").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["role"], "user");
    assert_eq!(list[0]["content"], json!([{"type": "text", "text": "hi"}]));
    assert!(list[0]["time"].is_string());
    assert_eq!(list[1]["role"], "assistant");
    assert_eq!(
        list[1]["content"],
        json!([{"type": "text", "text": "hello"}])
    );

    let state = rpc.call(json!({"type": "get_state"}), "s2").await;
    assert_eq!(state["data"]["message_count"], 2);
    assert_eq!(state["data"]["usage"]["input"], 10);
    assert!(state["data"]["usage"]["cost_usd"].as_f64().unwrap() > 0.0);

    let clear = rpc.call(json!({"type": "clear"}), "c").await;
    assert_eq!(
        clear,
        json!({"type": "response", "id": "c", "command": "clear", "success": true})
    );
    let state = rpc.call(json!({"type": "get_state"}), "s3").await;
    assert_eq!(state["data"]["message_count"], 0);
    assert_eq!(
        state["data"]["usage"]["input"], 10,
        "clear keeps usage and cost"
    );
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn set_model_and_set_reasoning_validate() {
    let mut rpc = Rpc::scripted(demo_turns());
    let ok = rpc
        .call(json!({"type": "set_model", "model": "scripted-test"}), "1")
        .await;
    assert_eq!(ok["data"], json!({"model": "scripted-test"}));
    let bad = rpc
        .call(json!({"type": "set_model", "model": "gpt-nope"}), "2")
        .await;
    assert_eq!(
        bad,
        json!({"type": "response", "id": "2", "command": "set_model", "success": false,
               "error": "unknown model \"gpt-nope\" (provider=\"scripted\")"})
    );
    let missing = rpc.call(json!({"type": "set_model"}), "3").await;
    assert_eq!(
        missing["error"],
        "unknown model \"\" (provider=\"scripted\")"
    );
    let typed = rpc
        .call(json!({"type": "set_model", "model": 5}), "4")
        .await;
    assert_eq!(typed["success"], false);
    assert!(!typed["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed json"));

    for (input, want) in [
        ("max", "max"),
        ("maximum", "xhigh"),
        ("off", ""),
        ("minimal", "minimum"),
        (" HIGH ", "high"),
        ("med", "medium"),
    ] {
        let r = rpc
            .call(json!({"type": "set_reasoning", "reasoning": input}), "r")
            .await;
        assert_eq!(r["data"], json!({"reasoning": want}), "{input}");
        let state = rpc.call(json!({"type": "get_state"}), "s").await;
        assert_eq!(state["data"]["reasoning"], want, "{input}");
    }
    let bad = rpc
        .call(
            json!({"type": "set_reasoning", "reasoning": "extreme"}),
            "b",
        )
        .await;
    assert_eq!(
        bad["error"],
        "reasoning must be off|minimum|low|medium|high|xhigh|max"
    );
    assert!(bad.get("data").is_none());
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(
        state["data"]["reasoning"], "medium",
        "a failed set_reasoning leaves the level"
    );
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn abort_while_idle_succeeds_without_events() {
    let mut rpc = Rpc::scripted(demo_turns());
    let r = rpc.call(json!({"type": "abort"}), "a").await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "a", "command": "abort", "success": true})
    );
    // The very next line is the ping's response: abort produced no events.
    let r = rpc.call(json!({"type": "ping"}), "p").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
}

#[tokio::test]
async fn prompt_field_errors_fail_without_starting() {
    let mut rpc = Rpc::scripted(demo_turns());
    let r = rpc
        .call(json!({"type": "prompt", "message": 42}), "p")
        .await;
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "prompt");
    assert!(!r["error"].as_str().unwrap().starts_with("malformed json"));
    let r = rpc
        .call(
            json!({"type": "prompt", "message": "x", "images": [{"mime_type": "image/png", "data": "@@@@"}]}),
            "b",
        )
        .await;
    assert_eq!(r["error"], "illegal base64 data at input byte 0");
    // Nothing ran: the next line is the ping's response and the transcript is empty.
    let r = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(r["data"]["message_count"], 0);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
}

#[tokio::test]
async fn an_overlong_line_gets_a_clear_failure_and_reading_goes_on() {
    let mut rpc = Rpc::scripted(demo_turns());
    let mut line = br#"{"type":"prompt","message":""#.to_vec();
    line.resize(16 * 1024 * 1024 + 10, b'a');
    line.extend_from_slice(b"\"}\n");
    rpc.write(&line).await;
    let r = rpc.next().await;
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "");
    assert!(
        r["error"].as_str().unwrap().contains("line too long"),
        "{r}"
    );
    let r = rpc.call(json!({"type": "ping"}), "p").await;
    assert_eq!(r["data"]["pong"], true);
    let r = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(r["data"]["message_count"], 0, "the long prompt did not run");
    rpc.close();
    assert!(rpc.exit().await.success());
}

// ---------------------------------------------------------------------------------------------
// Auth
// ---------------------------------------------------------------------------------------------

fn with_token(turns: Value) -> Rpc {
    Rpc::spawn(Opts {
        script: Some(turns),
        env: vec![("ZUTCORE_RPC_TOKEN", "shared-secret")],
        ..Opts::default()
    })
}

#[tokio::test]
async fn right_token_authenticates() {
    let mut rpc = with_token(demo_turns());
    // A malformed line before hello is answered and does not end the session.
    rpc.send_raw("{oops").await;
    assert!(rpc.next().await["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed json"));
    let r = rpc
        .call(json!({"type": "hello", "token": "shared-secret"}), "0")
        .await;
    assert_eq!(r["success"], true);
    assert_eq!(r["data"]["protocol_version"], 1);
    // A second hello is not re-checked.
    let r = rpc
        .call(json!({"type": "hello", "token": "whatever"}), "1")
        .await;
    assert_eq!(r["success"], true);
    let r = rpc.call(json!({"type": "ping"}), "2").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn wrong_token_fails_and_exits() {
    let mut rpc = with_token(demo_turns());
    let r = rpc
        .call(json!({"type": "hello", "token": "shared-secreT"}), "0")
        .await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "0", "command": "hello", "success": false, "error": "invalid token"})
    );
    // The process exits on its own, stdin still open.
    assert!(rpc.rest().await.is_empty());
    let status = rpc.exit().await;
    assert_eq!(status.code(), Some(1));
    assert!(rpc.stderr().await.contains("bad auth token"));
}

#[tokio::test]
async fn missing_or_non_string_token_fails_and_exits() {
    for hello in [
        json!({"type": "hello"}),
        json!({"type": "hello", "token": 12}),
    ] {
        let mut rpc = with_token(demo_turns());
        let r = rpc.call(hello, "0").await;
        assert_eq!(r["error"], "invalid token");
        assert!(rpc.rest().await.is_empty());
        assert_eq!(rpc.exit().await.code(), Some(1));
    }
}

#[tokio::test]
async fn command_before_hello_is_refused_and_exits() {
    let mut rpc = with_token(demo_turns());
    let r = rpc
        .call(json!({"type": "prompt", "message": "hi"}), "p")
        .await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "p", "command": "prompt", "success": false,
               "error": "auth required: send hello with token first"})
    );
    assert!(rpc.rest().await.is_empty(), "the prompt must not have run");
    assert_eq!(rpc.exit().await.code(), Some(1));
}

// ---------------------------------------------------------------------------------------------
// Prompts
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn full_prompt_follows_the_documented_order() {
    let mut rpc = Rpc::scripted(json!([{"steps": [
        {"reasoning": "thinking"},
        {"text": "Hel"},
        {"text": "lo"},
        {"usage": {"input": 100, "output": 7, "reasoning": 3, "cache_read": 50}}
    ]}]));
    rpc.send(json!({"id": "1", "type": "prompt", "message": "say hello"}))
        .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        types(&frames),
        [
            "response",
            "user_message",
            "turn_start",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "text_delta",
            "usage",
            "assistant_message",
            "turn_end",
            "done"
        ]
    );
    assert_eq!(
        frames[0],
        json!({"type": "response", "id": "1", "command": "prompt", "success": true, "data": {"started": true}})
    );
    assert_eq!(
        frames[1]["content"],
        json!([{"type": "text", "text": "say hello"}])
    );
    assert!(chrono_like(&frames[1]["time"]));
    assert_eq!(frames[2], json!({"type": "turn_start", "step": 1}));
    assert_eq!(frames[3]["scope"], "agent");
    assert_eq!(frames[3]["provider"], "scripted");
    assert_eq!(frames[3]["model"], "scripted-test");
    assert_eq!(frames[3]["attempt"], 1);
    assert!(frames[3]["max_attempts"].as_u64().unwrap() >= 1);
    assert_eq!(frames[4]["scope"], "provider");
    assert_eq!(frames[6], json!({"type": "text_delta", "delta": "Hel"}));
    let usage = &frames[8];
    assert_eq!(usage["input"], 100);
    assert_eq!(usage["output"], 7);
    assert_eq!(usage["reasoning"], 3);
    assert_eq!(usage["cache_read"], 50);
    assert_eq!(usage["cache_write"], 0);
    assert_eq!(usage["cache_measured_prompt"], 150);
    assert_eq!(usage["cache_measured_read"], 50);
    assert!(usage["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(usage["cumulative"]["input"], 100);
    assert_eq!(
        frames[9]["content"],
        json!([{"type": "text", "text": "Hello"}]),
        "reasoning blocks are dropped"
    );
    assert_eq!(frames[10], json!({"type": "turn_end", "stop": "end"}));
    assert_eq!(frames[11], json!({"type": "done"}));
    for frame in &frames[1..] {
        assert!(frame.get("id").is_none(), "events carry no id: {frame}");
    }
    rpc.close();
    assert!(rpc.rest().await.is_empty(), "exactly one done");
    assert!(rpc.exit().await.success());
}

fn chrono_like(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() >= 20 && s.as_bytes()[4] == b'-' && s.contains('T'))
}

#[tokio::test]
async fn empty_prompt_gives_error_then_done_without_user_message() {
    let mut rpc = Rpc::scripted(demo_turns());
    rpc.send(json!({"id": "e", "type": "prompt", "message": ""}))
        .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        frames,
        vec![
            json!({"type": "response", "id": "e", "command": "prompt", "success": true, "data": {"started": true}}),
            json!({"type": "error", "message": "prompt is empty"}),
            json!({"type": "done"}),
        ]
    );
}

#[tokio::test]
async fn provider_error_ends_with_turn_end_error_and_done() {
    let mut rpc = Rpc::scripted(json!([{"steps": [
        {"text": "par"},
        {"error": {"kind": "bad_request", "message": "model exploded"}}
    ]}]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let n = evs.len();
    assert_eq!(
        evs[n - 3],
        json!({"type": "turn_end", "stop": "error", "error": "model exploded"})
    );
    assert_eq!(
        evs[n - 2],
        json!({"type": "error", "message": "model exploded"})
    );
    assert_eq!(evs[n - 1], json!({"type": "done"}));
    assert_eq!(
        evs.iter().filter(|e| e["type"] == "error").count(),
        1,
        "exactly one error event"
    );
}

#[tokio::test]
async fn max_steps_exhausted_reports_the_limit() {
    let mut rpc = Rpc::spawn(Opts {
        script: Some(json!([
            {"steps": [{"tool_call": {"id": "c1", "name": "nope", "args": ["{}"]}}]},
            text_turn("never")
        ])),
        args: vec!["--max-steps".into(), "1".into(), "--no-tools".into()],
        ..Opts::default()
    });
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let n = evs.len();
    assert_eq!(
        evs[n - 2],
        json!({"type": "error", "message": "agent model step limit exceeded: 1"})
    );
    assert_eq!(evs.iter().filter(|e| e["type"] == "turn_start").count(), 1);
}

#[tokio::test]
async fn missing_answer_recovers_with_continue() {
    let mut rpc = Rpc::scripted(json!([{"steps": [{"reasoning": "hmm"}]}, text_turn("answer")]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let turn_ends: Vec<&Value> = evs.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(turn_ends[0]["stop"], "continue");
    assert_eq!(turn_ends[1]["stop"], "end");
    let recovery = evs
        .iter()
        .find(|e| e["type"] == "turn_recovery")
        .expect("turn_recovery");
    assert_eq!(
        recovery,
        &json!({"type": "turn_recovery", "reason": "commentary_only", "attempt": 1})
    );
}

#[tokio::test]
async fn line_separators_never_split_a_frame() {
    let text = "a\u{2028}b\u{2029}c";
    let mut rpc = Rpc::scripted(json!([text_turn(text)]));
    rpc.send(json!({"type": "prompt", "message": format!("q\u{2028}{text}")}))
        .await;
    let frames = rpc.until_type("done").await;
    let delta = frames
        .iter()
        .find(|f| f["type"] == "text_delta")
        .expect("text_delta");
    assert_eq!(delta["delta"], text);
    assert_eq!(frames[1]["content"][0]["text"], format!("q\u{2028}{text}"));
    for raw in &rpc.raw {
        assert!(!raw.contains('\u{2028}') && !raw.contains('\u{2029}'));
    }
}

#[tokio::test]
async fn images_are_reported_as_byte_counts() {
    let png = [0x89u8, b'P', b'N', b'G', 1, 2, 3, 4, 5, 6, 7];
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    let mut rpc = Rpc::scripted(json!([text_turn("a picture")]));
    rpc.send(
        json!({"id": "i", "type": "prompt", "message": "what is this",
                    "images": [{"mime_type": "image/png", "data": data}]}),
    )
    .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(frames[0]["data"]["started"], true);
    assert_eq!(
        frames[1]["content"],
        json!([{"type": "text", "text": "what is this"},
               {"type": "image", "mime_type": "image/png", "bytes": png.len()}])
    );
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    assert_eq!(
        messages["data"]["messages"][0]["content"][1],
        json!({"type": "image", "mime_type": "image/png", "bytes": png.len()})
    );
    for raw in &rpc.raw {
        assert!(!raw.contains(&data), "base64 echoed: {raw}");
    }

    // An image alone is a valid prompt.
    let mut rpc = Rpc::scripted(json!([text_turn("ok")]));
    rpc.send(json!({"type": "prompt", "images": [{"mime_type": "image/jpeg", "data": "AAEC"}]}))
        .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        frames[1]["content"],
        json!([{"type": "image", "mime_type": "image/jpeg", "bytes": 3}])
    );
}

#[tokio::test]
async fn two_prompts_queue_in_order() {
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"text": "first"}, {"delay_ms": 300}, {"text": " answer"}]},
        text_turn("second answer")
    ]));
    rpc.send(json!({"id": "1", "type": "prompt", "message": "one"}))
        .await;
    rpc.send(json!({"id": "2", "type": "prompt", "message": "two"}))
        .await;
    let mut frames = rpc.until_type("done").await;
    frames.extend(rpc.until_type("done").await);
    // Both responses, in order (p2's when its turn starts, see the next test).
    let responses: Vec<&Value> = frames.iter().filter(|f| f["type"] == "response").collect();
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["id"], "1");
    assert_eq!(responses[1]["id"], "2");
    assert_eq!(responses[1]["data"]["started"], true);
    // The events of p1 all come before those of p2.
    let evs = events(&frames);
    let users: Vec<usize> = evs
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "user_message")
        .map(|(i, _)| i)
        .collect();
    let dones: Vec<usize> = evs
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "done")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(users.len(), 2);
    assert_eq!(dones.len(), 2);
    assert!(users[0] < dones[0] && dones[0] < users[1] && users[1] < dones[1]);
    assert_eq!(evs[users[0]]["content"][0]["text"], "one");
    assert_eq!(evs[users[1]]["content"][0]["text"], "two");
    let text: String = evs[..dones[0]]
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "first answer");
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(state["data"]["message_count"], 4);
    assert_eq!(state["data"]["busy"], false);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
}

/// zut-rpc-behaviour.md §1.4: a queued `prompt` or `compact` gets its `{"started":true}`
/// when its turn starts, after the previous job's `done`, not when it is read.
#[tokio::test]
async fn a_queued_job_is_answered_started_when_its_turn_starts() {
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"text": "first"}, {"delay_ms": 300}, {"text": " answer"}]},
        text_turn("second answer"),
        text_turn("the summary")
    ]));
    rpc.send(json!({"id": "1", "type": "prompt", "message": "one"}))
        .await;
    rpc.send(json!({"id": "2", "type": "prompt", "message": "two"}))
        .await;
    rpc.send(json!({"id": "c", "type": "compact"})).await;
    // Commands read while the first turn runs are still answered at once.
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    let mut frames = rpc.until_type("done").await;
    frames.extend(rpc.until_type("done").await);
    frames.extend(rpc.until_type("done").await);
    let at = |pred: &dyn Fn(&Value) -> bool| -> Vec<usize> {
        frames
            .iter()
            .enumerate()
            .filter(|(_, f)| pred(f))
            .map(|(i, _)| i)
            .collect()
    };
    let started = |id: &'static str| {
        move |f: &Value| f["type"] == "response" && f["id"] == id && f["data"]["started"] == true
    };
    let (r1, r2, rc) = (at(&started("1")), at(&started("2")), at(&started("c")));
    let dones = at(&|f: &Value| f["type"] == "done");
    let users = at(&|f: &Value| f["type"] == "user_message");
    assert_eq!((r1.len(), r2.len(), rc.len(), dones.len()), (1, 1, 1, 3));
    // resp(1) … done, resp(2) … done, resp(c) … done.
    assert!(r1[0] < users[0] && users[0] < dones[0], "{frames:#?}");
    assert!(
        dones[0] < r2[0],
        "p2 answered before p1's done: {frames:#?}"
    );
    assert!(r2[0] < users[1] && users[1] < dones[1], "{frames:#?}");
    assert!(
        dones[1] < rc[0],
        "compact answered before p2's done: {frames:#?}"
    );
    assert!(rc[0] < dones[2]);
    // Its own end (two exchanges are too few to compact: an error), then its done.
    assert!(frames[rc[0]..dones[2]]
        .iter()
        .any(|f| f["type"] == "compact_done" || f["type"] == "error"));
    // get_state was answered during the first turn, busy.
    let state = at(&|f: &Value| f["id"] == "s");
    assert_eq!(state.len(), 1);
    assert!(state[0] < dones[0], "answered while the first turn ran");
    assert_eq!(frames[state[0]]["data"]["busy"], true);
}

/// A turn that streams one chunk, then stalls long enough that only an abort ends it soon.
fn stalling_turn() -> Value {
    json!({"steps": [{"text": "partial"}, {"delay_ms": 60000}, {"text": " never"}]})
}

#[tokio::test]
async fn state_queries_are_answered_mid_turn() {
    let mut rpc = Rpc::scripted(json!([stalling_turn()]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "slow"}))
        .await;
    rpc.until_type("text_delta").await;
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(state["data"]["busy"], true);
    assert_eq!(state["data"]["message_count"], 1);
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    assert_eq!(messages["data"]["messages"][0]["role"], "user");
    let ping = rpc.call(json!({"type": "ping"}), "pi").await;
    assert_eq!(ping["data"]["pong"], true);
    let models = rpc.call(json!({"type": "get_models"}), "gm").await;
    assert_eq!(models["success"], true);

    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let frames = rpc.until_type("done").await;
    assert!(frames
        .iter()
        .any(|f| f["type"] == "response" && f["id"] == "a"));
    let state = rpc.call(json!({"type": "get_state"}), "s2").await;
    assert_eq!(state["data"]["busy"], false);
}

#[tokio::test]
async fn abort_mid_stream_ends_the_turn_aborted_then_done() {
    let mut rpc = Rpc::scripted(json!([stalling_turn(), text_turn("after abort")]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "slow"}))
        .await;
    rpc.until_type("text_delta").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let frames = rpc.until_type("done").await;
    let abort = frames
        .iter()
        .find(|f| f["type"] == "response")
        .expect("abort response");
    assert_eq!(
        abort,
        &json!({"type": "response", "id": "a", "command": "abort", "success": true})
    );
    let evs = events(&frames);
    let n = evs.len();
    assert_eq!(evs[n - 1], json!({"type": "done"}));
    assert_eq!(evs[n - 2]["type"], "turn_end");
    assert_eq!(evs[n - 2]["stop"], "aborted");
    assert!(
        !evs.iter().any(|e| e["type"] == "error"),
        "no error event on abort"
    );

    // The transcript keeps the user message and the partial text; the next prompt works.
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list[0]["role"], "user");
    assert_eq!(
        list[1]["content"],
        json!([{"type": "text", "text": "partial"}])
    );
    rpc.send(json!({"type": "prompt", "message": "again"}))
        .await;
    let frames = rpc.until_type("done").await;
    assert!(frames
        .iter()
        .any(|f| f["type"] == "turn_end" && f["stop"] == "end"));
}

#[tokio::test]
async fn abort_cancels_only_the_active_prompt() {
    let mut rpc = Rpc::scripted(json!([stalling_turn(), text_turn("queued ran")]));
    rpc.send(json!({"id": "1", "type": "prompt", "message": "slow"}))
        .await;
    rpc.send(json!({"id": "2", "type": "prompt", "message": "queued"}))
        .await;
    rpc.until_type("text_delta").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let mut frames = rpc.until_type("done").await;
    frames.extend(rpc.until_type("done").await);
    let evs = events(&frames);
    let stops: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "turn_end")
        .map(|e| e["stop"].as_str().unwrap())
        .collect();
    assert_eq!(stops, ["aborted", "end"]);
    assert!(evs
        .iter()
        .any(|e| e["type"] == "text_delta" && e["delta"] == "queued ran"));
}

#[tokio::test]
async fn stdin_eof_lets_the_prompt_finish_then_exits_zero() {
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"text": "one"}, {"delay_ms": 200}, {"text": " two"}]},
        text_turn("queued too")
    ]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    rpc.send(json!({"id": "q", "type": "prompt", "message": "and this"}))
        .await;
    rpc.close();
    let frames = rpc.rest().await;
    let evs = events(&frames);
    assert_eq!(evs.iter().filter(|e| e["type"] == "done").count(), 2);
    assert_eq!(evs.last().unwrap(), &json!({"type": "done"}));
    assert!(evs
        .iter()
        .any(|e| e["type"] == "text_delta" && e["delta"] == "queued too"));
    assert!(rpc.exit().await.success());
}

// ---------------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn compact_summarises_and_keeps_the_tail() {
    let mut rpc = Rpc::scripted(json!([
        text_turn("a1"),
        text_turn("a2"),
        text_turn("a3"),
        {"steps": [{"text": "  the summary  "}, {"usage": {"input": 40, "output": 5}}]},
    ]));
    for i in 0..3 {
        rpc.send(json!({"type": "prompt", "message": format!("q{i}")}))
            .await;
        rpc.until_type("done").await;
    }
    rpc.send(json!({"id": "c", "type": "compact"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        types(&frames),
        [
            "response",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "usage",
            "compact_done",
            "done"
        ]
    );
    assert_eq!(
        frames[0],
        json!({"type": "response", "id": "c", "command": "compact", "success": true, "data": {"started": true}})
    );
    assert_eq!(
        frames[6],
        json!({"type": "compact_done", "summary": "the summary"})
    );
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 5);
    assert_eq!(list[0]["role"], "user");
    assert_eq!(
        list[0]["content"][0]["text"],
        "## Context Summary (compacted)\n\nthe summary"
    );
    assert_eq!(list[1]["content"][0]["text"], "q1");
}

#[tokio::test]
async fn compact_errors_are_error_events() {
    let mut rpc = Rpc::scripted(json!([text_turn("a1")]));
    rpc.send(json!({"id": "c", "type": "compact"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        frames,
        vec![
            json!({"type": "response", "id": "c", "command": "compact", "success": true, "data": {"started": true}}),
            json!({"type": "error", "message": "nothing to compact"}),
            json!({"type": "done"}),
        ]
    );
    rpc.send(json!({"type": "prompt", "message": "q"})).await;
    rpc.until_type("done").await;
    rpc.send(json!({"type": "compact"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        frames[1],
        json!({"type": "error", "message": "nothing to compact: keep-tail covers the whole transcript"})
    );
}

// ---------------------------------------------------------------------------------------------
// Startup
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn startup_failure_exits_one_with_empty_stdout() {
    for args in [
        vec!["--provider", "gemini"],
        vec!["--reasoning", "extreme"],
        vec!["--tools", "no_such_tool"],
    ] {
        let mut rpc = Rpc::spawn(Opts {
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Opts::default()
        });
        assert!(rpc.rest().await.is_empty(), "{args:?}");
        assert_eq!(rpc.exit().await.code(), Some(1), "{args:?}");
        let stderr = rpc.stderr().await;
        assert!(stderr.starts_with("adapter-rpc: "), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn the_default_provider_is_the_offline_demo() {
    let mut rpc = Rpc::spawn(Opts::default());
    rpc.send(json!({"type": "prompt", "message": "what is here?"}))
        .await;
    let frames = rpc.until_type("done").await;
    assert!(frames.iter().any(|f| f["type"] == "tool_call"));
    assert!(frames
        .iter()
        .any(|f| f["type"] == "turn_end" && f["stop"] == "end"));
}

// ---------------------------------------------------------------------------------------------
// Tools (the real agent-tools set)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_events_include_progress_and_plan_update() {
    let plan_args = json!({"explanation": "two steps", "plan": [
        {"step": "look around", "status": "in_progress"},
        {"step": "report", "status": "pending"}
    ]})
    .to_string();
    let bash_args = json!({"command": "echo hello-from-bash"}).to_string();
    let mut rpc = Rpc::scripted(json!([
        {"steps": [
            {"tool_call": {"id": "call_plan", "name": "plan", "args": [plan_args]}},
            {"tool_call": {"id": "call_bash", "name": "bash", "args": [bash_args]}}
        ]},
        text_turn("all done")
    ]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "work"}))
        .await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let kinds = types(&evs);
    let turn_end = kinds.iter().position(|k| k == "turn_end").unwrap();
    let second_turn = kinds.iter().rposition(|k| k == "turn_start").unwrap();
    assert_eq!(
        evs[turn_end],
        json!({"type": "turn_end", "stop": "tool_use"})
    );
    // tool_call events come after assistant_message and before turn_end.
    assert_eq!(
        kinds[turn_end - 3..turn_end],
        ["assistant_message", "tool_call", "tool_call"]
    );
    assert_eq!(
        evs[turn_end - 2],
        json!({"type": "tool_call", "id": "call_plan", "name": "plan",
               "args": serde_json::from_str::<Value>(&plan_args).unwrap()})
    );
    let tools: Vec<Value> = evs[turn_end + 1..second_turn].to_vec();
    let tool_kinds = types(&tools);
    assert_eq!(
        tool_kinds[..3],
        ["tool_execution_started", "plan_update", "tool_result"]
    );
    assert_eq!(
        tools[0],
        json!({"type": "tool_execution_started", "id": "call_plan", "name": "plan"})
    );
    assert_eq!(
        tools[1],
        json!({"type": "plan_update", "id": "call_plan", "explanation": "two steps", "plan": [
            {"step": "look around", "status": "in_progress"},
            {"step": "report", "status": "pending"}
        ]})
    );
    assert_eq!(tools[2]["id"], "call_plan");
    assert_eq!(tools[2]["is_error"], false);
    assert_eq!(
        tools[3],
        json!({"type": "tool_execution_started", "id": "call_bash", "name": "bash"})
    );
    let progress: Vec<&Value> = tools
        .iter()
        .filter(|t| t["type"] == "tool_progress")
        .collect();
    assert!(
        !progress.is_empty(),
        "bash reports progress: {tool_kinds:?}"
    );
    assert!(progress.iter().all(|p| p["id"] == "call_bash"));
    assert!(progress
        .iter()
        .any(|p| p["text"].as_str().unwrap().contains("hello-from-bash")));
    let result = tools.last().unwrap();
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["id"], "call_bash");
    assert_eq!(result["is_error"], false);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("hello-from-bash"));
    assert!(
        !kinds.iter().any(|k| k.starts_with("permission")),
        "permission events are not part of zut RPC"
    );

    // The transcript holds the tool results as a role "tool" message.
    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[2]["role"], "tool");
    assert_eq!(list[2]["content"][0]["type"], "tool_result");
    assert_eq!(list[2]["content"][0]["call_id"], "call_plan");
    assert_eq!(list[2]["content"][1]["call_id"], "call_bash");
    assert_eq!(list[1]["content"][0]["type"], "tool_call");
}

#[tokio::test]
async fn unknown_tools_get_an_error_result_without_execution() {
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"tool_call": {"id": "c1", "name": "teleport", "args": ["{}"]}}]},
        text_turn("ok")
    ]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    assert!(!evs.iter().any(|e| e["type"] == "tool_execution_started"));
    let result = evs
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(result["is_error"], true);
}

#[tokio::test]
async fn abort_mid_tool_ends_with_an_error_result_then_done() {
    let bash_args = json!({"command": "echo started; sleep 60"}).to_string();
    let mut rpc = Rpc::scripted(json!([
        {"steps": [{"tool_call": {"id": "c1", "name": "bash", "args": [bash_args]}}]},
        text_turn("never")
    ]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    rpc.until_type("tool_execution_started").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(frames[0]["id"], "a", "the abort response comes first");
    let evs = events(&frames);
    let result = evs
        .iter()
        .position(|e| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(evs[result]["id"], "c1");
    assert_eq!(evs[result]["is_error"], true);
    assert_eq!(
        types(&evs[result + 1..]),
        ["done"],
        "no turn_end after an aborted tool"
    );
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(state["data"]["busy"], false);
}

// ---------------------------------------------------------------------------------------------
// A local OpenAI-compatible HTTP provider
// ---------------------------------------------------------------------------------------------

/// A Chat Completions answer "Hello" in two deltas, with usage (5 of 20 prompt tokens cached).
fn openai_sse() -> Sse {
    sse::chat::Stream::new()
        .delta("Hel")
        .delta("lo")
        .finish("stop")
        .usage(20, 2, 5)
        .done()
}

/// The binary on the OpenAI provider against a mock model answering every request with
/// [`openai_sse`].
fn http_rpc(extra: &[&str]) -> (Rpc, MockModel) {
    let server = MockModel::start([Reply::sse(openai_sse())]);
    let base = server.v1();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("AGENTS.md"), "MARKER-agents-md-rules").expect("write");
    let mut args: Vec<String> = [
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--api-key",
        "sk-test-key",
        "--model",
        "gpt-test",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let rpc = Rpc::spawn(Opts {
        args,
        dir: Some(dir),
        env: vec![
            ("OPENAI_API_KEY", "unused"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9"),
        ],
        ..Opts::default()
    });
    (rpc, server)
}

#[tokio::test]
async fn full_prompt_on_a_local_openai_compatible_server() {
    let (mut rpc, server) = http_rpc(&[]);
    let hello = rpc.call(json!({"type": "hello"}), "h").await;
    assert_eq!(hello["data"]["provider"], "openai");
    assert_eq!(hello["data"]["model"], "gpt-test");
    rpc.send(json!({"id": "1", "type": "prompt", "message": "say hello"}))
        .await;
    let frames = rpc.until_type("done").await;
    assert_eq!(
        types(&frames),
        [
            "response",
            "user_message",
            "turn_start",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "text_delta",
            "usage",
            "assistant_message",
            "turn_end",
            "done"
        ]
    );
    assert_eq!(frames[3]["scope"], "agent");
    assert_eq!(frames[3]["provider"], "openai");
    assert_eq!(frames[3]["model"], "gpt-test");
    assert_eq!(frames[4]["scope"], "provider");
    let usage = &frames[8];
    assert_eq!(
        usage["input"].as_u64().unwrap()
            + usage["cache_read"].as_u64().unwrap()
            + usage["cache_write"].as_u64().unwrap(),
        20
    );
    assert_eq!(usage["cache_read"], 5);
    assert_eq!(usage["cache_measured_prompt"], 20);
    assert_eq!(usage["cache_measured_read"], 5);
    assert_eq!(usage["output"], 2);
    assert_eq!(
        frames[9]["content"],
        json!([{"type": "text", "text": "Hello"}])
    );
    assert_eq!(frames[10], json!({"type": "turn_end", "stop": "end"}));

    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("request");
    let (head, body) = (requests[0].head(), requests[0].json());
    assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("authorization: bearer sk-test-key"));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    let system = body["messages"][0].to_string();
    assert!(
        system.contains("MARKER-agents-md-rules"),
        "AGENTS.md is in the system prompt: {system}"
    );
    // The key never reaches stdout.
    assert!(rpc.raw.iter().all(|l| !l.contains("sk-test-key")));
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn no_context_files_keeps_agents_md_out_of_the_prompt() {
    let (mut rpc, server) = http_rpc(&[
        "--no-context-files",
        "--append-system-prompt",
        "EXTRA-SECTION",
    ]);
    rpc.send(json!({"type": "prompt", "message": "hi"})).await;
    rpc.until_type("done").await;
    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("request");
    let body = requests[0].json();
    let all = body["messages"].to_string();
    assert!(!all.contains("MARKER-agents-md-rules"), "{all}");
    assert!(all.contains("EXTRA-SECTION"), "{all}");
}

#[tokio::test]
async fn a_link_named_zut_works_as_zut_rpc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("zut");
    std::os::unix::fs::symlink(common::bin(), &link).expect("symlink");
    let mut child = tokio::process::Command::new(&link)
        .args(["rpc", "--provider", "scripted"])
        .current_dir(dir.path())
        .env_remove("ZUTCORE_RPC_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn zut");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"{\"id\":\"1\",\"type\":\"ping\"}\n")
            .await
            .expect("write");
    }
    let output = tokio::time::timeout(common::WAIT, child.wait_with_output())
        .await
        .expect("zut exited")
        .expect("output");
    assert!(output.status.success());
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(line["data"]["pong"], true);

    let failed = tokio::process::Command::new(&link)
        .args(["rpc", "--provider", "nope"])
        .stdin(std::process::Stdio::null())
        .output();
    let failed = tokio::time::timeout(common::WAIT, failed)
        .await
        .expect("exit")
        .expect("output");
    assert_eq!(failed.status.code(), Some(1));
    assert!(failed.stdout.is_empty());
    assert!(String::from_utf8_lossy(&failed.stderr).starts_with("zut: "));
}
