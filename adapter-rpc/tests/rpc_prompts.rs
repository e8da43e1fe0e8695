//! End-to-end tests of prompts and start-up: spawn `adapter-rpc rpc` and drive it over
//! pipes.

mod common;

use base64::Engine;
use common::{events, text_turn, Opts, Rpc};
use serde_json::{json, Value};

fn demo_turns() -> Value {
    json!([text_turn("hello")])
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
    let frames = common::say_hello(&mut rpc).await;
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
    for raw in &rpc.pipe.raw {
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
    for raw in &rpc.pipe.raw {
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
