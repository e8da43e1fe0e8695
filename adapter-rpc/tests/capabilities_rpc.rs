//! The capability scenarios of `test_support::scenarios` (hooks, the OS sandbox, sub-agents,
//! the context budget, a key kept out of tool errors) through `adapter-rpc rpc` on the mock
//! model: one process per scenario, its facts checked from zut's frames, then zut's own
//! expectations ([`expect_live`], [`expect_after`]). Below them, what only this front end
//! has: SIGTERM/SIGINT and the session-end hooks, and the tools without `Task`.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use common::*;
use serde_json::{json, Value};
use test_support::scenarios::{self, FrontEnd, Observed, Paths, Said, Scenario, ToolOutcome, Turn};
use test_support::MockModel;

/// A finished or live run of one scenario.
struct Run {
    rpc: Rpc,
    model: MockModel,
    paths: Paths,
    /// The frames of each prompt, up to its `done`.
    turns: Vec<Vec<Value>>,
    _root: tempfile::TempDir,
}

async fn run(name: &str) {
    let root = tempfile::tempdir().expect("root");
    let ws = tempfile::tempdir().expect("workspace");
    let paths = Paths::new(root.path(), ws.path(), &root.path().join("home"));
    let mut scenario = scenarios::build(name, &paths);
    scenario.write_files(&paths);
    let model = MockModel::start(std::mem::take(&mut scenario.model));
    let mut args = openai_args(&model.v1());
    if let Some(key) = &scenario.api_key {
        let at = args
            .iter()
            .position(|a| a == "--api-key")
            .expect("--api-key");
        args[at + 1] = key.clone();
    }
    if let Some(hooks) = scenario.write_hooks(&paths.root, "hooks.json") {
        args.extend(["--hooks".into(), hooks.display().to_string()]);
    }
    args.extend(scenario.flags.iter().cloned());
    if let Some(model) = scenario.model_id {
        let at = args.iter().position(|a| a == "--model").expect("--model");
        args[at + 1] = model.into();
    }
    let home = paths.home.display().to_string();
    let config = paths.root.join("config").display().to_string();
    let zut_home = paths.root.join("zut").display().to_string();
    let rpc = Rpc::spawn(Opts {
        args,
        env: [
            ("AGENT_SDK_MAX_RETRIES", "0"),
            ("HOME", &home),
            ("XDG_CONFIG_HOME", &config),
            ("ZUT_HOME", &zut_home),
        ]
        .into_iter()
        .chain(scenario.env.iter().copied())
        .collect(),
        dir: Some(ws),
        cwd: scenario.cwd.as_ref().map(|sub| paths.ws.join(sub)),
        ..Opts::default()
    });
    let mut run = Run {
        rpc,
        model,
        paths,
        turns: Vec::new(),
        _root: root,
    };
    let mut seen = Observed {
        front_end: Some(FrontEnd::Rpc),
        ..Observed::default()
    };
    if scenario.refused() {
        let rest = run.rpc.rest().await;
        assert!(rest.is_empty(), "stdout stays empty: {rest:?}");
        let status = run.rpc.exit().await;
        assert_eq!(status.code(), Some(1), "{status:?}");
        seen.refusal = Some(run.rpc.stderr().await);
    } else {
        prompts(&mut run, &scenario, &mut seen).await;
        expect_live(name, &mut run).await;
        run.rpc.close();
        run.rpc.rest().await;
        assert!(run.rpc.exit().await.success(), "{name}: unclean exit");
        seen.stderr = run.rpc.stderr().await;
    }
    seen.requests = run.model.requests();
    scenario.check(&run.paths, &seen);
    expect_after(name, &run, &seen);
}

/// Sends the prompts, interrupting with `abort` where the scenario says; reads each turn.
async fn prompts(run: &mut Run, scenario: &Scenario, seen: &mut Observed) {
    let mut cumulative = (0, 0);
    for (i, prompt) in scenario.prompts.iter().enumerate() {
        let id = format!("p{i}");
        let started = run
            .rpc
            .call(json!({"type": "prompt", "message": prompt.text}), &id)
            .await;
        assert_eq!(started["data"]["started"], true, "{started}");
        if !prompt.interrupt_when.is_empty() {
            prompt.running(&run.paths).await;
            run.rpc.send(json!({"id": "abort", "type": "abort"})).await;
        }
        let frames = run.rpc.until_type("done").await;
        let mut turn = Turn {
            tools: of_type(&frames, "tool_result")
                .into_iter()
                .map(|f| ToolOutcome {
                    id: f["id"].as_str().unwrap_or_default().into(),
                    ok: f["is_error"] == false,
                    text: result_text(f),
                    block: f["block"]["code"].as_str().map(str::to_string),
                })
                .collect(),
            said: Said::All(answer(&frames)),
            blocked: types(&events(&frames)) == ["error", "done"],
            requests: run.model.request_count(),
            ..Turn::default()
        };
        if let Some(last) = of_type(&frames, "usage").last() {
            let now = (
                last["cumulative"]["input"].as_u64().unwrap_or(0),
                last["cumulative"]["output"].as_u64().unwrap_or(0),
            );
            turn.usage = Some((now.0 - cumulative.0, now.1 - cumulative.1));
            cumulative = now;
        }
        seen.turns.push(turn);
        run.turns.push(frames);
    }
}

async fn state(rpc: &mut Rpc, id: &str) -> Value {
    let response = rpc.call(json!({"type": "get_state"}), id).await;
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

fn answer(frames: &[Value]) -> String {
    of_type(frames, "text_delta")
        .iter()
        .filter_map(|f| f["delta"].as_str())
        .collect()
}

/// The text of the `tool_progress` lines of call `id`, concatenated (they stream).
fn progress_of(frames: &[Value], id: &str) -> String {
    of_type(frames, "tool_progress")
        .iter()
        .filter(|f| f["id"] == id)
        .filter_map(|f| f["text"].as_str())
        .collect()
}

/// zut's own expectations while the process still runs (`get_state`, the frames).
async fn expect_live(name: &str, run: &mut Run) {
    let frames = run.turns[0].clone();
    match name {
        "budget_cap_ends_the_run_after_the_first_call" => {
            // zut's form: the cap's `error`, then `done`.
            let kinds = types(&events(&frames));
            assert_eq!(kinds[kinds.len() - 2..], ["error", "done"], "{kinds:?}");
            let error = of_type(&frames, "error")[0]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(error.starts_with("spend cap of $0.01 reached"), "{error}");
        }
        "fallback_model_answers_when_the_model_is_overloaded" => {
            let fallback = of_type(&frames, "model_fallback");
            assert_eq!(fallback.len(), 1, "{frames:#?}");
            assert_eq!(fallback[0]["from"], "gpt-test");
            assert_eq!(fallback[0]["to"], scenarios::FALLBACK_MODEL);
        }
        "hook_pre_tool_use_vetoes_bash" => {
            // The veto is the call's tool_result (zut's place for it); it never executed.
            assert!(of_type(&frames, "tool_execution_started").is_empty());
            assert!(of_type(&frames, "error").is_empty(), "{frames:#?}");
            let reason = result_text(result_of(&frames, "b1"));
            let requests = run.model.requests();
            assert_eq!(requests[1].tool_message("b1"), Some(reason));
        }
        "hook_zero_after_tool_output_reaches_the_model" => {
            let result = result_of(&frames, "r1");
            assert!(
                result_text(result).ends_with("Hook output:\nformatted 2 files"),
                "{result}"
            );
            let sent = run.model.requests()[1].tool_message("r1").expect("sent");
            assert!(sent.ends_with("formatted 2 files"), "{sent}");
        }
        "hook_user_prompt_submit_blocks_one_prompt" => {
            let message = of_type(&frames, "error")[0]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert!(message.contains("not that topic"), "{message}");
        }
        "hook_stop_forces_one_continuation" => {
            let stops: Vec<&str> = of_type(&frames, "turn_end")
                .iter()
                .filter_map(|f| f["stop"].as_str())
                .collect();
            assert_eq!(stops, ["continue", "end"], "{frames:#?}");
            let last = run.model.requests()[1].json()["messages"]
                .as_array()
                .and_then(|m| m.last().cloned())
                .expect("messages");
            assert!(last.to_string().contains("run the tests first"), "{last}");
        }
        "session_hooks_run_at_start_and_end" => {
            assert!(!run.paths.ws.join("end.json").exists(), "the session ended");
        }
        "sandbox_refuses_a_write_outside_the_workspace" => {
            let state = state(&mut run.rpc, "s").await;
            assert_eq!(state["sandbox"]["mode"], "workspace-write", "{state}");
            assert_eq!(state["sandbox"]["network"], "deny");
            assert_eq!(state["sandbox"]["enforced"], "full", "{state}");
            let block = &result_of(&frames, "w1")["block"];
            assert_eq!(block["tool_name"], "bash");
            assert_eq!(block["recoverable"], true);
            assert!(block["reason"].as_str().is_some_and(|r| !r.is_empty()));
        }
        "sandbox_off_allows_it" => {
            assert_eq!(state(&mut run.rpc, "s").await["sandbox"]["mode"], "off");
        }
        "task_runs_a_child_and_shows_its_progress" => {
            let tools = state(&mut run.rpc, "s").await["tools"].clone();
            assert!(
                tools.as_array().expect("tools").contains(&json!("Task")),
                "{tools}"
            );
            assert_eq!(of_type(&frames, "tool_call")[0]["name"], "Task");
            for line in of_type(&frames, "tool_progress") {
                assert_eq!(line["id"], "t1", "{line}");
            }
            let progress = progress_of(&frames, "t1");
            for shown in [
                "[explorer] started: find the tests",
                "CHILD-ANSWER tests live in tests/",
                "[explorer] finished",
            ] {
                assert!(progress.contains(shown), "{progress}");
            }
        }
        "task_explorer_is_refused_a_write_and_usage_adds_up" => {
            let progress = progress_of(&frames, "t1");
            assert!(progress.contains("write_file"), "{progress}");
            assert!(progress.contains("unknown tool: write_file"), "{progress}");
            let result = result_of(&frames, "t1");
            assert!(
                result_text(result).ends_with("I may not write."),
                "{result}"
            );
            // The parent's calls are its `usage` events; the cumulative figures hold the
            // child's.
            let turns: Vec<(u64, u64)> = of_type(&frames, "usage")
                .iter()
                .map(|u| {
                    let n = |k: &str| u[k].as_u64().unwrap_or(0);
                    (n("input"), n("output"))
                })
                .collect();
            assert_eq!(turns, [(10, 5), (20, 4)], "{frames:#?}");
            let total = state(&mut run.rpc, "s").await["usage"].clone();
            assert_eq!(
                (&total["input"], &total["output"]),
                (&json!(48), &json!(13))
            );
        }
        "task_child_that_fails_is_the_task_error" => {
            let text = result_text(result_of(&frames, "t1"));
            assert!(text.contains("specialist explorer failed"), "{text}");
            assert!(of_type(&frames, "error").is_empty(), "{frames:#?}");
        }
        "task_interrupted_mid_child_bash_leaves_no_process" => {
            let aborted = frames
                .iter()
                .find(|f| f["type"] == "response" && f["id"] == "abort")
                .expect("the abort is answered");
            assert_eq!(aborted["success"], true, "{aborted}");
            assert_eq!(result_of(&frames, "t1")["is_error"], true);
        }
        "task_two_in_the_background_read_with_task_output" => {
            // The children's lines are progress of their launching calls, never top-level
            // text.
            assert!(progress_of(&frames, "t1").contains("alpha result"));
            assert!(progress_of(&frames, "t2").contains("beta result"));
            let usage = of_type(&frames, "usage");
            let last = &usage[usage.len() - 1]["cumulative"];
            assert_eq!(last["input"], 10 + 10 + 10 + 3 + 3, "{last}");
        }
        "context_auto_compaction" => {
            let compact = of_type(&frames, "compact_done");
            assert_eq!(compact.len(), 1, "{frames:#?}");
            assert_eq!(
                compact[0]["summary"],
                "SUMMARY: the workspace was listed three times."
            );
            // Inside the prompt, before its final model call.
            let at = |kind: &str| frames.iter().position(|f| f["type"] == kind);
            assert!(at("compact_done") < frames.iter().rposition(|f| f["type"] == "turn_start"));
            // `usage` is unchanged: one per model call of the prompt proper.
            assert!(of_type(&frames, "usage").len() >= 3);
            let state = state(&mut run.rpc, "s").await;
            let context = &state["context"];
            assert_eq!(context["window"], 1000, "{state}");
            assert!(context["used"].as_u64().is_some_and(|u| u > 0), "{state}");
            assert!(context["percent"].as_f64().is_some(), "{state}");
        }
        "context_auto_compact_off_never_compacts" => {
            assert!(of_type(&frames, "compact_done").is_empty(), "{frames:#?}");
            let context = state(&mut run.rpc, "s").await["context"].clone();
            assert_eq!(context["window"], 1000, "{context}");
            assert!(
                context["percent"].as_f64().is_some_and(|p| p > 90.0),
                "{context}"
            );
        }
        _ => {}
    }
}

/// zut's own expectations once the process is gone.
fn expect_after(name: &str, run: &Run, seen: &Observed) {
    match name {
        "hooks_file_that_does_not_exist_refuses_to_start"
        | "sandbox_bad_value_refuses_to_start"
        | "rules_settings_with_a_bad_rule_refuse_to_start" => {
            let message = seen.refusal.as_deref().unwrap_or_default();
            let flag = match name.split('_').next() {
                Some("hooks") => "--hooks",
                Some("rules") => "--settings",
                _ => "--sandbox",
            };
            assert!(message.contains(flag), "{message}");
        }
        "session_hooks_run_at_start_and_end" => {
            let end = read_payload(&run.paths.ws.join("end.json"));
            assert_eq!(end["reason"], "prompt_input_exit", "{end}");
        }
        "api_key_redacted_from_a_tool_error" => {
            // Only the model's own words (its tool call) may carry the text it chose.
            for line in &run.rpc.pipe.raw {
                let frame: Value = serde_json::from_str(line).expect("json");
                if matches!(frame["type"].as_str(), Some("tool_result" | "error")) {
                    assert!(!line.contains(scenarios::SECRET), "{line}");
                }
            }
        }
        _ => {}
    }
}

test_support::scenario_tests!(async run);

// ---------------------------------------------------------------------------------------------
// Only zut: SIGTERM/SIGINT (the process dies of the signal, after the session-end hooks and
// the turn's end) and the tool list without `Task`.
// ---------------------------------------------------------------------------------------------

fn read_payload(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[tokio::test]
async fn sigterm_runs_the_session_end_hooks_before_the_process_dies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hooks = dir.path().join("settings.json");
    let settings = json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "cat > start.json"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > end.json"}]}]
    }});
    std::fs::write(&hooks, settings.to_string()).expect("write");
    let root = dir.path().to_path_buf();
    let mut rpc = Rpc::spawn(Opts {
        script: Some(json!([text_turn("unused")])),
        args: vec!["--hooks".into(), hooks.display().to_string()],
        dir: Some(dir),
        ..Opts::default()
    });
    // Up and answering: then a signal while idle.
    state(&mut rpc, "s").await;
    rpc.kill(libc::SIGTERM);
    assert!(rpc.rest().await.is_empty());
    let status = rpc.exit().await;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let end = read_payload(&root.join("end.json"));
    assert_eq!(end["hook_event_name"], "SessionEnd", "{end}");
    assert_eq!(end["reason"], "other", "{end}");
}

async fn signal_mid_turn(signal: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("bash.pid");
    let command = format!("sleep 300 & echo $$ > {}; wait", pid_file.display());
    let turns = json!([
        {"steps": [{"tool_call": {"id": "b1", "name": "bash",
            "args": [json!({"command": command}).to_string()]}}]},
        text_turn("never")
    ]);
    let mut rpc = Rpc::spawn(Opts {
        script: Some(turns),
        dir: Some(dir),
        ..Opts::default()
    });
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    // A second prompt queued behind the first never starts.
    rpc.send(json!({"id": "q", "type": "prompt", "message": "later"}))
        .await;
    rpc.until(|f| f["type"] == "tool_execution_started").await;
    let pgid = test_support::procs::pid_in(&pid_file, WAIT).await;
    rpc.kill(signal);
    let rest = rpc.rest().await;
    let result = result_of(&rest, "b1");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(types(&rest).last().map(String::as_str), Some("done"));
    assert!(
        !rest.iter().any(|f| f["id"] == "q"),
        "the queued prompt was answered: {rest:#?}"
    );
    let status = rpc.exit().await;
    assert_eq!(status.signal(), Some(signal), "{status:?}");
    assert_gone(pgid, "the bash call").await;
}

#[tokio::test]
async fn sigterm_mid_turn_writes_the_turns_end_kills_the_tool_and_dies_of_sigterm() {
    signal_mid_turn(libc::SIGTERM).await;
}

#[tokio::test]
async fn sigint_mid_turn_does_the_same() {
    signal_mid_turn(libc::SIGINT).await;
}

#[tokio::test]
async fn without_tools_there_is_no_task_tool() {
    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--no-tools".into()],
        ..Opts::default()
    });
    assert_eq!(state(&mut rpc, "s").await["tools"], json!([]));
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());

    let mut rpc = Rpc::spawn(Opts {
        args: vec!["--tools".into(), "read,Task".into()],
        ..Opts::default()
    });
    assert_eq!(
        state(&mut rpc, "s").await["tools"],
        json!(["read", "Task", "TaskOutput", "TaskStop"])
    );
    rpc.close();
    rpc.rest().await;
    assert!(rpc.exit().await.success());
}
