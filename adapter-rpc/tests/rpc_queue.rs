//! End-to-end tests of the turn queue, abort and compaction: spawn `adapter-rpc rpc` and
//! drive it over pipes.

mod common;

use common::{events, text_turn, types, Rpc};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// The queue and abort
// ---------------------------------------------------------------------------------------------

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
