//! End-to-end tests of `adapter-acp app-server --stdio` over pipes.

mod common;

use common::{assert_consecutive, types, Env};
use serde_json::{json, Value};

fn write_call(id: &str, path: &str, content: &str) -> Value {
    let args = json!({"path": path, "content": content}).to_string();
    json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
}

fn text(t: &str) -> Value {
    json!({"text": t})
}

fn usage(input: u64, output: u64) -> Value {
    json!({"usage": {"input": input, "output": output}})
}

fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap_or_default())
        .collect()
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
    assert_eq!(err["code"], -32010);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("prompt is running"),
        "{err}"
    );
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
    assert_eq!(err["code"], -32602);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("workspace.workspacePath"),
        "{err}"
    );
    let err = c
        .call_err(
            "session/create",
            json!({"workspace": {"workspacePath": ws}, "mode": "turbo"}),
        )
        .await;
    assert_eq!(err["code"], -32602);
    assert!(
        err["message"].as_str().unwrap_or("").contains("mode"),
        "{err}"
    );
    let err = c.call_err("session/read", json!({})).await;
    assert_eq!(err["code"], -32602);
    assert!(
        err["message"].as_str().unwrap_or("").contains("sessionId"),
        "{err}"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_before_subscribing_are_replayed_and_resubscribe_fills_the_gap() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [text("one "), text("two "), text("three"), usage(10, 3)]},
        {"steps": [text("second turn"), usage(20, 2)]}
    ]));
    let sid = c.create(&ws, "yolo").await;
    // Send without subscribing; wait for the turn through session/read? No: through the
    // replay — subscribe with afterSeq 0 returns what happened so far, live events follow.
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "first"}),
    )
    .await;
    let sub = c
        .call(
            "session/subscribe",
            json!({"sessionId": sid, "afterSeq": 0, "includeSnapshot": true}),
        )
        .await;
    let mut all: Vec<Value> = sub["events"].as_array().expect("events").clone();
    assert_eq!(sub["eventSeq"].as_u64(), Some(all.len() as u64));
    assert_eq!(sub["snapshot"]["projection"]["sessionId"], sid.as_str());
    let finished = all.iter().any(|e| e["type"] == "turn.completed");
    if !finished {
        all.extend(c.events_until(&sid, &["turn.completed"]).await);
    }
    assert_eq!(all[0]["seq"], 1);
    assert_eq!(all[0]["type"], "turn.started");
    assert_consecutive(&all);
    let text: String = all
        .iter()
        .filter(|e| e["payload"]["kind"] == "text_delta")
        .map(|e| e["payload"]["delta"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(text, "one two three");

    // A second turn; then resubscribe after a seq in its middle: exactly the missed events.
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "second"}),
    )
    .await;
    let second = c.events_until(&sid, &["turn.completed"]).await;
    assert_eq!(
        second[0]["seq"].as_u64(),
        all.last().and_then(|e| e["seq"].as_u64()).map(|s| s + 1)
    );
    let cut = second[1]["seq"].as_u64().expect("seq");
    let resub = c
        .call(
            "session/subscribe",
            json!({"sessionId": sid, "afterSeq": cut}),
        )
        .await;
    let replay = resub["events"].as_array().expect("events");
    assert_eq!(replay.as_slice(), &second[2..]);
    assert_eq!(resub["eventSeq"], second.last().expect("last")["seq"]);
    // Without afterSeq nothing is replayed.
    let plain = c.call("session/subscribe", json!({"sessionId": sid})).await;
    assert_eq!(plain["events"], json!([]));
    // session/events pulls the log.
    let pulled = c
        .call(
            "session/events",
            json!({"sessionId": sid, "afterSeq": cut, "limit": 2}),
        )
        .await;
    assert_eq!(
        pulled["events"].as_array().expect("events").as_slice(),
        &second[2..4]
    );
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_stream_at_once_without_mixing() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut steps = Vec::new();
    for i in 0..12 {
        steps.push(text(&format!("<{i}>")));
        steps.push(json!({"delay_ms": 5}));
    }
    let mut c = env.spawn(json!([{ "steps": steps }]));
    let a = c.create(&ws, "yolo").await;
    let b = c.create(&ws, "yolo").await;
    assert_ne!(a, b);
    c.call("session/subscribe", json!({"sessionId": a})).await;
    c.call("session/subscribe", json!({"sessionId": b})).await;
    c.call("session/send", json!({"sessionId": a, "content": "A"}))
        .await;
    c.call("session/send", json!({"sessionId": b, "content": "B"}))
        .await;
    let ea = c.events_until(&a, &["turn.completed"]).await;
    let eb = c.events_until(&b, &["turn.completed"]).await;
    let expected: String = (0..12).map(|i| format!("<{i}>")).collect();
    for (sid, events) in [(&a, &ea), (&b, &eb)] {
        assert_eq!(events[0]["seq"], 1);
        assert_consecutive(events);
        assert!(events.iter().all(|e| e["sessionId"] == sid.as_str()));
        let text: String = events
            .iter()
            .filter(|e| e["payload"]["kind"] == "text_delta")
            .map(|e| e["payload"]["delta"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(text, expected);
        assert_eq!(
            types(events)
                .iter()
                .filter(|t| *t == "turn.started")
                .count(),
            1
        );
    }
    let ra = c.call("session/read", json!({"sessionId": a})).await;
    assert_eq!(ra["projection"]["turnCount"], 1);
    assert_eq!(ra["session"]["title"], "A");
    let rb = c.call("session/read", json!({"sessionId": b})).await;
    assert_eq!(rb["session"]["title"], "B");
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_resume_survive_a_restart() {
    let env = Env::new();
    let ws = env.workspace_str();
    let script = json!([{"steps": [text("remembered answer"), usage(5, 2)]}]);
    let mut c = env.spawn(script.clone());
    let sid = c.create(&ws, "plan").await;
    c.call(
        "session/setThoughtLevel",
        json!({"sessionId": sid, "thoughtLevel": "high"}),
    )
    .await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "remember this"}),
    )
    .await;
    c.events_until(&sid, &["turn.completed"]).await;
    assert!(c.shutdown().await);

    let mut c = env.spawn(script);
    let list = c
        .call(
            "session/list",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}}),
        )
        .await;
    let sessions = list["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{list}");
    assert_eq!(sessions[0]["sessionId"], sid.as_str());
    assert_eq!(sessions[0]["title"], "remember this");
    assert_eq!(sessions[0]["workspace"]["workspacePath"], ws.as_str());
    assert_eq!(sessions[0]["mode"], "plan");
    assert!(sessions[0]["updatedAt"].as_i64().is_some_and(|t| t > 0));
    // Another workspace lists nothing.
    let other = c
        .call(
            "session/list",
            json!({"workspace": {"workspacePath": "/elsewhere", "workspaceKey": "/elsewhere"}}),
        )
        .await;
    assert_eq!(other["sessions"], json!([]));
    // Not active until resumed.
    let err = c.call_err("session/read", json!({"sessionId": sid})).await;
    assert_eq!(err["message"], format!("Session is not active: {sid}"));
    let resumed = c
        .call(
            "session/resume",
            json!({"sessionId": sid, "workspace": {"workspacePath": ws, "workspaceKey": ws}}),
        )
        .await;
    assert_eq!(resumed["session"]["sessionId"], sid.as_str());
    assert_eq!(resumed["settings"]["mode"]["current"], "plan");
    assert_eq!(resumed["settings"]["thoughtLevel"]["current"], "high");
    assert_eq!(resumed["projection"]["turnCount"], 1);
    assert_eq!(resumed["projection"]["totalTokenCount"], 7);
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    let messages = messages["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(message_text(&messages[0]), "remember this");
    assert_eq!(message_text(&messages[1]), "remembered answer");
    // Resuming an active session is a no-op returning the same state.
    let again = c.call("session/resume", json!({"sessionId": sid})).await;
    assert_eq!(again["projection"]["turnCount"], 1);
    // And the session keeps working.
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "and now?"}),
    )
    .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    assert_eq!(
        events.last().expect("done")["payload"]["response"],
        "remembered answer"
    );
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["turnCount"], 2);
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_compact_goal_and_settings() {
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [text("answer one"), usage(50, 5)]},
        {"steps": [text("answer two")]},
        {"steps": [text("answer three")]},
        {"steps": [text("Summary: the user asked one thing."), usage(60, 8)]}
    ]));
    let sid = c.create(&ws, "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "question one"}),
    )
    .await;
    c.events_until(&sid, &["turn.completed"]).await;

    // fork
    let fork = c
        .call(
            "session/fork",
            json!({"sessionId": sid, "target": {"kind": "latestCheckpoint"}}),
        )
        .await;
    let fid = fork["forkedSessionId"]
        .as_str()
        .expect("forked id")
        .to_string();
    assert_ne!(fid, sid);
    assert_eq!(fork["parentSessionId"], sid.as_str());
    assert_eq!(fork["snapshot"]["session"]["parentSessionId"], sid.as_str());
    let fmessages = c.call("session/messages", json!({"sessionId": fid})).await;
    assert_eq!(fmessages["messages"].as_array().map(Vec::len), Some(2));
    let list = c.call("session/list", json!({})).await;
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(2));

    // goal
    let shown = c
        .call("session/goal", json!({"sessionId": sid, "action": "show"}))
        .await;
    assert_eq!(shown["response"], "No goal is set.");
    let err = c
        .call_err("session/goal", json!({"sessionId": sid, "action": "set"}))
        .await;
    assert_eq!(err["code"], -32602);
    assert!(err["message"].as_str().unwrap_or("").contains("objective"));
    let set = c
        .call(
            "session/goal",
            json!({"sessionId": sid, "action": "set", "objective": "Refactor auth"}),
        )
        .await;
    assert_eq!(set["goal"]["objective"], "Refactor auth");
    assert_eq!(set["goal"]["status"], "active");
    let paused = c
        .call("session/goal", json!({"sessionId": sid, "action": "pause"}))
        .await;
    assert_eq!(paused["goal"]["status"], "paused");
    let resumed = c
        .call(
            "session/goal",
            json!({"sessionId": sid, "action": "resume"}),
        )
        .await;
    assert_eq!(resumed["goal"]["status"], "active");
    let replaced = c
        .call(
            "session/goal",
            json!({"sessionId": sid, "action": "replace", "objective": "Ship login"}),
        )
        .await;
    assert_eq!(replaced["goal"]["objective"], "Ship login");
    let shown = c
        .call("session/goal", json!({"sessionId": sid, "action": "show"}))
        .await;
    assert!(shown["response"]
        .as_str()
        .unwrap_or("")
        .contains("Ship login"));
    let cleared = c
        .call("session/goal", json!({"sessionId": sid, "action": "clear"}))
        .await;
    assert!(cleared.get("goal").is_none() || cleared["goal"].is_null());
    let err = c
        .call_err(
            "session/goal",
            json!({"sessionId": sid, "action": "explode"}),
        )
        .await;
    assert_eq!(err["code"], -32602);

    // setMode / setThoughtLevel / setModel
    let moded = c
        .call("session/setMode", json!({"sessionId": sid, "mode": "plan"}))
        .await;
    assert_eq!(moded["settings"]["mode"]["current"], "plan");
    assert_eq!(moded["settings"]["permission"]["mode"], "plan");
    let err = c
        .call_err(
            "session/setMode",
            json!({"sessionId": sid, "mode": "chaos"}),
        )
        .await;
    assert_eq!(err["code"], -32602);
    let leveled = c
        .call(
            "session/setThoughtLevel",
            json!({"sessionId": sid, "thoughtLevel": "max"}),
        )
        .await;
    assert_eq!(leveled["settings"]["thoughtLevel"]["current"], "max");
    let err = c
        .call_err(
            "session/setThoughtLevel",
            json!({"sessionId": sid, "thoughtLevel": "ultra"}),
        )
        .await;
    assert_eq!(err["code"], -32602);
    assert!(err["message"]
        .as_str()
        .unwrap_or("")
        .contains("thoughtLevel"));
    let modeled = c
        .call("session/setModel", json!({"sessionId": sid, "model": {"providerId": "scripted", "modelId": "other-model"}}))
        .await;
    assert_eq!(
        modeled["settings"]["model"]["current"]["modelId"],
        "other-model"
    );
    let err = c
        .call_err(
            "session/setModel",
            json!({"sessionId": sid, "model": {"providerId": "nope", "modelId": "m"}}),
        )
        .await;
    assert_eq!(err["code"], -32603);
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["settings"]["mode"]["current"], "plan");
    assert_eq!(read["settings"]["thoughtLevel"]["current"], "max");
    // The fork kept its own settings.
    let fread = c.call("session/read", json!({"sessionId": fid})).await;
    assert_eq!(fread["settings"]["mode"]["current"], "yolo");

    // steer while idle queues for the next turn.
    let steered = c
        .call(
            "session/steer",
            json!({"sessionId": fid, "content": "use Rust"}),
        )
        .await;
    assert_eq!(steered["accepted"], true);

    // compact (needs more than the kept tail): accepted, then session.updated reports it.
    for prompt in ["question two", "question three"] {
        c.call("session/send", json!({"sessionId": sid, "content": prompt}))
            .await;
        c.events_until(&sid, &["turn.completed"]).await;
    }
    let compact = c.call("session/compact", json!({"sessionId": sid})).await;
    assert_eq!(compact["compact"]["state"], "accepted");
    let op = compact["compact"]["operationId"].clone();
    let done = loop {
        let event = c.event(&sid).await;
        if event["type"] == "session.updated" && !event["payload"]["compaction"].is_null() {
            break event;
        }
    };
    assert_eq!(done["payload"]["compaction"]["state"], "completed");
    assert_eq!(done["payload"]["compaction"]["operationId"], op);
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    let messages = read["messages"].as_array().expect("messages");
    assert!(
        messages
            .iter()
            .any(|m| message_text(m).contains("Summary: the user asked one thing.")),
        "{messages:?}"
    );
    // cancelBackgroundTask answers for unknown tasks.
    let cancel = c
        .call(
            "session/cancelBackgroundTask",
            json!({"sessionId": sid, "taskId": "t1"}),
        )
        .await;
    assert_eq!(cancel["cancelled"], false);
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_input_requests_for_questions_and_plan_approval() {
    let env = Env::new();
    let ws = env.workspace_str();
    let ask = json!({"questions": [{"question": "Which file?", "header": "File",
        "options": [{"label": "auth.rs"}, {"label": "user.rs"}]}]})
    .to_string();
    let plan = json!({"plan": "1. Write login\n2. Test it"}).to_string();
    let mut c = env.spawn(json!([
        {"steps": [{"tool_call": {"id": "q1", "name": "ask_user", "args": [ask]}}]},
        {"steps": [text("You chose.")]},
        {"steps": [{"tool_call": {"id": "p1", "name": "exit_plan_mode", "args": [plan]}}]},
        {"steps": [text("Plan approved; building.")]}
    ]));
    let sid = c.create(&ws, "plan").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;

    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "ask me"}),
    )
    .await;
    let request = c.server_request("interaction/requestUserInput").await;
    assert_eq!(request["id"], "server-1");
    let params = &request["params"];
    assert_eq!(params["sessionId"], sid.as_str());
    assert_eq!(params["toolCallId"], "q1");
    assert_eq!(params["questions"][0]["question"], "Which file?");
    assert_eq!(params["questions"][0]["options"][1]["label"], "user.rs");
    c.send(json!({"id": "server-1", "result": {"action": "accept",
        "content": {"answers": {"Which file?": "user.rs"}}}}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    let result = events
        .iter()
        .find(|e| e["payload"]["kind"] == "result")
        .expect("tool result");
    assert!(
        result["payload"]["result"]["content"]
            .as_str()
            .unwrap_or("")
            .contains("Which file?: user.rs"),
        "{result}"
    );

    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "plan it"}),
    )
    .await;
    let request = c.server_request("interaction/requestUserInput").await;
    assert_eq!(request["id"], "server-2");
    assert_eq!(request["params"]["schema"]["interaction"], "plan_approval");
    assert_eq!(
        request["params"]["input"]["plan"],
        "1. Write login\n2. Test it"
    );
    c.send(json!({"id": "server-2", "result": {"action": "accept",
        "content": {"answer_0": "approve"}}}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    assert_eq!(
        events.last().expect("done")["payload"]["response"],
        "Plan approved; building."
    );
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["settings"]["mode"]["current"], "build");
    assert_eq!(read["settings"]["permission"]["mode"], "ask");
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_progress_plan_todos_and_a_stop_before_the_turn_runs() {
    let env = Env::new();
    let ws = env.workspace_str();
    let bash = json!({"command": "echo hello-progress"}).to_string();
    let plan = json!({"plan": [{"step": "Write login", "status": "in_progress"},
                               {"step": "Test login", "status": "pending"}]})
    .to_string();
    let mut c = env.spawn(json!([
        {"steps": [{"tool_call": {"id": "b1", "name": "bash", "args": [bash]}},
                   {"tool_call": {"id": "p1", "name": "plan", "args": [plan]}}]},
        {"steps": [text("ran it")]},
        {"steps": [text("never streamed"), {"delay_ms": 60000}]}
    ]));
    let sid = c.create(&ws, "yolo").await;
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": "run"}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    // The shell's start-up may print to stderr under the sandbox (a profile that cannot
    // write outside the workspace); the command's own line is a stdout progress.
    let progress = events
        .iter()
        .find(|e| {
            e["payload"]["kind"] == "progress"
                && e["payload"]["stdoutTail"]
                    .as_str()
                    .is_some_and(|t| t.contains("hello-progress"))
        })
        .unwrap_or_else(|| panic!("no stdout progress in {events:?}"));
    assert_eq!(progress["payload"]["toolCallId"], "b1");
    let todos_event = events
        .iter()
        .find(|e| e["type"] == "session.updated" && e["payload"]["todos"].is_array())
        .expect("todos update");
    assert_eq!(todos_event["payload"]["todos"][0]["content"], "Write login");
    let batch = events
        .iter()
        .find(|e| e["payload"]["kind"] == "batch")
        .expect("batch");
    assert_eq!(batch["payload"]["toolCallIds"], json!(["b1", "p1"]));
    assert_eq!(batch["payload"]["successCount"], 2);
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(
        read["todos"],
        json!([{"content": "Write login", "status": "in_progress", "priority": "medium"},
               {"content": "Test login", "status": "pending", "priority": "medium"}])
    );

    // A stop written right behind the send still ends the turn with exactly one
    // turn.completed (cancelled).
    c.send_raw(&format!(
        "{}\n{}",
        json!({"id": "s", "method": "session/send", "params": {"sessionId": sid, "content": "x"}}),
        json!({"method": "session/stop", "params": {"sessionId": sid}})
    ))
    .await;
    let events = c
        .events_until(&sid, &["turn.completed", "turn.failed"])
        .await;
    assert_eq!(events[0]["type"], "turn.started");
    let done = events.last().expect("terminal");
    assert_eq!(done["payload"]["resultType"], "cancelled", "{done}");
    assert_eq!(c.reply(json!("s")).await["result"]["accepted"], true);
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["status"], "idle");
    assert!(c.shutdown().await);
}
