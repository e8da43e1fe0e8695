//! Every front end's text turn against the server: adapter-stream-json exec, adapter-rpc,
//! adapter-acp's app-server and ACP, each on the three HTTP providers.

use super::*;

// ---------------------------------------------------------------------------------------------
// adapter-stream-json exec
// ---------------------------------------------------------------------------------------------

async fn stream_json_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-stream-json", "adapter-stream-json").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.arg("exec")
        .args(["-o", "stream-json"])
        .args(["--enabled-tools", ONE_TOOL])
        .args(provider_args(api, &proxy))
        .arg(PROMPT)
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    clean_env(&mut cmd, home.path());
    let child = cmd.spawn().expect("spawn adapter-stream-json");
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("adapter-stream-json did not finish in time")
        .expect("wait");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stdout.contains(API_KEY), "the API key leaked to stdout");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line ({e}): {l}")))
        .collect();

    // The full sequence, framing included.
    assert_eq!(
        shape(&events, "type", &["text"]),
        ["run_start", "text", "usage", "final", "run_end"],
        "{stdout}"
    );
    let run_id = events[0]["runId"].as_str().expect("runId");
    for e in &events {
        assert_eq!(e["schemaVersion"], 2, "{e}");
        assert_eq!(e["runId"], run_id, "one runId per run: {e}");
    }
    assert_eq!(events[0]["model"], MODEL);
    assert_eq!(events[0]["cwd"], work.display().to_string());

    // What the server sent is what the front end reports.
    let x = proxy.single(api.path());
    assert_eq!(x.request["model"], MODEL);
    assert_eq!(x.request["stream"], true);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["delta"].as_str().expect("text delta"))
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing: {stdout}");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let fin = &events[events.len() - 2];
    assert_eq!(fin["text"], text.as_str());
    let usage = server_usage(&x);
    let reported = events.iter().find(|e| e["type"] == "usage").expect("usage");
    assert_eq!(
        reported["promptTokens"], usage.prompt,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["completionTokens"], usage.output,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{reported} vs {usage:?}"
    );
    let end = events.last().expect("run_end");
    assert_eq!(end["status"], "success", "{end}");
    assert_eq!(end["exitCode"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_openai() {
    stream_json_text_turn(Api::Chat, "stream_json_exec_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_anthropic() {
    stream_json_text_turn(Api::Anthropic, "stream_json_exec_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_exec_text_turn_openai_responses() {
    stream_json_text_turn(
        Api::Responses,
        "stream_json_exec_text_turn_openai_responses",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// adapter-rpc rpc
// ---------------------------------------------------------------------------------------------

async fn rpc_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-rpc", "adapter-rpc").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.arg("rpc")
        .arg("--cwd")
        .arg(&work)
        .args(["--tools", ONE_TOOL])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut rpc = LineProcess::spawn(cmd);

    rpc.send(&json!({"id": "h", "type": "hello"})).await;
    let hello = rpc.next_some().await;
    assert_eq!(hello["type"], "response", "{hello}");
    assert_eq!(hello["success"], true, "{hello}");
    assert_eq!(hello["data"]["provider"], api.provider(), "{hello}");
    assert_eq!(hello["data"]["model"], MODEL, "{hello}");

    rpc.send(&json!({"id": "1", "type": "prompt", "message": PROMPT}))
        .await;
    let mut frames = Vec::new();
    loop {
        let frame = rpc.next_some().await;
        let done = frame["type"] == "done";
        frames.push(frame);
        if done {
            break;
        }
    }
    assert_eq!(
        shape(&frames, "type", &["text_delta"]),
        [
            "response",
            "user_message",
            "turn_start",
            "request_started",
            "request_started",
            "assistant_start",
            "text_delta",
            "usage",
            "assistant_message",
            "turn_end",
            "done"
        ],
        "{frames:#?}"
    );
    assert_eq!(frames[0]["data"]["started"], true);
    assert_eq!(
        frames[1]["content"],
        json!([{"type": "text", "text": PROMPT}])
    );
    assert_eq!(frames[2], json!({"type": "turn_start", "step": 1}));
    assert_eq!(frames[3]["scope"], "agent");
    assert_eq!(frames[3]["provider"], api.provider());
    assert_eq!(frames[3]["model"], MODEL);
    assert_eq!(frames[4]["scope"], "provider");
    assert_eq!(frames[4]["attempt"], 1);

    let x = proxy.single(api.path());
    let text: String = frames
        .iter()
        .filter(|f| f["type"] == "text_delta")
        .map(|f| f["delta"].as_str().expect("delta"))
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let message = frames
        .iter()
        .find(|f| f["type"] == "assistant_message")
        .expect("assistant_message");
    assert_eq!(message["content"], json!([{"type": "text", "text": text}]));
    let usage = server_usage(&x);
    let reported = frames.iter().find(|f| f["type"] == "usage").expect("usage");
    let prompt =
        num(&reported["input"]) + num(&reported["cache_read"]) + num(&reported["cache_write"]);
    assert_eq!(prompt, usage.prompt, "{reported} vs {usage:?}");
    assert_eq!(
        reported["cache_read"], usage.cached,
        "{reported} vs {usage:?}"
    );
    assert_eq!(reported["output"], usage.output, "{reported} vs {usage:?}");
    assert_eq!(reported["cumulative"]["output"], usage.output, "{reported}");
    let turn_end = &frames[frames.len() - 2];
    assert_eq!(turn_end, &json!({"type": "turn_end", "stop": "end"}));

    // The transcript holds the turn; then a clean exit when stdin closes.
    rpc.send(&json!({"id": "s", "type": "get_state"})).await;
    let state = rpc.next_some().await;
    assert_eq!(state["success"], true, "{state}");
    assert_eq!(state["data"]["message_count"], 2, "{state}");
    assert_eq!(state["data"]["busy"], false, "{state}");
    let (code, rest) = rpc.finish().await;
    assert!(rest.is_empty(), "nothing after the last response: {rest:?}");
    assert_eq!(code, Some(0), "stderr: {}", rpc.stderr().await);
    rpc.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_openai() {
    rpc_text_turn(Api::Chat, "rpc_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_anthropic() {
    rpc_text_turn(Api::Anthropic, "rpc_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_text_turn_openai_responses() {
    rpc_text_turn(Api::Responses, "rpc_text_turn_openai_responses").await;
}

// ---------------------------------------------------------------------------------------------
// adapter-acp app-server --stdio
// ---------------------------------------------------------------------------------------------

/// The reply to JSON-RPC request `id`, skipping (and keeping) notifications.
async fn app_reply(p: &mut LineProcess, id: i64, kept: &mut Vec<Value>) -> Value {
    loop {
        let m = p.next_some().await;
        if m["id"] == id && m.get("method").is_none() {
            assert!(m.get("error").is_none(), "request {id} failed: {m}");
            return m["result"].clone();
        }
        kept.push(m);
    }
}

async fn app_server_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-acp", "adapter-acp").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let data = home.path().join("acp-data");
    let mut cmd = Command::new(bin);
    cmd.args(["app-server", "--stdio", "--data-dir"])
        .arg(&data)
        .args(["--disallowed-tools", OTHER_TOOLS])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut app = LineProcess::spawn(cmd);
    let mut notes = Vec::new();
    let ws = work.display().to_string();

    app.send(&json!({"id": 1, "method": "session/create", "params": {
        "workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo"}}))
        .await;
    let created = app_reply(&mut app, 1, &mut notes).await;
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    app.send(&json!({"id": 2, "method": "session/read", "params": {"sessionId": sid}}))
        .await;
    let read = app_reply(&mut app, 2, &mut notes).await;
    assert_eq!(
        read["settings"]["model"]["current"]["modelId"], MODEL,
        "{read}"
    );
    app.send(&json!({"id": 3, "method": "session/subscribe", "params": {
        "sessionId": sid, "deliveryKind": "desktop-continuous",
        "includeSnapshot": false, "afterSeq": 0}}))
        .await;
    app_reply(&mut app, 3, &mut notes).await;
    app.send(&json!({"id": 4, "method": "session/send", "params": {
        "sessionId": sid, "content": PROMPT}}))
        .await;
    let sent = app_reply(&mut app, 4, &mut notes).await;
    assert_eq!(sent["accepted"], true, "{sent}");

    // Session events (some may have arrived with the replies) up to the end of the turn.
    let mut events: Vec<Value> = notes
        .drain(..)
        .filter(|m| m["method"] == "session/event")
        .map(|m| m["params"].clone())
        .collect();
    while !events
        .iter()
        .any(|e| e["type"] == "turn.completed" || e["type"] == "turn.failed")
    {
        let m = app.next_some().await;
        if m["method"] == "session/event" {
            events.push(m["params"].clone());
        }
    }
    for pair in events.windows(2) {
        assert_eq!(
            pair[1]["seq"].as_u64(),
            pair[0]["seq"].as_u64().map(|s| s + 1),
            "consecutive seqs"
        );
    }
    for e in &events {
        assert_eq!(e["sessionId"], sid.as_str());
    }
    let kinds: Vec<Value> = events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or("?");
            json!({"k": match e["payload"]["kind"].as_str() {
                Some(kind) => format!("{t}:{kind}"),
                None => t.to_string(),
            }})
        })
        .collect();
    let kinds = shape(&kinds, "k", &["model.streaming:text_delta"]);
    let turn: Vec<&str> = kinds
        .iter()
        .map(String::as_str)
        .filter(|k| !k.starts_with("session."))
        .collect();
    assert_eq!(
        turn,
        [
            "turn.started",
            "model.streaming:text_delta",
            "turn.completed"
        ],
        "{kinds:?}"
    );

    let x = proxy.single(api.path());
    let text: String = events
        .iter()
        .filter(|e| e["payload"]["kind"] == "text_delta")
        .map(|e| {
            e["payload"]["delta"]
                .as_str()
                .or(e["payload"]["text"].as_str())
                .unwrap_or_else(|| panic!("a text_delta without text: {e}"))
        })
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(text, server_text(&x), "text deltas are the server's text");
    let done = events.last().expect("turn.completed");
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["payload"]["resultType"], "success", "{done}");
    assert_eq!(done["payload"]["response"], text.as_str());
    assert_eq!(done["payload"]["toolCallCount"], 0);
    let usage = server_usage(&x);
    let reported = &done["payload"]["usage"];
    assert_eq!(
        reported["inputTokens"], usage.prompt,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["outputTokens"], usage.output,
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{reported} vs {usage:?}"
    );
    assert_eq!(
        reported["cacheReadTokens"], usage.cached,
        "{reported} vs {usage:?}"
    );

    app.send(&json!({"id": 5, "method": "session/read", "params": {"sessionId": sid}}))
        .await;
    let read = app_reply(&mut app, 5, &mut notes).await;
    assert_eq!(read["projection"]["status"], "idle", "{read}");
    assert_eq!(read["projection"]["turnCount"], 1, "{read}");
    assert_eq!(
        read["projection"]["totalTokenCount"],
        usage.total(),
        "{read}"
    );
    let (code, _) = app.finish().await;
    assert_eq!(code, Some(0), "stderr: {}", app.stderr().await);
    app.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_openai() {
    app_server_text_turn(Api::Chat, "app_server_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_anthropic() {
    app_server_text_turn(Api::Anthropic, "app_server_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_text_turn_openai_responses() {
    app_server_text_turn(Api::Responses, "app_server_text_turn_openai_responses").await;
}

// ---------------------------------------------------------------------------------------------
// adapter-acp acp (Agent Client Protocol)
// ---------------------------------------------------------------------------------------------

/// The reply to ACP request `id`; `session/update` notifications are collected.
async fn acp_reply(p: &mut LineProcess, id: i64, updates: &mut Vec<Value>) -> Value {
    loop {
        let m = p.next_some().await;
        assert_eq!(m["jsonrpc"], "2.0", "{m}");
        if m["id"] == id && m.get("method").is_none() {
            assert!(m.get("error").is_none(), "request {id} failed: {m}");
            return m["result"].clone();
        }
        if m["method"] == "session/update" {
            updates.push(m["params"].clone());
        }
    }
}

async fn acp_text_turn(api: Api, test: &str) {
    let Some(root) = server(test) else { return };
    let proxy = Proxy::start(&root, None).await;
    let bin = binary("adapter-acp", "adapter-acp").await;
    let home = tempfile::tempdir().expect("tempdir");
    let work = workspace();
    let mut cmd = Command::new(bin);
    cmd.args(["acp", "--data-dir"])
        .arg(home.path().join("acp-data"))
        .args(["--disallowed-tools", OTHER_TOOLS])
        .args(provider_args(api, &proxy))
        .current_dir(&work);
    clean_env(&mut cmd, home.path());
    let mut acp = LineProcess::spawn(cmd);
    let mut updates = Vec::new();

    acp.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false},
                               "terminal": false}}}),
    )
    .await;
    let init = acp_reply(&mut acp, 0, &mut updates).await;
    assert_eq!(init["protocolVersion"], 1, "{init}");
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {
        "cwd": work.display().to_string(), "mcpServers": []}}),
    )
    .await;
    let session = acp_reply(&mut acp, 1, &mut updates).await;
    let sid = session["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    updates.clear();
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
        "sessionId": sid, "prompt": [{"type": "text", "text": PROMPT}]}}),
    )
    .await;
    let result = acp_reply(&mut acp, 2, &mut updates).await;
    assert_eq!(result["stopReason"], "end_turn", "{result}");

    let x = proxy.single(api.path());
    for u in &updates {
        assert_eq!(u["sessionId"], sid.as_str(), "{u}");
    }
    // The turn's content; the session's own updates (its title, the model list arriving,
    // its commands) may come at any point and are not the turn's.
    let kinds: Vec<Value> = (updates.iter())
        .map(|u| u["update"].clone())
        .filter(|u| {
            !matches!(
                u["sessionUpdate"].as_str(),
                Some("session_info_update" | "config_option_update" | "available_commands_update")
            )
        })
        .collect();
    assert_eq!(
        shape(&kinds, "sessionUpdate", &["agent_message_chunk"]),
        ["agent_message_chunk", "usage_update"],
        "{updates:#?}"
    );
    let text: String = kinds
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| {
            assert_eq!(u["content"]["type"], "text", "{u}");
            u["content"]["text"].as_str().expect("text chunk")
        })
        .collect();
    assert!(!text.trim().is_empty(), "the model said nothing");
    assert_eq!(
        text,
        server_text(&x),
        "message chunks are the server's text"
    );
    let usage = server_usage(&x);
    let context = kinds.last().expect("usage_update");
    assert_eq!(context["used"], usage.total(), "{context} vs {usage:?}");
    // The turn's usage rides in the response's `_meta.usage` (ACP has no usage field yet).
    let reported = &result["_meta"]["usage"];
    assert_eq!(
        reported["inputTokens"], usage.prompt,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["outputTokens"], usage.output,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["cachedReadTokens"], usage.cached,
        "{result} vs {usage:?}"
    );
    assert_eq!(
        reported["totalTokens"],
        usage.total(),
        "{result} vs {usage:?}"
    );
    assert_eq!(reported["modelCalls"], 1, "{result}");
    assert_eq!(reported["toolCalls"], 0, "{result}");
    let (code, _) = acp.finish().await;
    assert_eq!(code, Some(0), "stderr: {}", acp.stderr().await);
    acp.assert_no_key();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_openai() {
    acp_text_turn(Api::Chat, "acp_text_turn_openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_anthropic() {
    acp_text_turn(Api::Anthropic, "acp_text_turn_anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_text_turn_openai_responses() {
    acp_text_turn(Api::Responses, "acp_text_turn_openai_responses").await;
}
