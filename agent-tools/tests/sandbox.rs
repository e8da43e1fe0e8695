//! `bash` under the OS sandbox, driven by the agent loop on a scripted model: real Landlock
//! and seccomp (this test fails, it does not skip, on a kernel without them), the report,
//! the fallback on a kernel that cannot enforce, block metadata from real refusals, and the
//! escalation that only an approver can allow.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::sandbox::{Enforcement, NetworkAccess, SandboxFallback, SandboxPolicy};
use agent_core::{
    async_trait,
    event::ToolStatus,
    permission::{Approval, ApprovalRequest, Block, BlockCode, PermissionAction},
    sandbox::SandboxReport,
    Agent, AgentEvent, Approver, PermissionMode,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::ToolSet;
use futures::StreamExt;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(60);

/// Allows every request and records it.
#[derive(Default, Clone)]
struct AllowAll(Arc<Mutex<Vec<ApprovalRequest>>>);

#[async_trait]
impl Approver for AllowAll {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        self.0.lock().unwrap().push(request);
        Approval::AllowOnce
    }
}

/// A path outside every writable root, removed when dropped.
struct Outside(PathBuf);

impl Outside {
    fn new(dir: &Path, tag: &str) -> Self {
        let path = dir.join(format!("agent-tools-sandbox-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    fn in_home(tag: &str) -> Self {
        Self::new(&PathBuf::from(std::env::var_os("HOME").expect("HOME")), tag)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn bash(id: &str, command: &str) -> Turn {
    Turn::new().tool_call(id, "bash", json!({ "command": command }).to_string())
}

async fn collect(run: agent_core::Run) -> Vec<AgentEvent> {
    let mut run = run;
    tokio::time::timeout(LIMIT, async {
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            events.push(event);
        }
        events
    })
    .await
    .expect("the run did not finish")
}

struct Setup {
    ws: tempfile::TempDir,
    policy: Option<SandboxPolicy>,
    mode: PermissionMode,
    approver: Option<AllowAll>,
    support: Option<agent_core::sandbox::SandboxSupport>,
}

impl Setup {
    fn new(policy: SandboxPolicy) -> Self {
        Self {
            ws: tempfile::tempdir().unwrap(),
            policy: Some(policy),
            mode: PermissionMode::Ask,
            approver: Some(AllowAll::default()),
            support: None,
        }
    }

    fn agent(&self, turns: Vec<Turn>) -> Agent {
        let mut builder = Agent::builder(ScriptedProvider::new(turns))
            .cwd(self.ws.path())
            .permission_mode(self.mode)
            .tools(ToolSet::defaults(self.ws.path()).into_tools());
        if let Some(policy) = &self.policy {
            builder = builder.sandbox(policy.clone());
        }
        if let Some(approver) = &self.approver {
            builder = builder.approver(approver.clone());
        }
        if let Some(support) = &self.support {
            builder = builder.sandbox_support(support.clone());
        }
        builder.build()
    }

    async fn run(&self, turns: Vec<Turn>) -> Vec<AgentEvent> {
        collect(self.agent(turns).prompt("go")).await
    }
}

fn result_text(events: &[AgentEvent], call: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } if id == call => Some((
                *status,
                content
                    .iter()
                    .filter_map(|b| match b {
                        agent_core::ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect(),
            )),
            _ => None,
        })
        .expect("a tool result")
}

fn blocked(events: &[AgentEvent], call: &str) -> Option<Block> {
    events.iter().find_map(|e| match e {
        AgentEvent::ToolBlocked { id, block, .. } if id == call => Some(block.clone()),
        _ => None,
    })
}

fn reports(events: &[AgentEvent]) -> Vec<SandboxReport> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SandboxReport(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_approved_call_writes_in_the_workspace_and_temp_dir_but_not_home_or_etc() {
    let setup = Setup::new(SandboxPolicy::workspace_write());
    let home = Outside::in_home("ww");
    let etc = Outside::new(Path::new("/etc"), "ww");
    let command = format!(
        "touch in-ws.txt && echo scratch > \"$TMPDIR/s.txt\" && cat \"$TMPDIR/s.txt\"; \
         touch '{}'; touch '{}'; true",
        home.0.display(),
        etc.0.display()
    );
    let events = setup
        .run(vec![bash("b1", &command), Turn::new().text("done")])
        .await;
    let approver = setup.approver.as_ref().unwrap();
    assert_eq!(approver.0.lock().unwrap().len(), 1, "the call was approved");
    assert!(setup.ws.path().join("in-ws.txt").exists());
    assert!(!home.0.exists(), "wrote to $HOME");
    assert!(!etc.0.exists(), "wrote to /etc");
    let (status, text) = result_text(&events, "b1");
    assert_eq!(status, ToolStatus::Ok, "{text}");
    assert!(text.contains("scratch"), "{text}");
    assert!(
        text.contains("[sandbox] The command ran confined"),
        "{text}"
    );
    assert!(text.contains("require_escalated"), "{text}");
    let block = blocked(&events, "b1").expect("a ToolBlocked event");
    assert_eq!(block.code, BlockCode::Sandbox);
    assert_eq!(block.path.as_deref(), Some(&*home.0.display().to_string()));
    assert!(block.recoverable);
    // ToolBlocked comes right before the call's result.
    let at = |f: &dyn Fn(&AgentEvent) -> bool| events.iter().position(f).unwrap();
    let b = at(&|e| matches!(e, AgentEvent::ToolBlocked { .. }));
    let r = at(&|e| matches!(e, AgentEvent::ToolResult { .. }));
    assert_eq!(b + 1, r);
}

#[tokio::test]
async fn network_is_denied_by_default_and_open_with_allow() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("echo hello > /dev/tcp/127.0.0.1/{port}");

    let setup = Setup::new(SandboxPolicy::workspace_write());
    let events = setup
        .run(vec![bash("n1", &command), Turn::new().text("done")])
        .await;
    let (status, text) = result_text(&events, "n1");
    assert_eq!(status, ToolStatus::Error, "{text}");
    assert!(text.contains("with_network"), "{text}");
    assert_eq!(
        blocked(&events, "n1").expect("block").code,
        BlockCode::Network
    );

    let accept = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut got = String::new();
        socket.read_to_string(&mut got).await.unwrap();
        got
    });
    let setup = Setup::new(SandboxPolicy::workspace_write().network(NetworkAccess::Allow));
    let events = setup
        .run(vec![bash("n2", &command), Turn::new().text("done")])
        .await;
    let (status, text) = result_text(&events, "n2");
    assert_eq!(status, ToolStatus::Ok, "{text}");
    assert!(blocked(&events, "n2").is_none());
    let got = tokio::time::timeout(LIMIT, accept).await.unwrap().unwrap();
    assert_eq!(got, "hello\n");
}

#[tokio::test]
async fn read_only_refuses_writes_in_the_workspace() {
    let setup = Setup::new(SandboxPolicy::read_only());
    let events = setup
        .run(vec![
            bash(
                "r1",
                "cat /etc/hostname > /dev/null && echo read-ok; echo x > out.txt",
            ),
            Turn::new().text("done"),
        ])
        .await;
    let (status, text) = result_text(&events, "r1");
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("read-ok"), "{text}");
    assert!(!setup.ws.path().join("out.txt").exists());
    let block = blocked(&events, "r1").expect("block");
    assert!(block.path.unwrap().ends_with("out.txt"));
}

#[tokio::test]
async fn off_allows_everything_and_reports_it() {
    let setup = Setup::new(SandboxPolicy::off());
    let home = Outside::in_home("off");
    let events = setup
        .run(vec![
            bash("o1", &format!("touch '{}'", home.0.display())),
            Turn::new().text("done"),
        ])
        .await;
    assert!(home.0.exists(), "off did not allow the write");
    assert!(blocked(&events, "o1").is_none());
    let reports = reports(&events);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].enforced, Enforcement::None);
    assert!(reports[0].reason.as_deref().unwrap().contains("off"));
}

#[tokio::test]
async fn unsafe_mode_skips_prompts_but_keeps_the_sandbox() {
    let mut setup = Setup::new(SandboxPolicy::workspace_write());
    setup.mode = PermissionMode::Unsafe;
    setup.approver = None;
    let home = Outside::in_home("yolo");
    let events = setup
        .run(vec![
            bash("u1", &format!("touch '{}'", home.0.display())),
            Turn::new().text("done"),
        ])
        .await;
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::PermissionRequested(_))));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolExecutionStarted { id, .. } if id == "u1"
    )));
    assert!(!home.0.exists(), "unsafe mode turned the sandbox off");
    assert_eq!(
        blocked(&events, "u1").expect("block").code,
        BlockCode::Sandbox
    );
}

#[tokio::test]
async fn a_rerun_outside_the_sandbox_asks_the_approver_with_the_block_even_in_unsafe_mode() {
    let home = Outside::in_home("escalate");
    let command = format!("touch '{}'", home.0.display());
    let escalated = json!({
        "command": command,
        "sandbox_permissions": "require_escalated",
        "justification": "the test needs a file in $HOME",
    })
    .to_string();
    let turns = || {
        vec![
            bash("e1", &command),
            Turn::new().tool_call("e2", "bash", escalated.clone()),
            Turn::new().text("done"),
        ]
    };

    // Unsafe mode without an approver: the escalation is not pre-approved.
    let mut setup = Setup::new(SandboxPolicy::workspace_write());
    setup.mode = PermissionMode::Unsafe;
    setup.approver = None;
    let events = setup.run(turns()).await;
    let first = blocked(&events, "e1").expect("the confined run was refused");
    let request = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::PermissionRequested(info) if info.id == "e2" => Some(info.clone()),
            _ => None,
        })
        .expect("the escalation asks");
    let block = request.block.expect("the request carries the block");
    assert_eq!(block.code, BlockCode::Sandbox);
    assert_eq!(block.path, first.path);
    assert_eq!(block.action, PermissionAction::Prompt);
    assert!(
        block.reason.contains("justification: the test needs"),
        "{}",
        block.reason
    );
    let (status, text) = result_text(&events, "e2");
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("was not executed"), "{text}");
    assert!(!home.0.exists());

    // With an approver that allows it, the rerun runs outside the sandbox.
    let mut setup = Setup::new(SandboxPolicy::workspace_write());
    setup.mode = PermissionMode::Unsafe;
    let events = setup.run(turns()).await;
    let asked = setup.approver.as_ref().unwrap().0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "only the escalation asked: {asked:?}");
    assert_eq!(asked[0].call_id, "e2");
    assert_eq!(asked[0].block.as_ref().unwrap().code, BlockCode::Sandbox);
    let (status, text) = result_text(&events, "e2");
    assert_eq!(status, ToolStatus::Ok, "{text}");
    assert!(text.contains("ran outside the sandbox"), "{text}");
    assert!(home.0.exists());
}

#[tokio::test]
async fn a_network_rerun_keeps_the_file_system_confined() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let home = Outside::in_home("netrerun");
    let command = format!(
        "echo hi > /dev/tcp/127.0.0.1/{port}; touch '{}'",
        home.0.display()
    );
    let args = json!({"command": command, "sandbox_permissions": "with_network"}).to_string();
    let setup = Setup::new(SandboxPolicy::workspace_write());
    let accept = tokio::spawn(async move { listener.accept().await.is_ok() });
    let events = setup
        .run(vec![
            Turn::new().tool_call("w1", "bash", args),
            Turn::new().text("done"),
        ])
        .await;
    let asked = setup.approver.as_ref().unwrap().0.lock().unwrap().clone();
    assert_eq!(asked[0].block.as_ref().unwrap().code, BlockCode::Network);
    assert!(tokio::time::timeout(LIMIT, accept).await.unwrap().unwrap());
    assert!(
        !home.0.exists(),
        "the network rerun lifted the file-system rules"
    );
    let (_, text) = result_text(&events, "w1");
    assert!(text.contains("ran with network access"), "{text}");
}

#[tokio::test]
async fn the_report_comes_once_after_run_started_and_again_after_a_change() {
    let setup = Setup::new(SandboxPolicy::workspace_write());
    let agent = setup.agent(vec![
        Turn::new().text("one"),
        Turn::new().text("two"),
        Turn::new().text("three"),
    ]);
    let first = collect(agent.prompt("a")).await;
    assert!(matches!(first[0], AgentEvent::RunStarted { .. }));
    let AgentEvent::SandboxReport(report) = &first[1] else {
        panic!("no report after RunStarted: {:?}", first[1]);
    };
    assert_eq!(report.enforced, Enforcement::Full, "{}", report.summary());
    assert!(report.landlock_abi.is_some_and(|abi| abi >= 4));
    assert!(!report.fallback_active);
    assert_eq!(&agent.sandbox_report(), report);
    assert!(reports(&collect(agent.prompt("b")).await).is_empty());
    agent.update().sandbox(SandboxPolicy::read_only()).apply();
    let third = reports(&collect(agent.prompt("c")).await);
    assert_eq!(third.len(), 1);
    assert_eq!(third[0].mode, agent_core::sandbox::SandboxMode::ReadOnly);
}

/// A kernel whose Landlock probe failed (ENOSYS) and without seccomp.
fn no_sandbox_kernel() -> agent_core::sandbox::SandboxSupport {
    agent_sandbox::support_from(Err(libc_enosys()), Err("simulated".to_string()))
}

fn libc_enosys() -> i32 {
    38 // ENOSYS on every Linux architecture this project builds for
}

#[tokio::test]
async fn without_landlock_the_default_fallback_asks_for_every_command() {
    let home = Outside::in_home("fallback-prompt");
    let command = format!("touch '{}'", home.0.display());

    // Auto mode, no approver: the command asks, says why, and does not run.
    let mut setup = Setup::new(SandboxPolicy::workspace_write());
    setup.mode = PermissionMode::Auto;
    setup.approver = None;
    setup.support = Some(no_sandbox_kernel());
    let events = setup
        .run(vec![bash("f1", &command), Turn::new().text("done")])
        .await;
    let report = &reports(&events)[0];
    assert_eq!(report.enforced, Enforcement::None);
    assert!(report.fallback_active);
    assert!(
        report.reason.as_deref().unwrap().contains("ENOSYS"),
        "{report:?}"
    );
    let request = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::PermissionRequested(info) => Some(info.clone()),
            _ => None,
        })
        .expect("the command asks");
    let block = request.block.expect("block");
    assert_eq!(block.code, BlockCode::Sandbox);
    assert!(
        block.reason.contains("cannot be enforced"),
        "{}",
        block.reason
    );
    assert!(!home.0.exists());

    // Approved, it runs: nothing confines it on this (simulated) kernel.
    let mut setup = Setup::new(SandboxPolicy::workspace_write());
    setup.support = Some(no_sandbox_kernel());
    let events = setup
        .run(vec![bash("f2", &command), Turn::new().text("done")])
        .await;
    assert_eq!(result_text(&events, "f2").0, ToolStatus::Ok);
    assert!(home.0.exists());
}

#[tokio::test]
async fn without_landlock_refuse_refuses_and_allow_runs_unconfined() {
    let home = Outside::in_home("fallback-allow");
    let command = format!("touch '{}'", home.0.display());

    let mut setup = Setup::new(SandboxPolicy::workspace_write().fallback(SandboxFallback::Refuse));
    setup.support = Some(no_sandbox_kernel());
    let events = setup
        .run(vec![bash("x1", &command), Turn::new().text("done")])
        .await;
    let denied = events.iter().find_map(|e| match e {
        AgentEvent::PermissionDecided { info, action, .. } => Some((info.clone(), *action)),
        _ => None,
    });
    let (info, action) = denied.expect("a decision");
    assert_eq!(action, PermissionAction::Deny);
    assert_eq!(info.block.unwrap().code, BlockCode::Sandbox);
    assert!(setup
        .approver
        .as_ref()
        .unwrap()
        .0
        .lock()
        .unwrap()
        .is_empty());
    assert!(!home.0.exists());

    let mut setup = Setup::new(SandboxPolicy::workspace_write().fallback(SandboxFallback::Allow));
    setup.mode = PermissionMode::Unsafe;
    setup.approver = None;
    setup.support = Some(no_sandbox_kernel());
    let events = setup
        .run(vec![bash("x2", &command), Turn::new().text("done")])
        .await;
    assert_eq!(reports(&events)[0].fallback, SandboxFallback::Allow);
    assert_eq!(result_text(&events, "x2").0, ToolStatus::Ok);
    assert!(home.0.exists());
}

#[tokio::test]
async fn an_agent_without_a_policy_runs_commands_unconfined_and_says_so() {
    let mut setup = Setup::new(SandboxPolicy::off());
    setup.policy = None;
    setup.mode = PermissionMode::Unsafe;
    let home = Outside::in_home("nopolicy");
    let events = setup
        .run(vec![
            bash("p1", &format!("touch '{}'", home.0.display())),
            Turn::new().text("done"),
        ])
        .await;
    assert!(home.0.exists());
    let reports = reports(&events);
    assert_eq!(reports.len(), 1, "bash makes the agent report its sandbox");
    assert_eq!(reports[0].mode, agent_core::sandbox::SandboxMode::Off);
}
