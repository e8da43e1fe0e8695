//! Command hooks of both formats driving the agent loop, with real shell scripts, the real
//! `bash` tool and the scripted provider.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    event::ToolStatus,
    hooks::{HookEvent, HookOutcome, Hooks, SessionSource},
    Agent, AgentEvent, ContentBlock, PermissionMode, RunStatus,
};
use agent_hooks::zero::{load_workspace_with, ZeroPaths};
use agent_hooks::{load_file, HookFormat, HookOptions};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use common::{collect, text_of, tool_result, Workspace, WAIT};
use serde_json::{json, Value};
use test_support::procs::{alive, pid_in, wait_gone};

impl Workspace {
    fn options(&self) -> HookOptions {
        HookOptions::new(&self.root)
    }
}

/// An agent with the real tools, no approver and every call pre-approved, so that only
/// hooks stand between the model and `bash`.
fn agent(ws: &Workspace, provider: ScriptedProvider, hooks: Arc<dyn Hooks>) -> Agent {
    Agent::builder(provider)
        .tools(ToolSet::defaults(&ws.root).into_tools())
        .cwd(&ws.root)
        .permission_mode(PermissionMode::Unsafe)
        .hook(hooks)
        .build()
}

fn touch_marker() -> ScriptedProvider {
    ScriptedProvider::new([
        Turn::new().tool_call("c1", "bash", r#"{"command":"touch marker"}"#),
        Turn::new().text("done"),
    ])
}

fn status(events: &[AgentEvent]) -> RunStatus {
    match events.last() {
        Some(AgentEvent::RunFinished { status, .. }) => *status,
        other => panic!("not finished: {other:?}"),
    }
}

fn decisions(events: &[AgentEvent]) -> Vec<(String, HookEvent, HookOutcome, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => Some((
                hook.clone(),
                *event,
                *outcome,
                reason.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

/// The tool results the model was sent in its last request.
fn sent_results(provider: &ScriptedProvider) -> Vec<String> {
    let requests = provider.requests();
    requests
        .last()
        .expect("a request")
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(text_of(content)),
            _ => None,
        })
        .collect()
}

/// Waits (bounded) until none of `pids` is alive.
async fn assert_all_dead(pids: &[i32]) {
    let survivors = wait_gone(pids, WAIT).await;
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
}

/// A hook that records its pid and its child's, then hangs.
const HANG: &str = "sleep 600 &\necho $! > child.pid\necho $$ > hook.pid\nwait";

// ---------------------------------------------------------------------------------------
// Zero's format

#[tokio::test]
async fn zero_before_tool_hook_vetoes_bash_and_the_model_gets_the_reason() {
    let ws = Workspace::new();
    let guard = ws.script(
        "guard.sh",
        "cat > payload.json\necho 'bash is not allowed here' >&2\nexit 1",
    );
    let file = ws.write(
        "hooks.json",
        &json!({"enabled": true, "hooks": [
            {"id": "no-bash", "event": "beforeTool", "matcher": "bash", "command": guard},
            {"id": "never-read", "event": "beforeTool", "matcher": "read_file", "command": "/nonexistent"}
        ]}),
    );
    let loaded = load_file(&file, &ws.options()).unwrap();
    assert_eq!(loaded.format, HookFormat::Zero);
    let provider = touch_marker();
    let agent = agent(&ws, provider.clone(), loaded.hooks);
    let events = collect(agent.prompt("make a marker")).await;
    assert_eq!(status(&events), RunStatus::Success);
    assert!(!ws.path("marker").exists(), "the vetoed command ran");
    let expected = r#"Error: "bash" was blocked by hook "no-bash": bash is not allowed here"#;
    assert_eq!(
        tool_result(&events),
        (ToolStatus::Error, expected.to_string())
    );
    assert_eq!(sent_results(&provider), vec![expected.to_string()]);
    assert_eq!(
        decisions(&events),
        vec![(
            "no-bash".into(),
            HookEvent::BeforeTool,
            HookOutcome::Deny,
            "bash is not allowed here".into()
        )]
    );
    let payload = ws.read_json("payload.json");
    assert_eq!(payload["event"], "beforeTool");
    assert_eq!(payload["tool"], "bash");
    assert_eq!(payload["toolCallId"], "c1");
    assert_eq!(payload["sessionId"], "");
    assert_eq!(payload["cwd"], ws.root.display().to_string());
    assert_eq!(payload["args"], json!({"command": "touch marker"}));
}

#[tokio::test]
async fn zero_after_tool_output_reaches_the_model() {
    let ws = Workspace::new();
    let fmt = ws.script("fmt.sh", "cat > payload.json\necho 'formatted 1 file'");
    let quiet = ws.script("quiet.sh", "exit 0");
    let file = ws.write(
        "hooks.json",
        &json!({"hooks": [
            {"id": "fmt", "event": "afterTool", "matcher": "bash", "command": fmt},
            {"id": "quiet", "event": "afterTool", "command": quiet}
        ]}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let provider = touch_marker();
    let events = collect(agent(&ws, provider.clone(), hooks).prompt("go")).await;
    assert!(ws.path("marker").exists());
    let (status, text) = tool_result(&events);
    assert_eq!(status, ToolStatus::Ok);
    assert!(
        text.ends_with("\n\nHook output:\nformatted 1 file"),
        "{text}"
    );
    assert!(sent_results(&provider)[0].ends_with("Hook output:\nformatted 1 file"));
    let payload = ws.read_json("payload.json");
    assert_eq!(payload["event"], "afterTool");
    assert_eq!(payload["status"], "ok");
    assert_eq!(payload["changedFiles"], json!([]));
    let d = decisions(&events);
    assert_eq!((d[0].0.as_str(), d[0].2), ("fmt", HookOutcome::Append));
}

#[tokio::test]
async fn zero_hanging_hook_is_killed_at_its_timeout_and_fails_closed() {
    let ws = Workspace::new();
    let hang = ws.script("hang.sh", HANG);
    let file = ws.write(
        "hooks.json",
        &json!({"hooks": [{"id": "slow", "event": "beforeTool", "command": hang}]}),
    );
    let mut options = ws.options();
    // Long enough for the script to record its pids on a busy machine.
    options.timeout = Duration::from_secs(3);
    let hooks = load_file(&file, &options).unwrap().hooks;
    let events = collect(agent(&ws, touch_marker(), hooks).prompt("go")).await;
    assert_eq!(status(&events), RunStatus::Success);
    assert!(
        !ws.path("marker").exists(),
        "a hung policy hook is not an approval"
    );
    let (_, text) = tool_result(&events);
    assert!(
        text.contains("hook timed out before returning a verdict"),
        "{text}"
    );
    let outcomes: Vec<HookOutcome> = decisions(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Failed, HookOutcome::Deny]);
    let pids = [
        pid_in(&ws.path("hook.pid"), WAIT).await,
        pid_in(&ws.path("child.pid"), WAIT).await,
    ];
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn zero_missing_hook_command_blocks_before_tool_and_is_advisory_after() {
    let ws = Workspace::new();
    let file = ws.write(
        "before.json",
        &json!({"hooks": [{"id": "gone", "event": "beforeTool", "command": "/nonexistent/guard"}]}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let events = collect(agent(&ws, touch_marker(), hooks).prompt("go")).await;
    assert!(!ws.path("marker").exists());
    let d = decisions(&events);
    assert_eq!(d[0].2, HookOutcome::Failed);
    assert!(d[0].3.contains("could not start"), "{d:?}");
    assert_eq!(d[1].2, HookOutcome::Deny);

    let file = ws.write(
        "after.json",
        &json!({"hooks": [{"id": "gone", "event": "afterTool", "command": "/nonexistent/fmt"}]}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let events = collect(agent(&ws, touch_marker(), hooks).prompt("go")).await;
    assert!(ws.path("marker").exists());
    assert_eq!(tool_result(&events).0, ToolStatus::Ok);
    let outcomes: Vec<HookOutcome> = decisions(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Failed]);
}

#[tokio::test]
async fn zero_project_hooks_run_only_in_a_trusted_workspace() {
    let ws = Workspace::new();
    let home = Workspace::new();
    let guard = ws.script("guard.sh", "echo 'project says no' >&2\nexit 1");
    ws.write(
        ".zero/hooks.json",
        &json!({"hooks": [{"id": "project-veto", "event": "beforeTool", "matcher": "bash", "command": guard}]}),
    );
    let paths = ZeroPaths {
        user_config: Some(home.path("config/zero/hooks.json")),
        project_config: ws.path(".zero/hooks.json"),
        audit: Some(home.path("data/zero/hooks/audit.jsonl")),
        trust_store: Some(home.path("config/zero/trust.json")),
    };

    // Untrusted: the project file is ignored, with Zero's notice.
    let loaded = load_workspace_with(&ws.options(), &paths);
    assert!(loaded.project_skipped);
    assert!(loaded.notice().unwrap().contains("untrusted workspace"));
    assert!(loaded.hooks.config().hooks.is_empty());
    let events = collect(agent(&ws, touch_marker(), loaded.hooks).prompt("go")).await;
    assert!(
        ws.path("marker").exists(),
        "untrusted project hooks must not run"
    );
    assert!(decisions(&events).is_empty());
    std::fs::remove_file(ws.path("marker")).unwrap();

    // Trusted: it runs, and the audit log records it.
    home.write("config/zero/trust.json", &json!({"trusted": [ws.root]}));
    let loaded = load_workspace_with(&ws.options(), &paths);
    assert!(!loaded.project_skipped);
    assert_eq!(loaded.notice(), None);
    let events = collect(agent(&ws, touch_marker(), loaded.hooks).prompt("go")).await;
    assert!(!ws.path("marker").exists());
    assert!(tool_result(&events).1.contains("project says no"));
    let audit = std::fs::read_to_string(home.path("data/zero/hooks/audit.jsonl")).unwrap();
    let records: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{audit}");
    assert_eq!(records[0]["type"], "hook_execution_started");
    assert_eq!(records[0]["sequence"], 1);
    assert_eq!(records[0]["hookId"], "project-veto");
    assert_eq!(records[0]["toolCallId"], "c1");
    assert_eq!(records[1]["type"], "hook_execution_completed");
    assert_eq!(records[1]["status"], "blocked");
    assert_eq!(records[1]["results"][0]["exitCode"], 1);
    assert_eq!(records[1]["sequence"], 2);

    // A broken user layer is a diagnostic, not a failure.
    home.write("config/zero/hooks.json", &json!({"hooks": [{"id": "x"}]}));
    let loaded = load_workspace_with(&ws.options(), &paths);
    assert_eq!(loaded.diagnostics.len(), 1);
    assert_eq!(loaded.hooks.config().hooks.len(), 1);
}

#[tokio::test]
async fn zero_session_hooks_run_when_the_host_calls_them_but_not_in_plan_mode() {
    let ws = Workspace::new();
    let start = ws.script("start.sh", "cat > start.json");
    let end = ws.script("end.sh", "cat > end.json");
    let file = ws.write(
        "hooks.json",
        &json!({"hooks": [
            {"id": "start", "event": "sessionStart", "command": start},
            {"id": "end", "event": "sessionEnd", "command": end}
        ]}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let agent = agent(&ws, ScriptedProvider::new([Turn::new().text("hi")]), hooks);
    agent.update().permission_mode(PermissionMode::Plan).apply();
    agent.session_start(SessionSource::Startup).await;
    assert!(
        !ws.path("start.json").exists(),
        "advisory hooks are off in plan mode"
    );
    agent.update().permission_mode(PermissionMode::Auto).apply();
    agent.session_start(SessionSource::Startup).await;
    let events = collect(agent.prompt("hello")).await;
    let mut end_info =
        agent_core::hooks::SessionEnd::new(agent_core::hooks::SessionEndReason::Exit);
    end_info.last_status = Some(status(&events));
    end_info.turns = Some(1);
    agent.session_end(end_info).await;
    let start = ws.read_json("start.json");
    assert_eq!(start["event"], "sessionStart");
    assert_eq!(start["provider"], "scripted");
    assert_eq!(start["depth"], 0);
    let end = ws.read_json("end.json");
    assert_eq!(end["event"], "sessionEnd");
    assert_eq!(end["turns"], 1);
    assert_eq!(end["incomplete"], false);
    assert_eq!(end["finishReason"], "stop");
}

// ---------------------------------------------------------------------------------------
// Claude Code's format

#[tokio::test]
async fn claude_pre_tool_use_exit_2_vetoes_bash_with_stderr_as_the_reason() {
    let ws = Workspace::new();
    let file = ws.write(
        ".claude/settings.json",
        &json!({"permissions": {}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
            "type": "command",
            "command": "cat > payload.json; echo \"$CLAUDE_PROJECT_DIR\" > project-dir.txt; echo 'no shell for you' >&2; exit 2"
        }]}]}}),
    );
    let loaded = load_file(&file, &ws.options()).unwrap();
    assert_eq!(loaded.format, HookFormat::Claude);
    let provider = touch_marker();
    let events = collect(agent(&ws, provider.clone(), loaded.hooks).prompt("go")).await;
    assert!(!ws.path("marker").exists());
    let (status, text) = tool_result(&events);
    assert_eq!(status, ToolStatus::Error);
    assert!(text.ends_with(": no shell for you"), "{text}");
    assert!(sent_results(&provider)[0].contains("no shell for you"));
    let payload = ws.read_json("payload.json");
    assert_eq!(payload["hook_event_name"], "PreToolUse");
    assert_eq!(payload["tool_name"], "bash");
    assert_eq!(payload["tool_input"]["command"], "touch marker");
    assert_eq!(payload["tool_use_id"], "c1");
    assert_eq!(payload["permission_mode"], "bypassPermissions");
    assert_eq!(payload["cwd"], ws.root.display().to_string());
    assert!(payload["session_id"].is_string() && payload["transcript_path"].is_string());
    let dir = std::fs::read_to_string(ws.path("project-dir.txt")).unwrap();
    assert_eq!(dir.trim(), ws.root.display().to_string());
}

#[tokio::test]
async fn claude_json_answers_rewrite_and_deny() {
    let ws = Workspace::new();
    let file = ws.write(
        "settings.json",
        &json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command":
                "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":\"touch rewritten\"}}}'"}]},
            {"matcher": "Read", "hooks": [{"type": "command", "command":
                "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"secrets live here\"}}'"}]}
        ]}}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "bash", r#"{"command":"touch marker"}"#)
            .tool_call("c2", "read_file", r#"{"path":"settings.json"}"#),
        Turn::new().text("done"),
    ]);
    let events = collect(agent(&ws, provider.clone(), hooks).prompt("go")).await;
    assert!(ws.path("rewritten").exists());
    assert!(!ws.path("marker").exists());
    let sent = sent_results(&provider);
    assert!(sent[1].contains("secrets live here"), "{sent:?}");
    let outcomes: Vec<HookOutcome> = decisions(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Rewrite, HookOutcome::Deny]);
}

#[tokio::test]
async fn claude_context_prompt_block_and_stop_continuation() {
    let ws = Workspace::new();
    let file = ws.write(
        "settings.json",
        &json!({"hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'project uses tabs'"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command":
                "if grep -q forbidden; then echo '{\"decision\":\"block\",\"reason\":\"not that\"}'; else echo 'branch: main'; fi"}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
                "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"lint clean\"}}'"}]}],
            "Stop": [{"hooks": [{"type": "command", "command":
                "if grep -q '\"stop_hook_active\":true'; then exit 0; fi; echo 'run the tests first' >&2; exit 2"}]}]
        }}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "bash", r#"{"command":"touch marker"}"#),
        Turn::new().text("first answer"),
        Turn::new().text("tests pass"),
    ]);
    let agent = agent(&ws, provider.clone(), hooks);
    let reports = agent.session_start(SessionSource::Startup).await;
    assert_eq!(reports.len(), 1);

    let events = collect(agent.prompt("please work")).await;
    assert_eq!(status(&events), RunStatus::Success);
    assert_eq!(provider.requests().len(), 3);
    // Session and prompt context reached the model with the prompt.
    let first: Vec<String> = provider.requests()[0]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert!(first.contains(&"branch: main".to_string()), "{first:?}");
    assert!(
        first.contains(&"project uses tabs".to_string()),
        "{first:?}"
    );
    // PostToolUse context was appended to the result.
    assert!(tool_result(&events).1.ends_with("\n\nlint clean"));
    // The stop hook forced exactly one continuation with its reason.
    let last = provider.requests()[2].messages.last().unwrap().text();
    assert_eq!(last, "run the tests first");
    let outcomes: Vec<(HookEvent, HookOutcome)> =
        decisions(&events).iter().map(|d| (d.1, d.2)).collect();
    assert_eq!(
        outcomes,
        vec![
            (HookEvent::UserPrompt, HookOutcome::AddContext),
            (HookEvent::AfterTool, HookOutcome::Append),
            (HookEvent::Stop, HookOutcome::Continue),
        ]
    );

    // A prompt the hook blocks never reaches the model.
    let events = collect(agent.prompt("do the forbidden thing")).await;
    assert_eq!(provider.requests().len(), 3);
    let d = decisions(&events);
    assert_eq!((d[0].2, d[0].3.as_str()), (HookOutcome::Block, "not that"));
}

#[tokio::test]
async fn claude_hanging_or_missing_hooks_fail_open_and_leave_nothing_running() {
    let ws = Workspace::new();
    ws.script("hang.sh", HANG);
    let file = ws.write(
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "./hang.sh", "timeout": 3},
            {"type": "command", "command": "./missing-hook.sh"}
        ]}]}}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let events = collect(agent(&ws, touch_marker(), hooks).prompt("go")).await;
    assert_eq!(status(&events), RunStatus::Success);
    assert!(ws.path("marker").exists(), "Claude Code hooks fail open");
    let d = decisions(&events);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d.iter().all(|d| d.2 == HookOutcome::Failed));
    assert!(d[0].3.contains("timed out"), "{d:?}");
    assert!(d[1].3.contains("127"), "{d:?}");
    let pids = [
        pid_in(&ws.path("hook.pid"), WAIT).await,
        pid_in(&ws.path("child.pid"), WAIT).await,
    ];
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn aborting_a_run_kills_the_hook_it_waits_for() {
    let ws = Workspace::new();
    ws.script("hang.sh", HANG);
    let file = ws.write(
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "./hang.sh"}]}]}}),
    );
    let hooks = load_file(&file, &ws.options()).unwrap().hooks;
    let agent = agent(&ws, touch_marker(), hooks);
    let run = agent.prompt("go");
    let pids = [
        pid_in(&ws.path("hook.pid"), WAIT).await,
        pid_in(&ws.path("child.pid"), WAIT).await,
    ];
    assert!(pids.iter().all(|p| alive(*p)));
    run.abort();
    let events = collect(run).await;
    assert_eq!(status(&events), RunStatus::Aborted);
    assert!(!ws.path("marker").exists());
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn claude_session_end_and_pre_compact_get_their_payloads_and_matchers() {
    let ws = Workspace::new();
    let file = ws.write(
        "settings.json",
        &json!({"hooks": {
            "SessionEnd": [
                {"hooks": [{"type": "command", "command": "cat > end.json"}]},
                {"matcher": "clear", "hooks": [{"type": "command", "command": "touch cleared"}]}
            ],
            "PreCompact": [
                {"matcher": "manual", "hooks": [{"type": "command", "command": "cat > compact.json"}]},
                {"matcher": "auto", "hooks": [{"type": "command", "command": "touch auto-compact"}]}
            ]
        }}),
    );
    let loaded = load_file(&file, &ws.options()).unwrap();
    assert_eq!(loaded.format, HookFormat::Claude);
    let provider =
        ScriptedProvider::new([Turn::new().text("hi"), Turn::new().text("SUMMARY-OF-IT")]);
    let agent = Agent::builder(provider.clone())
        .cwd(&ws.root)
        .compact_keep_tail(0)
        .hook(loaded.hooks)
        .build();
    let events = collect(agent.prompt("hello")).await;
    assert_eq!(status(&events), RunStatus::Success);
    assert!(!ws.path("compact.json").exists(), "no compaction yet");

    let events = collect(agent.compact()).await;
    assert_eq!(status(&events), RunStatus::Success, "{events:?}");
    assert_eq!(provider.requests().len(), 2, "the summary call ran");
    let compact = ws.read_json("compact.json");
    assert_eq!(compact["hook_event_name"], "PreCompact");
    assert_eq!(compact["trigger"], "manual");
    assert_eq!(compact["custom_instructions"], "");
    assert_eq!(compact["cwd"], ws.root.display().to_string());
    assert!(compact["session_id"].is_string() && compact["transcript_path"].is_string());
    assert!(
        !ws.path("auto-compact").exists(),
        "the `auto` matcher ran on a manual compaction"
    );

    assert!(!ws.path("end.json").exists(), "no session end yet");
    let mut end = agent_core::hooks::SessionEnd::new(agent_core::hooks::SessionEndReason::Exit);
    end.last_status = Some(RunStatus::Success);
    let reports = agent.session_end(end).await;
    assert!(
        reports.iter().all(|r| r.outcome != HookOutcome::Deny),
        "{reports:?}"
    );
    let end = ws.read_json("end.json");
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "prompt_input_exit");
    assert_eq!(end["cwd"], ws.root.display().to_string());
    assert_eq!(end["session_id"], compact["session_id"], "one session");
    assert!(
        !ws.path("cleared").exists(),
        "the `clear` matcher ran on an exit"
    );

    // A clear is a session end with reason `clear`: now the matcher fires.
    let reports = agent
        .session_end(agent_core::hooks::SessionEnd::new(
            agent_core::hooks::SessionEndReason::Clear,
        ))
        .await;
    assert!(ws.path("cleared").exists(), "{reports:?}");
    assert_eq!(ws.read_json("end.json")["reason"], "clear");
}
