//! End-to-end tests of `adapter-acp app-server --stdio` over pipes: the event stream across
//! subscriptions and sessions, restarts, fork / compact / goal / settings, user-input
//! requests, bash progress and todos (the tool-turn, permission, stop and protocol-error
//! tests are in `app_server.rs`).

mod common;

use common::{assert_consecutive, message_text, text, types, usage, Env};
use serde_json::{json, Value};

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
    // The scripted provider lists its own model only (app_server_models.rs switches
    // between listed models and refuses others).
    let modeled = c
        .call("session/setModel", json!({"sessionId": sid, "model": {"providerId": "scripted", "modelId": "scripted-test"}}))
        .await;
    assert_eq!(
        modeled["settings"]["model"]["current"]["modelId"],
        "scripted-test"
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
