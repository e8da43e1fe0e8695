//! The capability scenarios of `test_support::scenarios` (hooks, the sandbox, sub-agents,
//! the context budget, a key kept out of tool errors) through `adapter-acp acp` on the mock
//! model, in ACP's own terms: one agent process and one session per scenario (mode `yolo`,
//! or `build` answering `allow_once` where a scenario approves), the facts read from the
//! `session/update`s and the prompt's reply, then ACP's own expectations ([`expect`]).
//! Below them, what only ACP shows: the scripted model's cost in `usage_update`.
//!
//! Every wait is bounded (`common::WAIT`).

mod common;

use std::path::PathBuf;

use common::acp_client::{content_text, of_call, Acp};
use common::{scenario_stderr, write_script};
use serde_json::{json, Value};
use test_support::scenarios::{self, FrontEnd, Observed, Paths, Said, ToolOutcome, Turn};
use test_support::MockModel;

/// One scenario's run: the agent, its session, and each prompt's reply, updates and the
/// permission requests answered.
struct Run {
    acp: Acp,
    sid: String,
    paths: Paths,
    model: MockModel,
    turns: Vec<(Value, Vec<Value>, Vec<Value>)>,
    _root: tempfile::TempDir,
}

/// The agent with its data, home and config directories inside `root`, started in the
/// workspace, stderr to `root/stderr.log`; `env` is set last.
fn spawn(paths: &Paths, args: Vec<String>, retries: bool, env: &[(&str, &str)]) -> Acp {
    let path = |name: &str| paths.root.join(name).display().to_string();
    let mut args = args;
    args.extend(["--data-dir".into(), path("data")]);
    let (home, config, state) = (
        paths.home.display().to_string(),
        path("config"),
        path("state"),
    );
    let mut envs = vec![
        ("HOME", home.as_str()),
        ("XDG_CONFIG_HOME", config.as_str()),
        ("XDG_DATA_HOME", state.as_str()),
    ];
    if !retries {
        envs.push(("AGENT_SDK_MAX_RETRIES", "0"));
    }
    envs.extend(env.iter().copied());
    Acp::spawn_in(
        Some(&paths.ws),
        &args,
        &envs,
        Some(&paths.root.join("stderr.log")),
    )
}

async fn run(name: &str) {
    let (root, paths, scenario, model) = common::scenario(name);
    let key = scenario
        .api_key
        .clone()
        .unwrap_or_else(|| "sk-test-key".into());
    let mut args: Vec<String> = ["--provider", "openai", "--base-url", &model.v1()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let model_id = scenario.model_id.unwrap_or("gpt-test");
    args.extend(["--api-key".into(), key, "--model".into(), model_id.into()]);
    if let Some(hooks) = scenario.write_hooks(&paths.root, "hooks.json") {
        args.extend(["--hooks".into(), hooks.display().to_string()]);
    }
    args.extend(scenario.flags.iter().cloned());
    let mut acp = spawn(&paths, args, false, &scenario.env);
    let mut seen = Observed {
        front_end: Some(FrontEnd::Acp),
        ..Observed::default()
    };
    if scenario.refused() {
        let status = acp.wait_exit().await;
        assert!(!status.success(), "{status:?}");
        assert!(acp.raw.is_empty(), "nothing on stdout: {:?}", acp.raw);
        seen.refusal = Some(scenario_stderr(&paths));
        // The message names the flag.
        let flag = match name.split('_').next() {
            Some("sandbox") => "--sandbox",
            Some("rules") => "--settings",
            _ => "--hooks",
        };
        assert!(
            scenario_stderr(&paths).contains(flag),
            "{}",
            scenario_stderr(&paths)
        );
        seen.requests = model.requests();
        scenario.check(&paths, &seen);
        return;
    }
    acp.initialize().await;
    let cwd = match &scenario.cwd {
        Some(sub) => paths.ws.join(sub),
        None => paths.ws.clone(),
    };
    let sid = acp.new_session(&cwd).await;
    let mode = if scenario.approve { "build" } else { "yolo" };
    acp.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": mode}),
    )
    .await;
    let mut run = Run {
        acp,
        sid,
        paths,
        model,
        turns: Vec::new(),
        _root: root,
    };
    for prompt in &scenario.prompts {
        let id = run
            .acp
            .request(
                "session/prompt",
                json!({"sessionId": run.sid, "prompt": [{"type": "text", "text": prompt.text}]}),
            )
            .await;
        if !prompt.interrupt_when.is_empty() {
            prompt.running(&run.paths).await;
            run.acp
                .send(json!({"method": "session/cancel", "params": {"sessionId": run.sid}}))
                .await;
        }
        let (reply, updates, asked) = run.acp.turn(id, "allow_once").await;
        assert!(reply.get("result").is_some(), "{reply}");
        seen.turns
            .push(turn(&reply, &updates, run.model.request_count()));
        run.turns.push((reply, updates, asked));
    }
    expect(name, &mut run).await;
    assert!(run.acp.shutdown_keep_raw().await, "{name}: unclean exit");
    seen.stderr = scenario_stderr(&run.paths);
    seen.requests = run.model.requests();
    scenario.check(&run.paths, &seen);
    if name == "api_key_redacted_from_a_tool_error" {
        let stdout = run.acp.raw.join("\n");
        assert!(
            !stdout.contains(scenarios::SECRET),
            "the key reached stdout"
        );
    }
}

/// The text of the updates of `kind` (`agent_message_chunk`, `agent_thought_chunk`).
fn kinds(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn turn(reply: &Value, updates: &[Value], requests: usize) -> Turn {
    let stop = &reply["result"]["stopReason"];
    let tools = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .filter_map(|u| u["toolCallId"].as_str())
        .map(|id| {
            let last = *of_call(updates, id).last().expect("updates");
            ToolOutcome {
                id: id.into(),
                ok: last["status"] == "completed",
                text: content_text(last),
                block: last["_meta"]["block"]["code"].as_str().map(str::to_string),
            }
        })
        .collect();
    let usage = &reply["result"]["_meta"]["usage"];
    Turn {
        tools,
        said: Said::All(kinds(updates, "agent_message_chunk")),
        usage: usage["inputTokens"]
            .as_u64()
            .zip(usage["outputTokens"].as_u64()),
        blocked: *stop == "refusal",
        cancelled: *stop == "cancelled",
        requests,
    }
}

/// What a client loading the session sees of call `call` (the result the model is sent):
/// its status and text.
async fn replayed_result(run: &mut Run, call: &str) -> (String, String) {
    run.acp.backlog.clear();
    let loaded = run
        .acp
        .call_raw(
            "session/load",
            json!({"sessionId": run.sid, "cwd": run.paths.ws, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let last = run
        .acp
        .backlog
        .iter()
        .rfind(|m| {
            m["params"]["update"]["toolCallId"] == call
                && m["params"]["update"]["sessionUpdate"] == "tool_call_update"
        })
        .map(|m| m["params"]["update"].clone())
        .unwrap_or_default();
    (
        last["status"].as_str().unwrap_or_default().to_string(),
        content_text(&last),
    )
}

/// The slash commands of the scenario's workspace, as ACP lists them: announced once after
/// `session/new` (the prompt changed nothing), again after `session/load`'s response.
async fn expect_commands(run: &mut Run, updates: &[Value]) {
    let announced: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "available_commands_update")
        .collect();
    assert_eq!(announced.len(), 1, "{updates:?}");
    let check = |list: &Value| {
        let names: Vec<&str> = list
            .as_array()
            .expect("availableCommands")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["fix", "plain", "review", "rewind"], "{list}");
        // The project's review shadows the user's; a file without frontmatter is described
        // as Zero describes it; a command taking arguments has an input hint.
        assert_eq!(list[2]["description"], "Review a file for bugs");
        assert_eq!(list[2]["input"]["hint"], "<file>");
        assert_eq!(list[1]["description"], "User command: /plain");
        assert!(list[1].get("input").is_none(), "{list}");
        assert_eq!(list[0]["description"], "Fix the failing test");
        assert_eq!(list[0]["input"]["hint"], "arguments");
    };
    check(&announced[0]["availableCommands"]);
    run.acp.backlog.clear();
    let loaded = run
        .acp
        .call_raw(
            "session/load",
            json!({"sessionId": run.sid, "cwd": run.paths.ws, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let is_list = |m: &Value| {
        m["method"] == "session/update"
            && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
    };
    assert!(
        !run.acp.backlog.iter().any(is_list),
        "announced before the session/load response"
    );
    let update = run.acp.next_matching(is_list).await;
    assert_eq!(update["params"]["sessionId"], run.sid.as_str());
    check(&update["params"]["update"]["availableCommands"]);
}

/// ACP's own expectations of a scenario, the agent still running.
async fn expect(name: &str, run: &mut Run) {
    let (reply, updates, asked) = run.turns[0].clone();
    let stop = reply["result"]["stopReason"].clone();
    let texts = |id: &str| -> Vec<String> {
        of_call(&updates, id)
            .iter()
            .map(|u| content_text(u))
            .collect()
    };
    match name {
        "rules_from_settings_allow_and_deny_each_call" => {
            // `_meta.permission` on the calls a rule decided without asking the client.
            let rule_of = |id: &str| {
                of_call(&updates, id)
                    .iter()
                    .find_map(|u| u["_meta"]["permission"].as_object().cloned())
                    .unwrap_or_else(|| panic!("no _meta.permission on {id}: {updates:?}"))
            };
            let a1 = rule_of("a1");
            assert_eq!(a1["rule"], "Bash(echo allowed:*)", "{a1:?}");
            assert_eq!(a1["action"], "allow");
            assert!(a1["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("settings ")));
            assert_eq!(rule_of("d1")["action"], "deny");
            assert!(asked.is_empty(), "yolo asks nothing: {asked:?}");
        }
        "budget_cap_ends_the_run_after_the_first_call" => {
            // ACP has no spend stop: the nearest, `max_turn_requests`, with the cap's words
            // as a thought.
            assert_eq!(stop, "max_turn_requests", "{reply}");
            let thought = kinds(&updates, "agent_thought_chunk");
            assert!(thought.contains("spend cap of $0.01 reached"), "{thought}");
        }
        "fallback_model_answers_when_the_model_is_overloaded" => {
            let fallback = updates
                .iter()
                .find_map(|u| u["_meta"]["modelFallback"].as_object().cloned())
                .unwrap_or_else(|| panic!("no _meta.modelFallback: {updates:?}"));
            assert_eq!(fallback["from"], "gpt-test");
            assert_eq!(fallback["to"], scenarios::FALLBACK_MODEL);
            assert_eq!(stop, "end_turn", "{reply}");
        }
        "hook_pre_tool_use_vetoes_bash" => {
            assert!(asked.is_empty(), "a vetoed call asks nothing: {asked:?}");
            let call = of_call(&updates, "b1");
            let decided = call
                .iter()
                .find(|u| u["_meta"]["hook"].is_object())
                .unwrap_or_else(|| panic!("no hook decision in {call:?}"));
            assert_eq!(decided["status"], "failed");
            assert_eq!(decided["_meta"]["hook"]["event"], "before_tool");
            assert_eq!(decided["_meta"]["hook"]["outcome"], "deny");
            assert!(content_text(decided).contains("no shell in this repo"));
            assert!(!call.iter().any(|u| u["status"] == "in_progress"), "ran");
            // What the model was sent for the call: the veto with the reason.
            let (status, text) = replayed_result(run, "b1").await;
            assert_eq!(status, "failed");
            assert!(text.contains("blocked by hook") && text.contains("no shell in this repo"));
        }
        "hook_post_tool_use_context_reaches_the_model" => {
            let call = of_call(&updates, "r1");
            let hook = call
                .iter()
                .find(|u| u["_meta"]["hook"].is_object())
                .unwrap_or_else(|| panic!("no hook decision in {call:?}"));
            assert_eq!(hook["_meta"]["hook"]["event"], "after_tool");
            let (_, sent) = replayed_result(run, "r1").await;
            assert!(sent.contains("checked by the audit hook"), "{sent}");
        }
        "hook_user_prompt_submit_blocks_one_prompt" => {
            let said = kinds(&updates, "agent_message_chunk");
            assert!(
                said.contains("blocked by hook") && said.contains("not that topic"),
                "{said}"
            );
        }
        "hook_stop_forces_one_continuation" => {
            let thought = kinds(&updates, "agent_thought_chunk");
            assert!(
                thought.contains("(stop): continue") && thought.contains("run the tests first"),
                "{thought}"
            );
        }
        "hook_that_hangs_or_is_missing_fails_open" => {
            // Claude Code's rule: a hook that times out or cannot start does not block.
            let failed = of_call(&updates, "b1")
                .into_iter()
                .filter(|u| u["_meta"]["hook"]["outcome"] == "failed")
                .count();
            assert_eq!(failed, 2, "{updates:?}");
        }
        "sandbox_refuses_a_write_outside_the_workspace" => {
            assert!(texts("w1")
                .iter()
                .any(|t| t.contains("Blocked by the sandbox")));
        }
        "sandbox_off_allows_it" => {
            let last = *of_call(&updates, "w1").last().expect("updates");
            assert!(last.get("_meta").is_none(), "{last}");
        }
        "task_runs_a_child_and_shows_its_progress" => {
            assert!(asked.is_empty(), "{asked:?}");
            let call = of_call(&updates, "t1");
            assert_eq!(call[0]["sessionUpdate"], "tool_call");
            assert_eq!(call[0]["kind"], "think");
            assert_eq!(call[0]["title"], "explorer: find the tests");
            let started = call
                .iter()
                .find(|u| u["_meta"]["subagent"].is_object())
                .unwrap_or_else(|| panic!("no sub-agent start in {call:?}"));
            assert_eq!(started["_meta"]["subagent"]["name"], "explorer");
            let progress = texts("t1");
            assert!(
                progress.iter().any(|p| p.contains("→ Read notes.txt")),
                "{progress:?}"
            );
            assert!(
                progress.iter().any(|p| p.contains("✓ read_file")),
                "{progress:?}"
            );
        }
        "task_child_asks_permission_in_its_own_name" => {
            let task_id = of_call(&updates, "t1")
                .iter()
                .find_map(|u| u["_meta"]["subagent"]["taskId"].as_str())
                .expect("task id")
                .to_string();
            assert_eq!(asked.len(), 1, "{asked:?}");
            let params = &asked[0]["params"];
            assert_eq!(params["sessionId"], json!(run.sid));
            assert_eq!(
                params["toolCall"]["toolCallId"],
                json!(format!("{task_id}/w1"))
            );
            assert_eq!(params["toolCall"]["kind"], "execute");
        }
        "task_explorer_is_refused_a_write_and_usage_adds_up" => {
            assert!(asked.is_empty(), "{asked:?}");
            assert!(texts("t1").iter().any(|p| p.contains("write_file")));
            // The model got the refusal as the child's tool result.
            let (status, text) = replayed_result(run, "t1").await;
            assert_eq!(status, "completed");
            assert!(text.contains("I may not write."), "{text}");
            assert_eq!(reply["result"]["_meta"]["usage"]["totalTokens"], 61);
        }
        "task_interrupted_mid_child_bash_leaves_no_process" => {
            assert_eq!(stop, "cancelled", "{reply}");
            let last = *of_call(&updates, "t1").last().expect("updates");
            assert_eq!(last["status"], "failed", "{last}");
        }
        "task_two_in_the_background_read_with_task_output" => {
            for call in ["t1", "t2"] {
                let updates = of_call(&updates, call);
                assert!(
                    updates
                        .iter()
                        .any(|u| u["_meta"]["subagent"]["background"] == true),
                    "{updates:?}"
                );
            }
        }
        "context_auto_compaction" => {
            let usage: Vec<&Value> = updates
                .iter()
                .filter(|u| u["sessionUpdate"] == "usage_update")
                .collect();
            assert!(usage.len() >= 3, "{usage:?}");
            assert_eq!(usage[0]["used"], 120);
            assert_eq!(usage[0]["size"], 1000);
            assert_eq!(usage[1]["used"], 140);
            let thought = kinds(&updates, "agent_thought_chunk");
            assert!(
                thought.contains("Compacting the context (auto)"),
                "{thought}"
            );
            // "Context compacted (auto): 920 → 1 024 tokens.": from what the last count said.
            let compacted = thought
                .lines()
                .find_map(|l| l.strip_prefix("Context compacted (auto): "))
                .unwrap_or_else(|| panic!("{thought}"));
            let before: u64 = compacted
                .split(" → ")
                .next()
                .map(|n| n.replace(' ', ""))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{compacted}"));
            assert!(before >= 920, "{compacted}");
            assert!(compacted.ends_with(" tokens."), "{compacted}");
        }
        "context_auto_compact_off_never_compacts" => {
            let thought = kinds(&updates, "agent_thought_chunk");
            assert!(!thought.contains("Compacting the context"), "{thought}");
        }
        "project_slash_command_expands_where_the_protocol_has_commands" => {
            expect_commands(run, &updates).await;
        }
        _ => {}
    }
    // An interrupted turn ends `cancelled`, the spend cap's `max_turn_requests`.
    let ends_otherwise = [
        "task_interrupted_mid_child_bash_leaves_no_process",
        "budget_cap_ends_the_run_after_the_first_call",
    ]
    .contains(&name);
    let blocked = name == "hook_user_prompt_submit_blocks_one_prompt";
    for (reply, _, _) in &run.turns[usize::from(blocked)..] {
        if !ends_otherwise {
            assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
        }
    }
}

test_support::scenario_tests!(async run);

// ---------------------------------------------------------------------------------------------
// Only ACP: the scripted model's (fictitious) prices as the session's cost
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_update_carries_the_sessions_growing_cost() {
    let root = tempfile::tempdir().expect("tempdir");
    let paths = Paths::new(
        root.path(),
        &root.path().join("ws"),
        &root.path().join("home"),
    );
    std::fs::write(paths.ws.join("a.txt"), "a\n").expect("write");
    let read = |id: &str| json!({"tool_call": {"id": id, "name": "read_file", "args": ["{\"path\": \"a.txt\"}"]}});
    let script: PathBuf = write_script(
        root.path(),
        json!([
            {"steps": [read("r1"), {"usage": {"input": 300, "output": 20}}]},
            {"steps": [read("r2"), {"usage": {"input": 1500, "output": 100}}]},
            {"steps": [{"text": "Done."}, {"usage": {"input": 200, "output": 5}}]}
        ]),
    );
    let args = vec![
        "--provider".into(),
        "scripted".into(),
        "--script".into(),
        script.display().to_string(),
        "--context-window".into(),
        "2000".into(),
    ];
    let mut acp = spawn(&paths, args, true, &[]);
    acp.initialize().await;
    let sid = acp.new_session(&paths.ws).await;
    let (reply, updates, _) = acp.prompt_turn(&sid, "read it twice", "reject_once").await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
    let usage: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .collect();
    assert!(usage.len() >= 3, "{usage:?}");
    assert_eq!(usage[0]["used"], 320);
    assert_eq!(usage[0]["size"], 2000);
    assert_eq!(usage[1]["used"], 1600);
    let costs: Vec<f64> = usage
        .iter()
        .filter_map(|u| u["cost"]["amount"].as_f64())
        .collect();
    assert_eq!(costs.len(), usage.len(), "{usage:?}");
    assert!(
        costs.windows(2).all(|w| w[0] <= w[1]) && costs[0] > 0.0,
        "{costs:?}"
    );
    assert_eq!(usage[0]["cost"]["currency"], "USD");
    assert!(acp.shutdown().await);
}
