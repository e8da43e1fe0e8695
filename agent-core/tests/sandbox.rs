//! The sandbox policy in the agent loop, with a fake sandboxed tool (no OS involved): what
//! the tool is handed, the report, the escalation gate and the fallback gate, and blocks
//! from a call's result.

mod common;

use std::sync::{Arc, Mutex};

use agent_core::sandbox::{
    Enforcement, NetworkAccess, SandboxContext, SandboxEscalation, SandboxFallback, SandboxMode,
    SandboxPolicy, SandboxSupport,
};
use agent_core::{
    async_trait,
    permission::{Approval, ApprovalRequest, Block, BlockCode, PermissionAction},
    Agent, AgentEvent, Approver, PermissionMode, SideEffect, Tool, ToolContext, ToolError,
    ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::{collect, kinds};
use serde_json::{json, Value};

/// A "shell" that records the sandbox it is handed and, when told to, reports a refusal.
#[derive(Clone, Default)]
struct FakeShell {
    seen: Arc<Mutex<Vec<SandboxContext>>>,
}

#[async_trait]
impl Tool for FakeShell {
    fn name(&self) -> &str {
        "sh"
    }
    fn description(&self) -> &str {
        "Runs a pretend command."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"refuse": {"type": "boolean"}, "escalate": {"type": "string"}}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }
    fn sandbox_support(&self) -> Option<SandboxSupport> {
        Some(SandboxSupport {
            landlock_abi: Some(7),
            seccomp: true,
            reason: None,
        })
    }
    fn sandbox_escalation(&self, args: &Value) -> Option<SandboxEscalation> {
        match args["escalate"].as_str() {
            Some("network") => Some(SandboxEscalation::Network),
            Some("all") => Some(SandboxEscalation::Unsandboxed),
            _ => None,
        }
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.seen.lock().unwrap().push(ctx.sandbox.clone());
        let mut output = ToolOutput::text("ran");
        if args["refuse"] == true {
            output.block = Some(Block {
                code: BlockCode::Sandbox,
                tool_name: Some("sh".into()),
                action: PermissionAction::Prompt,
                risk: Default::default(),
                path: Some("/etc/x".into()),
                reason: "the OS sandbox refused a write".into(),
                recoverable: true,
            });
        }
        Ok(output)
    }
}

/// Answers every request with `answer` and records it.
#[derive(Clone)]
struct Answer(Approval, Arc<Mutex<Vec<ApprovalRequest>>>);

#[async_trait]
impl Approver for Answer {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        self.1.lock().unwrap().push(request);
        self.0.clone()
    }
}

fn call(id: &str, args: Value) -> Turn {
    Turn::new().tool_call(id, "sh", args.to_string())
}

#[tokio::test]
async fn the_tool_gets_the_policy_and_the_report_follows_run_started() {
    let shell = FakeShell::default();
    let policy = SandboxPolicy::workspace_write().writable_root("/data");
    let agent = Agent::builder(ScriptedProvider::new([
        call("c1", json!({"refuse": true})),
        Turn::new().text("done"),
    ]))
    .tool(shell.clone())
    .permission_mode(PermissionMode::Unsafe)
    .sandbox(policy.clone())
    .build();
    let events = collect(agent.prompt("go")).await;
    let kinds = kinds(&events);
    assert_eq!(
        &kinds[..3],
        ["run_started", "sandbox_report", "user_message"]
    );
    let blocked = kinds.iter().position(|k| k == "tool_blocked").unwrap();
    assert_eq!(kinds[blocked + 1], "tool_result:c1");
    let AgentEvent::SandboxReport(report) = &events[1] else {
        unreachable!()
    };
    assert_eq!(report.enforced, Enforcement::Full);
    let seen = shell.seen.lock().unwrap().clone();
    assert_eq!(seen[0].policy, policy);
    assert_eq!(seen[0].support.as_ref().unwrap().landlock_abi, Some(7));
    assert_eq!(seen[0].escalation, None);
    assert_eq!(agent.sandbox(), policy);
}

#[tokio::test]
async fn an_agent_without_sandboxed_tools_or_policy_reports_nothing() {
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("hi")])).build();
    let events = collect(agent.prompt("go")).await;
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::SandboxReport(_))));
    assert_eq!(agent.sandbox().mode, SandboxMode::Off);
}

#[tokio::test]
async fn escalations_ask_in_unsafe_mode_and_run_relaxed_only_when_allowed() {
    for (answer, runs) in [
        (Approval::AllowOnce, true),
        (Approval::Deny { reason: None }, false),
    ] {
        let shell = FakeShell::default();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let agent = Agent::builder(ScriptedProvider::new([
            call("n1", json!({"escalate": "network"})),
            call("a1", json!({"escalate": "all"})),
            Turn::new().text("done"),
        ]))
        .tool(shell.clone())
        .permission_mode(PermissionMode::Unsafe)
        .approver(Answer(answer, asked.clone()))
        .sandbox(SandboxPolicy::workspace_write())
        .build();
        let events = collect(agent.prompt("go")).await;
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "both escalations ask, even in unsafe mode");
        assert_eq!(asked[0].block.as_ref().unwrap().code, BlockCode::Network);
        assert_eq!(asked[1].block.as_ref().unwrap().code, BlockCode::Sandbox);
        let requested = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::PermissionRequested(i) if i.block.is_some()))
            .count();
        assert_eq!(requested, 2);
        let seen = shell.seen.lock().unwrap().clone();
        if runs {
            assert_eq!(seen.len(), 2);
            assert_eq!(seen[0].policy.network, NetworkAccess::Allow);
            assert_eq!(seen[0].policy.mode, SandboxMode::WorkspaceWrite);
            assert_eq!(seen[0].escalation, Some(SandboxEscalation::Network));
            assert_eq!(seen[1].policy.mode, SandboxMode::Off);
        } else {
            assert!(seen.is_empty(), "a denied escalation ran");
        }
    }
}

#[tokio::test]
async fn a_standing_grant_does_not_cover_an_escalation() {
    let shell = FakeShell::default();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder(ScriptedProvider::new([
        call("g1", json!({})),
        call("g2", json!({"escalate": "all"})),
        Turn::new().text("done"),
    ]))
    .tool(shell.clone())
    .permission_mode(PermissionMode::Ask)
    .approver(Answer(Approval::AllowAlways, asked.clone()))
    .sandbox(SandboxPolicy::workspace_write())
    .build();
    collect(agent.prompt("go")).await;
    let asked = asked.lock().unwrap().clone();
    let ids: Vec<&str> = asked.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["g1", "g2"]);
}

#[tokio::test]
async fn with_the_sandbox_off_an_escalation_is_an_ordinary_call() {
    let shell = FakeShell::default();
    let agent = Agent::builder(ScriptedProvider::new([
        call("o1", json!({"escalate": "all"})),
        Turn::new().text("done"),
    ]))
    .tool(shell.clone())
    .permission_mode(PermissionMode::Unsafe)
    .sandbox(SandboxPolicy::off())
    .build();
    let events = collect(agent.prompt("go")).await;
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::PermissionRequested(_))));
    assert_eq!(shell.seen.lock().unwrap()[0].escalation, None);
}

#[tokio::test]
async fn a_kernel_that_cannot_enforce_gates_commands_by_the_fallback() {
    let cases = [
        (
            SandboxFallback::Prompt,
            PermissionMode::Auto,
            Some(PermissionAction::Prompt),
            false,
        ),
        (SandboxFallback::Prompt, PermissionMode::Unsafe, None, true),
        (
            SandboxFallback::Refuse,
            PermissionMode::Auto,
            Some(PermissionAction::Deny),
            false,
        ),
        (
            SandboxFallback::Allow,
            PermissionMode::Auto,
            Some(PermissionAction::Prompt),
            false,
        ),
    ];
    for (fallback, mode, first_event, runs) in cases {
        let shell = FakeShell::default();
        let agent = Agent::builder(ScriptedProvider::new([
            call("f1", json!({})),
            Turn::new().text("done"),
        ]))
        .tool(shell.clone())
        .permission_mode(mode)
        .sandbox(SandboxPolicy::workspace_write().fallback(fallback))
        .sandbox_support(SandboxSupport::unavailable("simulated probe failure"))
        .build();
        let events = collect(agent.prompt("go")).await;
        let AgentEvent::SandboxReport(report) = &events[1] else {
            panic!("no report: {:?}", events[1]);
        };
        assert!(report.fallback_active);
        assert_eq!(report.fallback, fallback);
        assert!(report.summary().contains("simulated probe failure"));
        let gate = events.iter().find_map(|e| match e {
            AgentEvent::PermissionRequested(info) => {
                Some((PermissionAction::Prompt, info.block.clone()))
            }
            AgentEvent::PermissionDecided { info, action, .. }
                if *action == PermissionAction::Deny =>
            {
                Some((PermissionAction::Deny, info.block.clone()))
            }
            _ => None,
        });
        assert_eq!(
            gate.as_ref().map(|g| g.0),
            first_event,
            "{fallback:?} {mode:?}"
        );
        if fallback != SandboxFallback::Allow {
            if let Some((_, block)) = gate {
                let block = block.expect("the gate says why");
                assert_eq!(block.code, BlockCode::Sandbox);
                assert!(
                    block.reason.contains("cannot be enforced"),
                    "{}",
                    block.reason
                );
            }
        }
        assert_eq!(
            shell.seen.lock().unwrap().len(),
            usize::from(runs),
            "{fallback:?} {mode:?}"
        );
    }
}
