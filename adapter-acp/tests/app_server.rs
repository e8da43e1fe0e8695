//! End-to-end tests of `adapter-acp app-server --stdio` over pipes: a tool turn in the
//! bridge's call order, permission requests, a stop mid-turn and the protocol's error codes
//! (the other end-to-end tests are in `app_server_sessions.rs`).

mod common;

use common::{assert_consecutive, message_text, text, types, usage, Env};
use serde_json::{json, Value};

fn write_call(id: &str, path: &str, content: &str) -> Value {
    let args = json!({"path": path, "content": content}).to_string();
    json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
}

/// Asserts that `err` has `code` and a message containing `words`.
fn assert_error(err: &Value, code: i64, words: &str) {
    assert_eq!(err["code"], code, "{err}");
    assert!(
        err["message"].as_str().unwrap_or("").contains(words),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_call_order_runs_a_tool_turn() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [{"reasoning": "I should write it."}, text("Writing the file."),
                   write_call("call_w", "a.txt", "hello"), usage(100, 10)]},
        {"steps": [text("Done: "), text("wrote a.txt."), usage(120, 5)]}
    ]));
    // The bridge's order: create → read → messages → subscribe → send → events → messages/read.
    let created = c
        .call(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo"}),
        )
        .await;
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    assert!(sid.starts_with("sess_"), "{sid}");
    assert_eq!(created["session"]["title"], "");
    assert!(created["session"]["traceId"].is_string());

    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["settings"]["mode"]["current"], "yolo");
    assert_eq!(
        read["settings"]["model"]["current"]["modelId"],
        "scripted-test"
    );
    assert_eq!(read["settings"]["thoughtLevel"]["current"], "medium");
    assert_eq!(read["projection"]["status"], "idle");
    assert_eq!(read["projection"]["turnCount"], 0);
    assert_eq!(read["runtime"]["eventSeq"], 0);

    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    assert_eq!(messages["messages"], json!([]));

    let sub = c
        .call(
            "session/subscribe",
            json!({"sessionId": sid, "deliveryKind": "desktop-continuous",
                   "includeSnapshot": false, "afterSeq": 0}),
        )
        .await;
    assert_eq!(sub["eventSeq"], 0);
    assert_eq!(sub["events"], json!([]));

    let sent = c
        .call(
            "session/send",
            json!({"sessionId": sid, "content": "write a.txt please"}),
        )
        .await;
    assert_eq!(sent["accepted"], true);
    assert_eq!(sent["sessionId"], sid.as_str());

    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_consecutive(&events);
    assert_eq!(events[0]["seq"], 1);
    for e in &events {
        assert_eq!(e["sessionId"], sid.as_str());
        assert!(e["eventId"]
            .as_str()
            .is_some_and(|id| id.starts_with("evt_")));
        assert!(e["timestamp"].as_i64().is_some_and(|t| t > 0));
    }
    let kinds = types(&events);
    let expected_order = [
        "turn.started",
        "model.streaming:reasoning_delta",
        "model.streaming:text_delta",
        "model.streaming:tool_call",
        "tool.updated:scheduled",
        "tool.updated:started",
        "tool.updated:result",
        "tool.updated:batch",
        "turn.completed",
    ];
    let mut at = 0;
    for kind in &kinds {
        if at < expected_order.len() && kind == expected_order[at] {
            at += 1;
        }
    }
    assert_eq!(at, expected_order.len(), "order wrong: {kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "turn.started").count(), 1);
    assert_eq!(kinds.iter().filter(|k| *k == "turn.completed").count(), 1);
    assert!(kinds.contains(&"session.updated".to_string()), "{kinds:?}");

    let call = events
        .iter()
        .find(|e| e["payload"]["kind"] == "tool_call")
        .expect("tool_call");
    assert_eq!(call["payload"]["toolName"], "write_file");
    assert_eq!(call["payload"]["toolCallId"], "call_w");
    assert_eq!(call["payload"]["input"]["path"], "a.txt");
    let result = events
        .iter()
        .find(|e| e["payload"]["kind"] == "result")
        .expect("result");
    assert_eq!(result["payload"]["result"]["success"], true);
    let done = events.last().expect("last");
    assert_eq!(done["payload"]["resultType"], "success");
    assert_eq!(done["payload"]["response"], "Done: wrote a.txt.");
    assert_eq!(done["payload"]["toolCallCount"], 1);
    assert_eq!(done["payload"]["usage"]["totalTokens"], 235);
    let started = &events[0];
    assert_eq!(started["payload"]["input"], "write a.txt please");
    assert_eq!(started["payload"]["turnNumber"], 1);
    assert_eq!(started["turnId"], done["turnId"]);
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("a.txt")).expect("file written"),
        "hello"
    );

    // After turn.completed: messages hold the final text, read says idle.
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    let messages = messages["messages"].as_array().expect("messages").clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0]["info"]["role"], "user");
    assert_eq!(message_text(&messages[0]), "write a.txt please");
    assert_eq!(messages[1]["info"]["role"], "assistant");
    assert_eq!(
        messages[1]["info"]["parentMessageId"],
        messages[0]["info"]["messageId"]
    );
    let parts = messages[1]["parts"].as_array().expect("parts");
    assert_eq!(parts[0]["type"], "reasoning");
    assert_eq!(parts[1]["type"], "text");
    assert_eq!(parts[2]["type"], "tool");
    assert_eq!(parts[2]["callId"], "call_w");
    assert_eq!(parts[2]["tool"], "write_file");
    assert_eq!(parts[2]["state"]["status"], "completed");
    assert_eq!(parts[2]["state"]["input"]["content"], "hello");
    assert_eq!(message_text(&messages[2]), "Done: wrote a.txt.");

    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    assert_eq!(read["projection"]["turnCount"], 1);
    assert_eq!(read["projection"]["totalTokenCount"], 235);
    assert_eq!(read["projection"]["contextUsed"], 125);
    assert_eq!(read["session"]["title"], "write a.txt please");
    assert_eq!(read["runtime"]["eventSeq"], done["seq"]);
    // messageLimit tail-limits the snapshot's messages.
    let read = c
        .call("session/read", json!({"sessionId": sid, "messageLimit": 1}))
        .await;
    assert_eq!(read["messages"].as_array().map(Vec::len), Some(1));
    // afterMessageId slices the list.
    let first = messages[0]["info"]["messageId"].clone();
    let after = c
        .call(
            "session/messages",
            json!({"sessionId": sid, "afterMessageId": first}),
        )
        .await;
    assert_eq!(after["messages"].as_array().map(Vec::len), Some(2));
    assert!(c.shutdown().await, "clean exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_requests_answered_allow_deny_and_always() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [write_call("c1", "allowed.txt", "1")]},
        {"steps": [text("first done")]},
        {"steps": [write_call("c2", "denied.txt", "2")]},
        {"steps": [text("second done")]},
        {"steps": [write_call("c3", "always.txt", "3")]},
        {"steps": [write_call("c4", "again.txt", "4")]},
        {"steps": [text("third done")]}
    ]));
    let sid = c.create(&ws, "build").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;

    // 1. allow once: reply with the option's exact response.
    c.call("session/send", json!({"sessionId": sid, "content": "one"}))
        .await;
    let request = c.server_request("interaction/requestPermission").await;
    assert_eq!(request["id"], "server-1");
    let params = &request["params"];
    assert_eq!(params["sessionId"], sid.as_str());
    assert_eq!(params["toolCallId"], "c1");
    assert_eq!(params["toolName"], "write_file");
    assert_eq!(params["input"]["path"], "allowed.txt");
    assert!(params["requestId"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(params["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(
        ["low", "medium", "high", "critical"].contains(&params["riskLevel"].as_str().unwrap_or(""))
    );
    assert!(params["turnId"]
        .as_str()
        .is_some_and(|t| t.starts_with("turn_")));
    let options = params["options"].as_array().expect("options");
    let option = |id: &str| {
        options
            .iter()
            .find(|o| o["optionId"] == id)
            .unwrap_or_else(|| panic!("option {id} in {options:?}"))["response"]
            .clone()
    };
    assert_eq!(option("deny")["decision"], "deny");
    // While the request is pending, the projection lists it.
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "running");
    assert_eq!(
        read["projection"]["pendingPermissions"],
        json!([params["requestId"].clone()])
    );
    c.send(json!({"id": "server-1", "result": option("allow_once")}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    assert!(types(&events).contains(&"tool.updated:result".to_string()));
    assert_eq!(
        events.last().expect("last")["payload"]["response"],
        "first done"
    );
    assert!(env.workspace().join("allowed.txt").exists());

    // 2. deny.
    c.call("session/send", json!({"sessionId": sid, "content": "two"}))
        .await;
    let request = c.server_request("interaction/requestPermission").await;
    assert_eq!(request["id"], "server-2");
    c.send(json!({"id": "server-2", "result": option("deny")}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    let error = events
        .iter()
        .find(|e| e["payload"]["kind"] == "error")
        .expect("tool error");
    assert_eq!(error["payload"]["toolCallId"], "c2");
    assert_eq!(error["payload"]["error"]["type"], "permission_denied");
    assert!(!env.workspace().join("denied.txt").exists());
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    let tool_part = messages["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .find(|p| p["callId"] == "c2")
        .expect("tool part");
    assert_eq!(tool_part["state"]["status"], "error");

    // 3. always-allow: the second write of the tool is not asked about.
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "three"}),
    )
    .await;
    let request = c.server_request("interaction/requestPermission").await;
    assert_eq!(request["id"], "server-3");
    c.send(json!({"id": "server-3", "result": option("allow_always")}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["payload"]["kind"] == "result")
        .collect();
    assert_eq!(results.len(), 2, "{:?}", types(&events));
    assert!(env.workspace().join("always.txt").exists());
    assert!(env.workspace().join("again.txt").exists());
    // No fourth permission request was sent.
    assert!(
        !c.raw.iter().any(|l| l.contains("\"server-4\"")),
        "unexpected fourth request"
    );
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_turn_completes_cancelled_and_second_send_is_refused() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [text("Thinking..."), {"delay_ms": 60000}, text("never")]},
        {"steps": [write_call("w", "x.txt", "x")]},
        {"steps": [text("unreached")]}
    ]));
    let sid = c.create(&ws, "yolo").await;
    // Stop while idle is a harmless no-op, as a request and as a notification.
    let idle_stop = c.call("session/stop", json!({"sessionId": sid})).await;
    assert_eq!(idle_stop["stopped"], false);
    c.notify("session/stop", json!({"sessionId": sid})).await;

    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": "slow"}))
        .await;
    let first = c.events_until(&sid, &["model.streaming"]).await;
    assert_eq!(
        first.last().expect("delta")["payload"]["delta"],
        "Thinking..."
    );

    // A second send during the turn → -32010 "prompt is running".
    let err = c
        .call_err(
            "session/send",
            json!({"sessionId": sid, "content": "again"}),
        )
        .await;
    assert_error(&err, -32010, "prompt is running");
    // goal show mid-turn reports the prompt lock.
    let err = c
        .call_err("session/goal", json!({"sessionId": sid, "action": "show"}))
        .await;
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("prompt is running"),
        "{err}"
    );

    // Stop as a notification (as the bridge does).
    c.notify("session/stop", json!({"sessionId": sid})).await;
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let done = events.last().expect("terminal");
    assert_eq!(done["type"], "turn.completed");
    assert_eq!(done["payload"]["resultType"], "cancelled");
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    assert!(
        messages["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .any(|m| message_text(m) == "Thinking..."),
        "partial text kept: {messages}"
    );

    // Stop during a pending permission (mode build) cancels the interaction; the stop
    // request is answered once the turn is over.
    c.call(
        "session/setMode",
        json!({"sessionId": sid, "mode": "build"}),
    )
    .await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "write"}),
    )
    .await;
    let request = c.server_request("interaction/requestPermission").await;
    let stopped = c.call("session/stop", json!({"sessionId": sid})).await;
    assert_eq!(stopped["stopped"], true);
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let done = events.last().expect("terminal");
    assert_eq!(done["payload"]["resultType"], "cancelled", "{done}");
    assert!(!env.workspace().join("x.txt").exists());
    // A late answer to the cancelled request is ignored.
    c.send(json!({"id": request["id"].clone(), "result": {"decision": "allow"}}))
        .await;
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    assert_eq!(read["projection"]["pendingPermissions"], json!([]));
    assert!(!env.workspace().join("x.txt").exists());
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_errors_use_the_documented_codes_and_texts() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([]));
    // jsonrpc → -32600 with id "invalid-message".
    c.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"session/list"}"#)
        .await;
    let reply = c.reply(json!("invalid-message")).await;
    assert_eq!(reply["error"]["code"], -32600);
    // Unparseable line → an error, not a hang.
    c.send_raw("{not json").await;
    let reply = c.reply(json!("invalid-message")).await;
    assert_eq!(reply["error"]["code"], -32700);
    // Unknown method → -32601; string ids are echoed as strings.
    c.send(json!({"id": "abc", "method": "nope/nothing", "params": {}}))
        .await;
    let reply = c.reply(json!("abc")).await;
    assert_eq!(reply["error"]["code"], -32601);
    assert_eq!(reply["error"]["message"], "Method not found: nope/nothing");
    // Invalid params → -32602 naming the path.
    let err = c
        .call_err("session/create", json!({"workspace": {"workspacePath": 7}}))
        .await;
    assert_error(&err, -32602, "workspace.workspacePath");
    let err = c
        .call_err(
            "session/create",
            json!({"workspace": {"workspacePath": ws}, "mode": "turbo"}),
        )
        .await;
    assert_error(&err, -32602, "mode");
    let err = c.call_err("session/read", json!({})).await;
    assert_error(&err, -32602, "sessionId");
    // Sessions not created or resumed in this process → -32004 with the exact texts.
    for method in ["session/read", "session/messages", "session/subscribe"] {
        let err = c.call_err(method, json!({"sessionId": "sess_nope"})).await;
        assert_eq!(err["code"], -32004);
        assert_eq!(err["message"], "Session is not active: sess_nope");
    }
    let err = c
        .call_err(
            "session/send",
            json!({"sessionId": "sess_nope", "content": "hi"}),
        )
        .await;
    assert_eq!(err["message"], "Session is not active: sess_nope");
    let err = c
        .call_err("session/resume", json!({"sessionId": "sess_nope"}))
        .await;
    assert_eq!(err["code"], -32004);
    assert_eq!(err["message"], "Session not found: sess_nope");
    // list works without any session.
    let list = c.call("session/list", json!({})).await;
    assert_eq!(list["sessions"], json!([]));
    // A provider failure ends the turn with turn.failed.
    let sid = c.create(&ws, "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": "hi"}))
        .await;
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    let failed = events.last().expect("terminal");
    assert_eq!(failed["type"], "turn.failed");
    assert_eq!(failed["payload"]["error"]["code"], "provider");
    assert!(failed["payload"]["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    assert!(c.shutdown().await);
}
