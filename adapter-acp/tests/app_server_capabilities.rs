//! The capability scenarios of `test_support::scenarios` (hooks, the sandbox, sub-agents as
//! child sessions, the context budget, a key kept out of error text) through `adapter-acp
//! app-server --stdio` on the mock model, in ZCode's terms: one server and one session per
//! scenario (mode `yolo`, or `build` allowing every permission request where a scenario
//! approves), the facts read from the session's events, then ZCode's own expectations
//! ([`expect`]: `session/messages`, `session/subagents`, `session/read`, child streams).
//! MCP, background-task cancellation, SIGTERM/SIGINT and OTLP export, which only this front
//! end has, are in `tests/app_server_capabilities_only.rs`.

mod common;

use common::{message_texts, outcome_of, scenario_stderr, tool_part, types, Client};
use serde_json::{json, Value};
use test_support::scenarios::{self, FrontEnd, Observed, Paths, Prompt, Said, ToolOutcome, Turn};
use test_support::MockModel;

/// One scenario's run: the server, its session and each prompt's events and permission
/// requests (answered `allow_once`).
struct Run {
    c: Client,
    sid: String,
    paths: Paths,
    model: MockModel,
    turns: Vec<(Vec<Value>, Vec<Value>)>,
    _root: tempfile::TempDir,
}

async fn run(name: &str) {
    let (root, paths, scenario, model) = common::scenario(name);
    let mut args: Vec<String> = ["app-server", "--stdio", "--provider", "openai"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let data = paths.root.join("data").display().to_string();
    args.extend([
        "--model".into(),
        scenario.model_id.unwrap_or("gpt-test").into(),
        "--data-dir".into(),
        data,
    ]);
    args.extend(["--base-url".into(), model.v1()]);
    if let Some(key) = &scenario.api_key {
        args.extend(["--api-key".into(), key.clone()]);
    }
    if let Some(hooks) = scenario.write_hooks(&paths.root, "hooks.json") {
        args.extend(["--hooks".into(), hooks.display().to_string()]);
    }
    if name == "sandbox_refuses_a_write_outside_the_workspace" {
        // On a kernel that cannot enforce the sandbox, the command is refused outright.
        args.extend(["--sandbox-fallback".into(), "refuse".into()]);
    }
    args.extend(scenario.flags.iter().cloned());
    let home = paths.home.display().to_string();
    let config = paths.root.join("config").display().to_string();
    let vars: Vec<(&str, &str)> = [
        ("AGENT_SDK_MAX_RETRIES", "0"),
        ("HOME", home.as_str()),
        ("XDG_CONFIG_HOME", config.as_str()),
    ]
    .into_iter()
    .chain(scenario.env.iter().copied())
    .collect();
    let mut c = Client::spawn_with(&args, &vars, Some(&paths.root.join("stderr.log")));
    let mut seen = Observed {
        front_end: Some(FrontEnd::Zcode),
        ..Observed::default()
    };
    if scenario.refused() {
        assert_eq!(c.wait_exit().await.code(), Some(2), "a usage error");
        assert!(c.raw.is_empty(), "nothing on stdout: {:?}", c.raw);
        seen.refusal = Some(scenario_stderr(&paths));
        let flag = match name.split('_').next() {
            Some("sandbox") => Some("--sandbox"),
            Some("rules") => Some("--settings"),
            _ => None,
        };
        if let Some(flag) = flag {
            assert!(
                scenario_stderr(&paths).contains(flag),
                "{}",
                scenario_stderr(&paths)
            );
        }
        seen.requests = model.requests();
        scenario.check(&paths, &seen);
        return;
    }
    let ws = match &scenario.cwd {
        Some(sub) => paths.ws.join(sub),
        None => paths.ws.clone(),
    };
    let ws = ws.display().to_string();
    let mode = if scenario.approve { "build" } else { "yolo" };
    let sid = c.create(&ws, mode).await;
    let mut run = Run {
        c,
        sid,
        paths,
        model,
        turns: Vec::new(),
        _root: root,
    };
    for prompt in &scenario.prompts {
        let (events, asked) = turn_allowing(&mut run, prompt).await;
        seen.turns.push(turn(&events, run.model.request_count()));
        run.turns.push((events, asked));
    }
    expect(name, &mut run).await;
    assert!(run.c.shutdown_keep().await, "{name}: unclean exit");
    seen.stderr = scenario_stderr(&run.paths);
    seen.requests = run.model.requests();
    scenario.check(&run.paths, &seen);
    if name == "api_key_redacted_from_a_tool_error" {
        // The call's own arguments are the model's words and are shown as such; no result
        // or error line carries the key.
        let leaks: Vec<&String> = run
            .c
            .raw
            .iter()
            .filter(|l| l.contains(scenarios::SECRET))
            .filter(|l| l.contains("\"kind\":\"error\"") || l.contains("\"kind\":\"result\""))
            .collect();
        assert!(
            leaks.is_empty(),
            "the key reached a tool outcome: {leaks:?}"
        );
    }
}

/// Runs a prompt to its end, allowing every permission request and, once the processes
/// it waits for run, stopping the session; returns the turn's events and the params of
/// the requests.
async fn turn_allowing(run: &mut Run, prompt: &Prompt) -> (Vec<Value>, Vec<Value>) {
    let (c, sid) = (&mut run.c, run.sid.clone());
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": prompt.text}),
    )
    .await;
    if !prompt.interrupt_when.is_empty() {
        prompt.running(&run.paths).await;
        let stopped = c.call("session/stop", json!({"sessionId": sid})).await;
        assert_eq!(stopped["stopped"], true, "{stopped}");
    }
    let (mut events, mut requests) = (Vec::new(), Vec::new());
    loop {
        let session = sid.clone();
        let message = c
            .next_matching(move |m| {
                (m["method"] == "session/event" && m["params"]["sessionId"] == session.as_str())
                    || (m["method"] == "interaction/requestPermission" && m.get("id").is_some())
            })
            .await;
        if message["method"] == "interaction/requestPermission" {
            let allow = message["params"]["options"]
                .as_array()
                .expect("options")
                .iter()
                .find(|o| o["optionId"] == "allow_once")
                .expect("allow_once")["response"]
                .clone();
            c.send(json!({"id": message["id"].clone(), "result": allow}))
                .await;
            requests.push(message["params"].clone());
            continue;
        }
        let event = message["params"].clone();
        let done = event["type"] == "turn.completed" || event["type"] == "turn.failed";
        events.push(event);
        if done {
            return (events, requests);
        }
    }
}

fn turn(events: &[Value], requests: usize) -> Turn {
    let tools = events
        .iter()
        .filter(|e| {
            e["type"] == "tool.updated"
                && (e["payload"]["kind"] == "result" || e["payload"]["kind"] == "error")
        })
        .map(|e| {
            let p = &e["payload"];
            let (text, block) = match p["kind"] == "result" {
                true => (
                    match &p["result"]["content"] {
                        Value::String(s) => s.clone(),
                        _ => p["result"].to_string(),
                    },
                    &p["result"]["metadata"]["block"]["code"],
                ),
                false => (
                    format!(
                        "{}\n{}",
                        p["error"]["message"].as_str().unwrap_or_default(),
                        p["error"]
                    ),
                    &p["error"]["data"]["block"]["code"],
                ),
            };
            ToolOutcome {
                id: p["toolCallId"].as_str().unwrap_or_default().into(),
                ok: p["kind"] == "result",
                text,
                block: block.as_str().map(str::to_string),
            }
        })
        .collect();
    let done = &events.last().expect("end")["payload"];
    let usage = &done["usage"];
    Turn {
        tools,
        said: Said::Last(done["response"].as_str().unwrap_or_default().into()),
        usage: usage["inputTokens"]
            .as_u64()
            .zip(usage["outputTokens"].as_u64()),
        blocked: !types(events)
            .iter()
            .any(|t| t.starts_with("model.streaming")),
        cancelled: done["resultType"] == "cancelled",
        requests,
    }
}

/// The sub-agent progress event of call `id`.
fn subagent_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["payload"]["kind"] == "progress"
                && e["payload"]["source"] == "subagent"
                && e["payload"]["toolCallId"] == id
        })
        .unwrap_or_else(|| panic!("no sub-agent progress of {id} in {:?}", types(events)))
}

/// ZCode's own expectations of a scenario, the server still running.
async fn expect(name: &str, run: &mut Run) {
    let (events, asked) = run.turns[0].clone();
    let (c, sid) = (&mut run.c, run.sid.clone());
    let done = events.last().expect("end").clone();
    match name {
        "rules_from_settings_allow_and_deny_each_call" => {
            // `permission.resolved`: the decisions no client was asked about, and their
            // source.
            let resolved = |id: &str| {
                events
                    .iter()
                    .find(|e| {
                        e["type"] == "permission.resolved" && e["payload"]["toolCallId"] == id
                    })
                    .unwrap_or_else(|| {
                        panic!("no permission.resolved for {id}: {:?}", types(&events))
                    })["payload"]
                    .clone()
            };
            let a1 = resolved("a1");
            assert_eq!(a1["decision"], "allow", "{a1}");
            assert_eq!(a1["decisionSource"], "rule");
            assert_eq!(a1["rule"]["rule"], "Bash(echo allowed:*)");
            assert_eq!(a1["rule"]["action"], "allow");
            let d1 = resolved("d1");
            assert_eq!(d1["decision"], "deny", "{d1}");
            assert_eq!(d1["rule"]["rule"], "Bash(touch denied:*)");
            assert!(asked.is_empty(), "yolo asks nothing: {asked:?}");
        }
        "budget_cap_ends_the_run_after_the_first_call" => {
            assert_eq!(done["type"], "turn.failed", "{done}");
            let error = &done["payload"]["error"];
            assert_eq!(error["type"], "max_budget", "{error}");
            assert_eq!(error["code"], "budget_exceeded");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("spend cap of $0.01 reached"),
                "{message}"
            );
        }
        "fallback_model_answers_when_the_model_is_overloaded" => {
            let fallback = events
                .iter()
                .find(|e| {
                    e["type"] == "session.updated" && e["payload"]["modelFallback"].is_object()
                })
                .unwrap_or_else(|| panic!("no modelFallback in {:?}", types(&events)))["payload"]
                ["modelFallback"]
                .clone();
            assert_eq!(fallback["from"], "gpt-test", "{fallback}");
            assert_eq!(fallback["to"], scenarios::FALLBACK_MODEL);
            assert_eq!(done["type"], "turn.completed", "{done}");
        }
        "hook_pre_tool_use_vetoes_bash" => {
            let error = &outcome_of(&events, "b1")["payload"]["error"];
            assert_eq!(error["type"], "hook_denied", "{error}");
            assert_eq!(error["code"], "hook_denied");
            assert_eq!(error["data"]["hooks"][0]["outcome"], "deny", "{error}");
            let reason = error["data"]["hooks"][0]["reason"].as_str().unwrap_or("");
            assert!(reason.contains("no shell in this repo"), "{error}");
            // The part (what the model got back) shows the reason.
            let part = tool_part(c, &sid, "b1").await;
            assert_eq!(part["state"]["status"], "error");
            let shown = part["state"]["error"].as_str().unwrap_or("");
            assert!(shown.contains("no shell in this repo"), "{part}");
            assert_eq!(
                part["state"]["metadata"]["hooks"][0]["event"],
                "before_tool"
            );
        }
        "hook_post_tool_use_feedback_reaches_the_model" => {
            let read = outcome_of(&events, "r1");
            let hooks = &read["payload"]["result"]["metadata"]["hooks"];
            assert_eq!(hooks[0]["outcome"], "append", "{read}");
            let part = tool_part(c, &sid, "r1").await;
            let output = part["state"]["output"].as_str().unwrap_or("");
            assert!(output.contains("AFTER-HOOK-NOTE"), "{part}");
        }
        "hook_user_prompt_submit_blocks_one_prompt" => {
            // The turn ends at once, with nothing said.
            assert_eq!(done["type"], "turn.completed", "{done}");
            assert_eq!(done["payload"]["response"], "");
        }
        "sandbox_refuses_a_write_outside_the_workspace" => {
            let report = events
                .iter()
                .find(|e| e["type"] == "session.updated" && e["payload"]["sandbox"].is_object())
                .unwrap_or_else(|| panic!("no sandbox report in {:?}", types(&events)))["payload"]
                ["sandbox"]
                .clone();
            assert_eq!(report["mode"], "workspace-write", "{report}");
            assert_eq!(report["network"], "deny");
            let summary = report["summary"].as_str().unwrap_or("");
            assert!(summary.contains("workspace-write"), "{report}");
            let outcome = outcome_of(&events, "w1");
            let block = match outcome["payload"]["kind"].as_str() {
                Some("error") => &outcome["payload"]["error"]["data"]["block"],
                _ => &outcome["payload"]["result"]["metadata"]["block"],
            };
            assert!(
                block["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{block}"
            );
            if report["enforced"] == "full" {
                assert_eq!(outcome["payload"]["error"]["code"], "sandbox", "{outcome}");
            }
            let part = tool_part(c, &sid, "w1").await;
            assert_eq!(
                part["state"]["metadata"]["block"]["code"], "sandbox",
                "{part}"
            );
        }
        "task_child_asks_permission_in_its_own_name" => {
            expect_child_session(c, &sid, &events, &asked).await;
        }
        "task_explorer_is_refused_a_write_and_usage_adds_up" => {
            // In the child's session, the write is a failed call: not the explorer's tool.
            let child = subagent_of(&events, "t1")["payload"]["childSessionId"]
                .as_str()
                .expect("childSessionId")
                .to_string();
            let part = tool_part(c, &child, "c2").await;
            assert_eq!(part["state"]["status"], "error", "{part}");
            assert!(
                part.to_string().contains("unknown tool: write_file"),
                "{part}"
            );
        }
        "task_child_that_fails_is_the_task_error" => {
            let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
            assert_ne!(listed["subagents"][0]["status"], "completed", "{listed}");
        }
        "task_interrupted_mid_child_bash_leaves_no_process" => {
            assert_eq!(done["payload"]["resultType"], "cancelled", "{done}");
            assert_eq!(outcome_of(&events, "t1")["payload"]["kind"], "error");
            let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
            assert_ne!(listed["subagents"][0]["status"], "running", "{listed}");
        }
        "task_two_in_the_background_read_with_task_output" => {
            let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
            let subagents = listed["subagents"].as_array().expect("subagents");
            assert_eq!(subagents.len(), 2, "{listed}");
            for entry in subagents {
                assert_eq!(entry["background"], true, "{entry}");
                assert_eq!(entry["status"], "completed", "{entry}");
            }
            let mut finals: Vec<&str> = subagents
                .iter()
                .filter_map(|e| e["finalText"].as_str())
                .collect();
            finals.sort();
            assert_eq!(finals, ["alpha result", "beta result"]);
        }
        "context_auto_compaction" => expect_compaction(c, &sid, &events).await,
        "context_auto_compact_off_never_compacts" => {
            assert!(!events
                .iter()
                .any(|e| e["type"] == "session.updated" && e["payload"]["compaction"].is_object()));
            let read = c.call("session/read", json!({"sessionId": sid})).await;
            let used = read["projection"]["contextUsed"].as_u64();
            assert!(used.is_some_and(|u| u >= 990), "{read}");
        }
        "api_key_redacted_from_a_tool_error" => {
            let part = tool_part(c, &sid, "r1").await;
            let error = part["state"]["error"].as_str().unwrap_or("");
            assert!(error.contains("[REDACTED]"), "{part}");
        }
        "project_slash_command_expands_where_the_protocol_has_commands" => {
            // The snapshot lists the workspace's commands: the project's review (shadowing
            // the user's), Zero's fix, and plain (no frontmatter: Zero's description).
            let read = c.call("session/read", json!({"sessionId": sid})).await;
            let commands = &read["slashCommands"];
            let names: Vec<&str> = commands
                .as_array()
                .unwrap_or_else(|| panic!("no slashCommands in {read}"))
                .iter()
                .filter_map(|c| c["name"].as_str())
                .collect();
            assert_eq!(names, ["fix", "plain", "review"], "{commands}");
            assert_eq!(commands[2]["description"], "Review a file for bugs");
            assert_eq!(commands[2]["argumentHint"], "<file>");
            assert_eq!(commands[1]["description"], "User command: /plain");
            assert!(commands[1].get("argumentHint").is_none(), "{commands}");
        }
        _ => {}
    }
    // The spend cap's turn fails (above); every other turn completes.
    if !name.starts_with("task_interrupted") && !name.starts_with("budget") {
        assert_eq!(done["type"], "turn.completed", "{done}");
    }
}

/// A Task call runs a child session with its own events, messages and permissions.
async fn expect_child_session(c: &mut Client, sid: &str, events: &[Value], asked: &[Value]) {
    // The Task call names its child.
    let progress = &subagent_of(events, "t1")["payload"];
    assert_eq!(progress["agentType"], "worker");
    assert_eq!(progress["background"], false);
    assert_eq!(progress["description"], "write the file");
    let child = progress["childSessionId"]
        .as_str()
        .expect("child")
        .to_string();
    assert_eq!(progress["agentId"], child.as_str());
    let result = &outcome_of(events, "t1")["payload"];
    assert_eq!(result["childSessionId"], child.as_str());
    assert_eq!(
        result["result"]["metadata"]["childSessionId"],
        child.as_str()
    );
    // Usage of parent and child add up in the turn's usage.
    let done = &events.last().expect("end")["payload"];
    assert_eq!(done["usage"]["totalTokens"], 12 + 6 + 8 + 23);
    // The child's command was asked about in the child's name, with its own call id.
    assert!(
        asked
            .iter()
            .any(|r| r["sessionId"] == child.as_str() && r["toolCallId"] == "w1"),
        "{asked:?}"
    );
    // session/subagents lists it; it is a session of its own.
    let listed = c.call("session/subagents", json!({"sessionId": sid})).await;
    let subagents = listed["subagents"].as_array().expect("subagents");
    assert_eq!(subagents.len(), 1, "{listed}");
    let entry = &subagents[0];
    assert_eq!(entry["session"]["sessionId"], child.as_str());
    assert_eq!(entry["session"]["parentSessionId"], sid);
    assert_eq!(entry["session"]["sessionKind"], "subagent");
    assert_eq!(entry["session"]["title"], "worker: write the file");
    assert_eq!(entry["agentType"], "worker");
    assert_eq!(entry["toolCallId"], "t1");
    assert_eq!(entry["status"], "completed");
    assert_eq!(entry["finalText"], "The child wrote done.txt.");
    assert_eq!(entry["usage"]["totalTokens"], 14);
    let read = c.call("session/read", json!({"sessionId": child})).await;
    assert_eq!(read["session"]["parentSessionId"], sid);
    assert_eq!(read["projection"]["status"], "idle");
    let texts = message_texts(c, &child).await;
    assert!(
        texts.iter().any(|t| t == "The child wrote done.txt."),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("Write done.txt")),
        "{texts:?}"
    );
    let part = tool_part(c, &child, "w1").await;
    assert_eq!(part["state"]["status"], "completed");
    // Its own event stream, replayed from the start.
    let sub = c
        .call(
            "session/subscribe",
            json!({"sessionId": child, "afterSeq": 0}),
        )
        .await;
    let replay = sub["events"].as_array().expect("events").clone();
    let kinds = types(&replay);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("turn.started"),
        "{kinds:?}"
    );
    assert_eq!(replay[0]["payload"]["inputSource"], "subagent");
    assert!(replay.iter().all(|e| e["sessionId"] == child.as_str()));
    assert!(
        kinds.contains(&"model.streaming:tool_call".to_string()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"tool.updated:result".to_string()),
        "{kinds:?}"
    );
    let last = replay.last().expect("events");
    assert_eq!(last["type"], "turn.completed", "{kinds:?}");
    assert_eq!(last["payload"]["response"], "The child wrote done.txt.");
    // Not a root session, and it takes no prompts of its own.
    let list = c.call("session/list", json!({})).await;
    let ids: Vec<&Value> = list["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| &s["sessionId"])
        .collect();
    assert_eq!(ids, [&json!(sid)], "{list}");
    let err = c
        .call_err("session/send", json!({"sessionId": child, "content": "hi"}))
        .await;
    assert_eq!(err["code"], -32602, "{err}");
}

/// Context usage and an automatic compaction in the events, `session/read` and
/// `session/messages`.
async fn expect_compaction(c: &mut Client, sid: &str, events: &[Value]) {
    // Each model call's context usage is a session.updated.
    let context = events
        .iter()
        .find(|e| e["type"] == "session.updated" && e["payload"]["contextUsed"].is_u64())
        .unwrap_or_else(|| panic!("no context update in {:?}", types(events)));
    assert_eq!(context["payload"]["contextUsed"], 120);
    assert_eq!(context["payload"]["contextWindow"], 1000);
    let compaction: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session.updated" && e["payload"]["compaction"].is_object())
        .collect();
    assert_eq!(compaction.len(), 2, "{:?}", types(events));
    let (running, completed) = (
        &compaction[0]["payload"]["compaction"],
        &compaction[1]["payload"]["compaction"],
    );
    assert_eq!(running["state"], "running");
    assert_eq!(running["auto"], true);
    assert_eq!(running["reason"], "auto");
    assert_eq!(completed["state"], "completed");
    assert!(
        completed["before"].as_u64().is_some_and(|b| b >= 920),
        "{completed}"
    );
    // The summary is not streamed as the answer.
    assert!(!events.iter().any(|e| e["payload"]["delta"]
        .as_str()
        .is_some_and(|d| d.contains("SUMMARY"))));
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(read["projection"]["contextWindow"], 1000);
    assert_eq!(read["runtime"]["contextUsage"]["window"], 1000);
    let used = read["projection"]["contextUsed"].as_u64();
    assert!(used.is_some_and(|u| u < 700), "{read}");
    // The compacted transcript starts with a compaction part.
    let messages = c.call("session/messages", json!({"sessionId": sid})).await;
    let first = &messages["messages"][0];
    assert_eq!(first["parts"][0]["type"], "compaction", "{first}");
    assert_eq!(first["parts"][0]["auto"], true);
}

test_support::scenario_tests!(async run);
