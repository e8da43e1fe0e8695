//! Hook commands run under the agent's OS sandbox policy, confined as `bash` is. These run
//! the real confinement: the kernel must have Landlock and seccomp (CI's does; a machine
//! without them fails these tests, it does not skip them).
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::sandbox::{SandboxContext, SandboxFallback, SandboxPolicy, SandboxSupport};
use agent_core::{event::ToolStatus, hooks::Hooks, Agent, PermissionMode};
use agent_hooks::runner::{self, Ending, Program, RunConfig};
use agent_hooks::{load_file, HookFormat, HookOptions};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use common::{collect, tool_result, Workspace, WAIT};
use serde_json::json;

impl Workspace {
    /// Hook options with `$OUTSIDE` set to `outside` for every hook.
    fn options(&self, outside: &Outside) -> HookOptions {
        let mut options = HookOptions::new(&self.root);
        options
            .env
            .push(("OUTSIDE".into(), outside.0.display().to_string()));
        options
    }
}

/// A file outside the workspace and the temp dirs (in `$HOME`), removed on drop.
struct Outside(PathBuf);

impl Outside {
    fn new(tag: &str) -> Self {
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
        let path = home.join(format!("agent-hooks-sandbox-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    fn exists(&self) -> bool {
        self.0.exists()
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An agent with the real tools, every call pre-approved, and `policy` as its sandbox.
fn agent(ws: &Workspace, policy: SandboxPolicy, hooks: Arc<dyn Hooks>) -> Agent {
    Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("c1", "bash", r#"{"command":"touch marker"}"#),
        Turn::new().text("done"),
    ]))
    .tools(ToolSet::defaults(&ws.root).into_tools())
    .cwd(&ws.root)
    .permission_mode(PermissionMode::Unsafe)
    .sandbox(policy)
    .hook(hooks)
    .build()
}

/// A Zero `beforeTool` guard that writes outside the workspace and vetoes the tool when it
/// cannot; it also writes inside the workspace and in `$TMPDIR`.
const GUARD: &str = "echo inside > inside.txt\n\
                     echo tmp > \"${TMPDIR:-/tmp}/hook-tmp.txt\" && echo ok > tmp-ok.txt\n\
                     echo x > \"$OUTSIDE\" || { echo 'the guard could not write outside' >&2; exit 1; }\n\
                     exit 0";

fn zero_guard(ws: &Workspace, outside: &Outside) -> Arc<dyn Hooks> {
    let guard = ws.script("guard.sh", GUARD);
    let file = ws.write(
        "hooks.json",
        &json!({"hooks": [{"id": "guard", "event": "beforeTool", "matcher": "bash", "command": guard}]}),
    );
    let loaded = load_file(&file, &ws.options(outside)).expect("hooks file");
    assert_eq!(loaded.format, HookFormat::Zero);
    loaded.hooks
}

#[tokio::test]
async fn a_zero_hook_cannot_write_outside_the_workspace_under_workspace_write() {
    let ws = Workspace::new();
    let outside = Outside::new("zero-ww");
    let hooks = zero_guard(&ws, &outside);
    let events = collect(agent(&ws, SandboxPolicy::workspace_write(), hooks).prompt("go")).await;
    assert!(
        !outside.exists(),
        "a confined hook wrote outside the workspace"
    );
    assert!(ws.path("inside.txt").exists(), "the workspace is writable");
    assert!(
        ws.path("tmp-ok.txt").exists(),
        "the private $TMPDIR is writable"
    );
    // The refused write made the guard veto the tool: the refusal is what the model sees.
    assert!(!ws.path("marker").exists(), "the vetoed command ran");
    let (status, text) = tool_result(&events);
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("blocked by hook \"guard\""), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
}

#[tokio::test]
async fn a_zero_hook_writes_anywhere_with_the_sandbox_off() {
    let ws = Workspace::new();
    let outside = Outside::new("zero-off");
    let hooks = zero_guard(&ws, &outside);
    let events = collect(agent(&ws, SandboxPolicy::off(), hooks).prompt("go")).await;
    assert!(
        outside.exists(),
        "an unconfined hook could not write outside"
    );
    assert!(ws.path("inside.txt").exists());
    assert!(ws.path("marker").exists(), "the guard let the command run");
    assert_eq!(tool_result(&events).0, ToolStatus::Ok);
}

#[tokio::test]
async fn a_claude_hook_runs_under_the_agents_policy_too() {
    for (policy, written) in [
        (SandboxPolicy::workspace_write(), false),
        (SandboxPolicy::off(), true),
    ] {
        let ws = Workspace::new();
        let outside = Outside::new(&format!("claude-{}", policy.mode));
        let hook = ws.script(
            "prompt.sh",
            "echo x > \"$OUTSIDE\"\necho inside > inside.txt",
        );
        let file = ws.write(
            "settings.json",
            &json!({"hooks": {"UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": hook}]}
            ]}}),
        );
        let loaded = load_file(&file, &ws.options(&outside)).expect("hooks file");
        assert_eq!(loaded.format, HookFormat::Claude);
        collect(agent(&ws, policy.clone(), loaded.hooks).prompt("go")).await;
        assert!(ws.path("inside.txt").exists(), "{}", policy.mode);
        assert_eq!(outside.exists(), written, "{}", policy.mode);
    }
}

fn shell(script: &str) -> Program {
    Program::Shell {
        script: script.into(),
    }
}

/// A kernel that can enforce nothing.
fn no_kernel_support(policy: SandboxPolicy) -> SandboxContext {
    let mut sandbox = SandboxContext::new(policy);
    sandbox.support = Some(SandboxSupport::unavailable("simulated: no Landlock"));
    sandbox
}

async fn run_in(ws: &Path, script: &str, sandbox: &SandboxContext) -> runner::Finished {
    let config = RunConfig::new(ws);
    tokio::time::timeout(
        WAIT,
        runner::run(&shell(script), b"", &config, sandbox, ws, None),
    )
    .await
    .expect("the hook finished in time")
}

#[tokio::test]
async fn read_only_refuses_workspace_writes_and_reports_the_denial() {
    let ws = Workspace::new();
    let sandbox = SandboxContext::new(SandboxPolicy::read_only());
    let done = run_in(
        &ws.root,
        "echo x > inside.txt; echo t > \"$TMPDIR/t\" && echo \"$TMPDIR\"",
        &sandbox,
    )
    .await;
    assert!(
        !ws.path("inside.txt").exists(),
        "read-only let a hook write"
    );
    let tmp = PathBuf::from(done.stdout.trim());
    assert!(
        tmp.is_absolute(),
        "the hook got a private $TMPDIR: {done:?}"
    );
    assert!(!tmp.exists(), "the private temp dir outlived the call");
    let denial = done.denial.expect("the refusal is read back");
    assert_eq!(denial.kind, agent_sandbox::DenialKind::FileSystem);
}

#[tokio::test]
async fn fallback_refuse_does_not_start_the_hook_where_the_kernel_cannot_enforce() {
    let ws = Workspace::new();
    let sandbox =
        no_kernel_support(SandboxPolicy::workspace_write().fallback(SandboxFallback::Refuse));
    let done = run_in(&ws.root, "echo ran > ran.txt", &sandbox).await;
    assert!(!ws.path("ran.txt").exists(), "a refused hook ran");
    match &done.ending {
        Ending::NotStarted(why) => assert!(why.contains("cannot be enforced"), "{why}"),
        other => panic!("expected NotStarted, got {other:?}"),
    }
}

#[tokio::test]
async fn fallback_prompt_runs_the_hook_as_allow_where_the_kernel_cannot_enforce() {
    let ws = Workspace::new();
    let outside = Outside::new("prompt");
    for fallback in [SandboxFallback::Prompt, SandboxFallback::Allow] {
        let _ = std::fs::remove_file(&outside.0);
        let sandbox = no_kernel_support(SandboxPolicy::workspace_write().fallback(fallback));
        let script = format!("echo x > '{}'", outside.0.display());
        let done = run_in(&ws.root, &script, &sandbox).await;
        assert_eq!(done.ending, Ending::Exited(0), "{fallback}: {done:?}");
        assert!(
            outside.exists(),
            "{fallback}: nothing enforces, the hook ran unconfined"
        );
    }
}

#[tokio::test]
async fn a_hook_may_write_in_the_agents_workspace_when_it_runs_elsewhere() {
    // A multi-session host loads its hooks once (in its own directory) and runs sessions
    // in other workspaces: the session's workspace is writable for the hook too.
    let launch = Workspace::new();
    let session = Workspace::new();
    let outside = Outside::new("elsewhere");
    let target = session.path("from-hook.txt");
    let hook = launch.script(
        "hook.sh",
        &format!(
            "echo hi > '{}'\necho there > here.txt\necho x > \"$OUTSIDE\"",
            target.display()
        ),
    );
    let file = launch.write(
        "settings.json",
        &json!({"hooks": {"UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": hook}]}
        ]}}),
    );
    let hooks = load_file(&file, &launch.options(&outside))
        .expect("hooks file")
        .hooks;
    collect(agent(&session, SandboxPolicy::workspace_write(), hooks).prompt("go")).await;
    assert!(target.exists(), "the session's workspace was not writable");
    assert!(
        launch.path("here.txt").exists(),
        "the hook's own directory was not writable"
    );
    assert!(!outside.exists(), "a confined hook wrote outside");
}
