//! The capability scenarios of `test_support::scenarios` (hooks, the OS sandbox,
//! specialists with child sessions, the context budget, a key kept out of tool errors)
//! through `exec -o stream-json` on the mock model: one `exec` per prompt, the scenario's
//! facts checked from the JSONL lines (and, for the usage of specialists, the session's
//! rollups), then Zero's own expectations ([`expect`]). What only Zero has (its hooks
//! directory, trust, `--output-schema`, `--list-tools`, specialist errors) is in
//! `tests/capabilities_zero.rs`; MCP is in `tests/mcp.rs`.

mod common;

use common::{session_events, session_meta, Piped, Run, Sandbox, RUN_TIMEOUT};
use serde_json::Value;
use test_support::scenarios::{
    self, FrontEnd, Observed, Paths, Prompt, Said, Scenario, ToolOutcome, Turn,
};
use test_support::MockModel;

/// The key the harness gives unless a scenario names its own.
const KEY: &str = "sk-capability-tests-0123456789";

/// What one scenario's runs left: every `exec` of it, in order.
struct Runs {
    sb: Sandbox,
    paths: Paths,
    model: MockModel,
    runs: Vec<Run>,
}

fn run(name: &str) {
    let sb = Sandbox::new();
    // HOME of the binary is the sandbox's root, outside the workspace.
    let paths = Paths::new(sb.dir.path(), &sb.work(), sb.dir.path());
    let mut scenario = scenarios::build(name, &paths);
    scenario.write_files(&paths);
    let model = MockModel::start(std::mem::take(&mut scenario.model));
    let mut runs = Runs {
        sb,
        paths,
        model,
        runs: Vec::new(),
    };
    let mut seen = Observed {
        front_end: Some(FrontEnd::Exec),
        ..Observed::default()
    };
    if scenario.refused() {
        let run = exec(&runs, &scenario, "hi", None);
        assert_ne!(run.code, 0, "{}", run.stdout);
        assert_eq!(run.types(), ["error", "run_end"], "no run_start");
        let message = run.of("error")[0]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        seen.refusal = Some(format!("{message}\n{}", run.stderr));
        runs.runs.push(run);
    }
    for prompt in &scenario.prompts {
        let interrupt = (!prompt.interrupt_when.is_empty()).then_some(prompt);
        let run = exec(&runs, &scenario, &prompt.text, interrupt);
        seen.turns.push(turn(&runs, &run));
        seen.stderr.push_str(&run.stderr);
        runs.runs.push(run);
    }
    seen.requests = runs.model.requests();
    scenario.check(&runs.paths, &seen);
    expect(name, &runs);
}

/// `exec -o stream-json` on the mock model with the scenario's hooks (as a file in the
/// workspace, given relative: it resolves against the workspace) and flags; `interrupt`
/// sends SIGINT once the processes that prompt waits for run.
fn exec(runs: &Runs, scenario: &Scenario, prompt: &str, interrupt: Option<&Prompt>) -> Run {
    let url = runs.model.v1();
    let key = scenario.api_key.clone().unwrap_or_else(|| KEY.into());
    let mut args: Vec<String> = common::openai_exec(&url, Some(&key))
        .iter()
        .chain(autonomy(scenario.name))
        .map(|s| s.to_string())
        .collect();
    if scenario.write_hooks(&runs.paths.ws, "hooks.json").is_some() {
        args.extend(["--hooks".into(), "hooks.json".into()]);
    }
    args.extend(scenario.flags.iter().cloned());
    if let Some(model) = scenario.model_id {
        args.extend(["--model".into(), model.into()]);
    }
    args.push(prompt.into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = runs.sb.command(&args);
    cmd.env("AGENT_SDK_MAX_RETRIES", "0");
    for (name, value) in &scenario.env {
        cmd.env(name, value);
    }
    if let Some(sub) = &scenario.cwd {
        cmd.current_dir(runs.paths.ws.join(sub));
    }
    let Some(interrupt) = interrupt else {
        let run = runs.sb.run_with(cmd, "");
        run.assert_framing();
        return run;
    };
    let child = cmd.spawn_piped();
    interrupt.running_blocking(&runs.paths);
    // SAFETY: signalling the process this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = Run::from(common::wait_output(child, RUN_TIMEOUT));
    run.assert_framing();
    run
}

/// The autonomy a scenario runs at: `--skip-permissions-unsafe` where it runs commands
/// (headless, nothing could allow them), `--auto medium` where it delegates (Zero offers
/// `Task` from there), else Zero's default.
fn autonomy(name: &str) -> &'static [&'static str] {
    const COMMANDS: &[&str] = &[
        "hook_pre_tool_use_vetoes_bash",
        "hook_that_hangs_or_is_missing_fails_open",
        "hook_zero_missing_command_fails_closed_before_a_tool",
        "project_hooks_file_has_no_effect",
        "task_child_asks_permission_in_its_own_name",
        "task_interrupted_mid_child_bash_leaves_no_process",
    ];
    match name {
        _ if COMMANDS.contains(&name) || name.starts_with("sandbox_") => {
            &["--skip-permissions-unsafe"]
        }
        _ if name.starts_with("task_") => &["--auto", "medium"],
        _ => &[],
    }
}

fn session_of(run: &Run) -> Option<String> {
    run.of("run_start")
        .first()
        .and_then(|e| e["sessionId"].as_str())
        .map(str::to_string)
}

/// The `provider_usage` rollups of specialists in the session of `run`.
fn rollups(runs: &Runs, run: &Run) -> Vec<Value> {
    let Some(session) = session_of(run) else {
        return Vec::new();
    };
    session_events(&runs.sb.sessions(), &session)
        .into_iter()
        .filter(|e| e["type"] == "provider_usage" && e["payload"]["source"] == "specialist")
        .collect()
}

fn turn(runs: &Runs, run: &Run) -> Turn {
    let tools = run
        .of("tool_result")
        .iter()
        .map(|r| ToolOutcome {
            id: r["id"].as_str().unwrap_or_default().into(),
            ok: r["status"] == "ok",
            text: r["output"].as_str().unwrap_or_default().into(),
            block: r["block"]["code"].as_str().map(str::to_string),
        })
        .collect();
    let finals = run.of("final");
    let said = match finals.first() {
        Some(f) => Said::Last(f["text"].as_str().unwrap_or_default().into()),
        None => Said::Nothing,
    };
    let blocked = finals
        .iter()
        .all(|f| f["text"].as_str().unwrap_or_default().is_empty())
        && run.of("warning").iter().any(|w| {
            w["message"]
                .as_str()
                .unwrap_or_default()
                .contains("blocked by hook")
        });
    // The parent's usage lines, and the children's tokens rolled up into its session.
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let mut usage = run.of("usage").iter().fold((0, 0), |(i, o), u| {
        (i + n(u, "promptTokens"), o + n(u, "completionTokens"))
    });
    for rollup in rollups(runs, run) {
        usage.0 += n(&rollup["payload"], "promptTokens");
        usage.1 += n(&rollup["payload"], "completionTokens");
    }
    Turn {
        tools,
        said,
        usage: Some(usage),
        blocked,
        cancelled: run
            .of("run_end")
            .first()
            .is_some_and(|e| e["status"] == "interrupted"),
        requests: runs.model.request_count(),
    }
}

/// The first run's parent session id.
fn parent(runs: &Runs) -> String {
    session_of(&runs.runs[0]).expect("session")
}

/// Zero's own expectations of each scenario's runs.
fn expect(name: &str, runs: &Runs) {
    let run = &runs.runs[0];
    let result = |id: &str| {
        run.of("tool_result")
            .into_iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no result {id}: {}", run.stdout))
    };
    match name {
        "rules_from_settings_allow_and_deny_each_call" => {
            // Zero's decisionReason names the rule that decided, allowed or denied.
            let decisions = run.of("permission_decision");
            let reason = |id: &str| {
                decisions
                    .iter()
                    .find(|d| d["id"] == id)
                    .and_then(|d| d["decisionReason"].as_str())
                    .unwrap_or_else(|| panic!("no decision for {id}: {}", run.stdout))
                    .to_string()
            };
            assert!(
                reason("a1").starts_with("permission rule allow Bash(echo allowed:*) (settings "),
                "{}",
                reason("a1")
            );
            assert!(reason("d1").contains("permission rule deny Bash(touch denied:*)"));
            // The compound command was put to nobody: a request, then its error result.
            assert!(run.of("permission_request").iter().any(|r| r["id"] == "a2"));
        }
        "budget_cap_ends_the_run_after_the_first_call" => {
            let kinds = run.types();
            assert_eq!(
                kinds[kinds.len() - 3..],
                ["final", "error", "run_end"],
                "{kinds:?}"
            );
            let error = &run.of("error")[0];
            assert_eq!(error["code"], "budget_exceeded", "{error}");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("spend cap of $0.01 reached"),
                "{message}"
            );
            let end = &run.of("run_end")[0];
            assert_eq!(
                (&end["status"], &end["exitCode"]),
                (&"incomplete".into(), &4.into())
            );
            assert_eq!(run.code, 4);
        }
        "fallback_model_answers_when_the_model_is_overloaded" => {
            let warned = run.of("warning").iter().any(|w| {
                w["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("retrying the call with the fallback model gpt-fallback")
            });
            assert!(warned, "{}", run.stdout);
        }
        "hook_pre_tool_use_vetoes_bash" => {
            // Zero shows a veto only as the call's error result: no permission line.
            assert!(run.of("permission_decision").is_empty(), "{}", run.stdout);
        }
        "hook_user_prompt_submit_blocks_one_prompt" => {
            let warnings = run.of("warning");
            assert_eq!(warnings.len(), 1, "{}", run.stdout);
            let message = warnings[0]["message"].as_str().expect("message");
            assert!(message.contains("blocked by hook"), "{message}");
            assert!(message.contains("not that topic"), "{message}");
            assert_eq!(run.types().last().map(String::as_str), Some("run_end"));
        }
        "project_hooks_file_has_no_effect" => {
            // An untrusted workspace: Zero says why it ignores them.
            assert!(
                run.stderr.contains(
                    "ignoring project hooks/plugins/MCP servers in an untrusted workspace"
                ),
                "{}",
                run.stderr
            );
        }
        "sandbox_refuses_a_write_outside_the_workspace" => {
            let block = &result("w1")["block"];
            assert_eq!(block["toolName"], "bash");
            assert_eq!(block["recoverable"], true);
            let recorded = session_events(&runs.sb.sessions(), &parent(runs));
            let result = recorded
                .iter()
                .find(|e| e["type"] == "tool_result")
                .expect("tool_result recorded");
            assert_eq!(result["payload"]["block"]["code"], "sandbox", "{result}");
        }
        "sandbox_off_allows_it" => {
            // The sandbox off is what was asked: no warning about it.
            assert!(run.of("warning").iter().all(|w| !w["message"]
                .as_str()
                .unwrap_or_default()
                .contains("sandbox")));
        }
        "task_runs_a_child_and_shows_its_progress" => {
            // Zero shows a specialist only as its Task call.
            let calls = run.of("tool_call");
            assert_eq!(calls.len(), 1, "{}", run.stdout);
            assert_eq!(calls[0]["name"], "Task");
            assert_eq!(run.of("tool_result").len(), 1);
        }
        "task_explorer_is_refused_a_write_and_usage_adds_up" => expect_child_session(runs),
        "task_child_that_fails_is_the_task_error" => {
            assert_eq!(result("t1")["name"], "Task");
            let events = session_events(&runs.sb.sessions(), &parent(runs));
            let stop = events
                .iter()
                .find(|e| e["type"] == "specialist_stop")
                .expect("stop recorded");
            assert_eq!(stop["payload"]["status"], "error", "{stop}");
            assert_eq!(stop["payload"]["exitCode"], 3);
        }
        "task_interrupted_mid_child_bash_leaves_no_process" => {
            assert_eq!(run.code, 130);
            let seen = run.events();
            let kinds = run.types();
            assert_eq!(kinds.first().map(String::as_str), Some("run_start"));
            assert_eq!(kinds[kinds.len() - 2..], ["error", "run_end"], "{kinds:?}");
            assert_eq!(seen[seen.len() - 2]["code"], "interrupted");
            assert_eq!(seen[seen.len() - 1]["status"], "interrupted");
        }
        "task_two_in_the_background_read_with_task_output" => {
            for id in ["o1", "o2"] {
                assert_eq!(result(id)["name"], "TaskOutput");
            }
            // Each child rolled up into the parent's session.
            let rollups = rollups(runs, run);
            assert_eq!(rollups.len(), 2, "{rollups:?}");
            for rollup in &rollups {
                assert_eq!(rollup["payload"]["mode"], "background", "{rollup}");
                assert_eq!(rollup["payload"]["totalTokens"], 4, "{rollup}");
            }
        }
        "task_project_manifest_overrides_the_builtin" => {
            // The warning names the file and its line.
            let bad = runs.paths.ws.join(".zero/specialists/bad.md");
            let canonical = std::fs::canonicalize(&bad).expect("canonical");
            assert!(
                run.stderr
                    .lines()
                    .any(|l| l.contains("skipped specialist manifest")
                        && (l.contains(&format!("{}:6:", bad.display()))
                            || l.contains(&format!("{}:6:", canonical.display())))),
                "{}",
                run.stderr
            );
            // The parent's lines carry the parent's calls; the child's are rolled up.
            let shown: Vec<(u64, u64)> = run
                .of("usage")
                .iter()
                .map(|u| {
                    let n = |k: &str| u[k].as_u64().unwrap_or(0);
                    (n("promptTokens"), n("completionTokens"))
                })
                .collect();
            assert_eq!(shown, [(10, 5), (20, 4)], "{}", run.stdout);
            let rollups = rollups(runs, run);
            assert_eq!(rollups[0]["payload"]["promptTokens"], 7);
            assert_eq!(rollups[0]["payload"]["completionTokens"], 3);
            assert_eq!(rollups[0]["payload"]["totalTokens"], 10);
        }
        "context_auto_compaction" => {
            let warnings = run.of("warning");
            assert_eq!(warnings.len(), 1, "{}", run.stdout);
            let message = warnings[0]["message"].as_str().expect("message");
            assert!(
                message.starts_with("Context compacted (auto): ") && message.ends_with(" tokens."),
                "{message}"
            );
        }
        "context_auto_compact_off_never_compacts" => {
            assert!(run.of("warning").is_empty(), "{}", run.stdout);
        }
        "api_key_redacted_from_a_tool_error" => {
            let result = result("r1");
            assert_eq!(result["output"], "file not found: [REDACTED]", "{result}");
            assert_eq!(result["redacted"], true);
            // The model's next request carries the scrubbed error.
            let sent = runs.model.requests()[1].tool_message("r1");
            assert_eq!(sent.as_deref(), Some("file not found: [REDACTED]"));
            let recorded = session_events(&runs.sb.sessions(), &parent(runs));
            let result = recorded
                .iter()
                .find(|e| e["type"] == "tool_result")
                .expect("tool_result recorded");
            assert_eq!(result["payload"]["output"], "file not found: [REDACTED]");
        }
        _ => {}
    }
}

/// The parent's session holds the Task call with Zero's specialist accounting inside it;
/// the child's session is where Zero keeps a specialist's, and is not resumable.
fn expect_child_session(runs: &Runs) {
    let parent = parent(runs);
    let sessions = runs.sb.sessions();
    let events = session_events(&sessions, &parent);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(at("tool_call") < at("specialist_start"), "{kinds:?}");
    assert!(at("specialist_start") < at("specialist_stop"), "{kinds:?}");
    assert!(at("specialist_stop") < at("tool_result"), "{kinds:?}");
    let start = &events[at("specialist_start")]["payload"];
    assert_eq!(start["specialist"], "explorer");
    assert_eq!(start["toolCallId"], "t1");
    let child = start["childSessionId"].as_str().expect("child").to_string();
    let stop = &events[at("specialist_stop")]["payload"];
    assert_eq!(stop["status"], "success", "{stop}");
    assert_eq!(stop["exitCode"], 0);
    let rollup = events
        .iter()
        .find(|e| e["type"] == "provider_usage" && e["payload"]["source"] == "specialist")
        .expect("child usage rolled up");
    assert_eq!(rollup["payload"]["childSessionId"], child.as_str());
    assert!(rollup["payload"]["totalTokens"].as_u64().unwrap_or(0) > 0);

    let meta = session_meta(&sessions, &child);
    assert_eq!(meta["sessionKind"], "child", "{meta}");
    assert_eq!(meta["parentSessionId"], parent.as_str());
    assert_eq!(meta["rootSessionId"], parent.as_str());
    assert_eq!(meta["tag"], "specialist");
    assert_eq!(meta["depth"], 1);
    assert_eq!(meta["agentName"], "explorer");
    assert_eq!(meta["taskId"], child.as_str());
    assert_eq!(meta["spawnedFromEventId"], "t1");
    assert_eq!(meta["title"], "explorer: try to write");
    let child_events = session_events(&sessions, &child);
    let kinds: Vec<&str> = child_events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "provider_usage",
            "tool_call",
            "tool_result",
            "provider_usage",
            "tool_call",
            "tool_result",
            "provider_usage",
            "message"
        ],
        "{child_events:?}"
    );
    assert_eq!(child_events[0]["payload"]["role"], "user");
    // The child's prompt: the Task's prompt in the specialist envelope.
    assert!(child_events[0]["payload"]["content"]
        .as_str()
        .expect("content")
        .contains("Write pwned.txt."));
    assert_eq!(child_events[6]["payload"]["status"], "error");
    assert_eq!(child_events[8]["payload"]["role"], "assistant");
    assert_eq!(child_events[8]["payload"]["content"], "I may not write.");
    let resumed = runs.sb.run(
        &["exec", "-o", "stream-json", "--resume", &child, "again"],
        "",
    );
    resumed.assert_usage_error(&format!("Zero session is not resumable: {child}"));
}

test_support::scenario_tests!(sync run);
