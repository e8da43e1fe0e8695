//! Lifecycle hooks in the agent loop, on the scripted provider: tool hooks here; prompt, stop,
//! session and compaction hooks in `hooks/lifecycle.rs`.

mod common;
#[path = "hooks/lifecycle.rs"]
mod lifecycle;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::{
    async_trait,
    event::ToolStatus,
    hooks::{
        CompactTrigger, HookContext, HookEvent, HookOutcome, Hooks, PromptDecision, ResultDecision,
        SessionEnd, SessionEndReason, SessionSource, StartDecision, StopDecision, StopRequest,
        ToolDecision,
    },
    message::{Role, ToolCall},
    permission::{Approval, PermissionAction},
    Agent, AgentEvent, ContentBlock, PermissionMode, RunStatus, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::json;
use tokio::sync::mpsc;

/// A hook answering every hook point from fixed decisions, recording what it saw.
#[derive(Default)]
struct Fixed {
    name: &'static str,
    before: Option<ToolDecision>,
    after: Option<ResultDecision>,
    prompt: Option<PromptDecision>,
    stop: Option<StopDecision>,
    start: Option<StartDecision>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Fixed {
    fn named(name: &'static str) -> Self {
        Self {
            name,
            ..Self::default()
        }
    }

    fn saw(&self, what: String) {
        self.seen.lock().unwrap().push(what);
    }
}

#[async_trait]
impl Hooks for Fixed {
    fn name(&self) -> &str {
        self.name
    }
    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        self.saw(format!("before:{}:{}:{}", call.name, call.args, ctx.mode));
        self.before.clone().unwrap_or_default()
    }
    async fn after_tool(
        &self,
        _: &HookContext,
        call: &ToolCall,
        out: &ToolOutput,
    ) -> ResultDecision {
        self.saw(format!("after:{}:{}", call.name, out.text_content()));
        self.after.clone().unwrap_or_default()
    }
    async fn user_prompt(&self, _: &HookContext, prompt: &str) -> PromptDecision {
        self.saw(format!("prompt:{prompt}"));
        self.prompt.clone().unwrap_or_default()
    }
    async fn stop(&self, _: &HookContext, stop: &StopRequest) -> StopDecision {
        self.saw(format!(
            "stop:{}:{}:{}",
            stop.final_text.clone().unwrap_or_default(),
            stop.continuations,
            stop.active()
        ));
        self.stop.clone().unwrap_or_default()
    }
    async fn session_start(&self, _: &HookContext, source: SessionSource) -> StartDecision {
        self.saw(format!("start:{source:?}"));
        self.start.clone().unwrap_or_default()
    }
    async fn session_end(&self, _: &HookContext, end: &SessionEnd) {
        self.saw(format!("end:{:?}", end.reason));
    }
    async fn pre_compact(&self, _: &HookContext, trigger: CompactTrigger) {
        self.saw(format!("compact:{trigger:?}"));
    }
}

fn scripted(
    answers: Vec<Option<Approval>>,
) -> (
    Scripted,
    mpsc::UnboundedReceiver<agent_core::permission::ApprovalRequest>,
) {
    let (asked, rx) = mpsc::unbounded_channel();
    let approver = Scripted {
        answers: Mutex::new(answers),
        asked,
    };
    (approver, rx)
}

fn decided(events: &[AgentEvent]) -> Vec<(String, HookEvent, HookOutcome, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookDecided {
                hook,
                event,
                outcome,
                reason,
                ..
            } => Some((hook.clone(), *event, *outcome, reason.clone())),
            _ => None,
        })
        .collect()
}

fn results(events: &[AgentEvent]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => Some((id.clone(), *status, text_of(content))),
            _ => None,
        })
        .collect()
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[AgentEvent]) -> RunStatus {
    match events.last() {
        Some(AgentEvent::RunFinished { status, .. }) => *status,
        other => panic!("last event is not RunFinished: {other:?}"),
    }
}

/// The text of every tool result the model was sent in its last request.
fn results_sent(provider: &ScriptedProvider) -> Vec<String> {
    let requests = provider.requests();
    let last = requests.last().expect("a request was made");
    last.messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(text_of(content)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_deny_in_plan_mode_refuses_the_call_and_the_model_goes_on() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"secret plans"}"#)
            .tool_call("c2", "write", "{}"),
        Turn::new().text("understood"),
    ]);
    let hook = Fixed {
        before: Some(ToolDecision::Deny {
            reason: "no reading plans".into(),
        }),
        ..Fixed::named("policy")
    };
    let seen = hook.seen.clone();
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .tool(write.clone())
        .permission_mode(PermissionMode::Plan)
        .hook(hook)
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    // The hook ran for both calls, in plan mode, before the gate: no permission event.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "prompt:go".to_string(),
            r#"before:echo:{"text":"secret plans"}:plan"#.to_string(),
            "before:write:{}:plan".to_string(),
            "stop:understood:0:false".to_string(),
        ]
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::PermissionDecided { .. })));
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
    let expected = r#"Error: "echo" was blocked by hook "policy": no reading plans"#;
    assert_eq!(
        results(&events)[0],
        ("c1".into(), ToolStatus::Error, expected.into())
    );
    assert_eq!(
        decided(&events)[0],
        (
            "policy".into(),
            HookEvent::BeforeTool,
            HookOutcome::Deny,
            Some("no reading plans".into())
        )
    );
    // The model saw the refusal and answered.
    assert_eq!(results_sent(&provider)[0], expected);
    let kinds = kinds(&events);
    let hook_at = kinds.iter().position(|k| k == "hook_decided").unwrap();
    let result_at = kinds.iter().position(|k| k == "tool_result:c1").unwrap();
    assert!(hook_at < result_at, "{kinds:?}");
}

#[tokio::test]
async fn a_denial_reason_is_scrubbed_of_known_secrets() {
    let secret = "hook-secret-value-5f1c9a7e";
    agent_core::secrets::register_secret(secret);
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", "{}"),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .hook(Fixed {
            before: Some(ToolDecision::Deny {
                reason: format!("token {secret} is not yours"),
            }),
            ..Fixed::named("leaky")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    let line = serde_json::to_string(&events).unwrap();
    assert!(!line.contains(secret), "secret in events");
    assert!(results(&events)[0]
        .2
        .contains("token [REDACTED] is not yours"));
    assert!(!format!("{:?}", agent.messages()).contains(secret));
}

#[tokio::test]
async fn ask_forces_a_prompt_even_in_unsafe_mode() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().tool_call("c2", "write", "{}"),
        Turn::new().text("done"),
    ]);
    let (approver, mut asked) = scripted(vec![
        Some(Approval::Deny { reason: None }),
        Some(Approval::AllowOnce),
    ]);
    let agent = Agent::builder(provider)
        .tool(write.clone())
        .permission_mode(PermissionMode::Unsafe)
        .approver(approver)
        .hook(Fixed {
            before: Some(ToolDecision::Ask {
                reason: Some("writes need a human".into()),
                args: None,
            }),
            ..Fixed::named("careful")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    let first = asked.try_recv().expect("the approver was asked");
    assert_eq!(first.reason.as_deref(), Some("writes need a human"));
    assert!(asked.try_recv().is_ok(), "asked again for the second call");
    // Denied once, allowed once.
    assert_eq!(write.calls.load(Ordering::SeqCst), 1);
    let requested = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::PermissionRequested(_)))
        .count();
    assert_eq!(requested, 2);
    let outcomes: Vec<HookOutcome> = decided(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Ask, HookOutcome::Ask]);
}

#[tokio::test]
async fn ask_does_not_loosen_a_denial() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool(write.clone())
        .permission_mode(PermissionMode::Plan)
        .hook(Fixed {
            before: Some(ToolDecision::Ask {
                reason: None,
                args: None,
            }),
            ..Fixed::named("asks")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::PermissionDecided {
            action: PermissionAction::Deny,
            ..
        }
    )));
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::PermissionRequested(_))));
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_rewrite_is_what_the_gate_and_the_tool_see() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", r#"{"text":"original"}"#),
        Turn::new().text("done"),
    ]);
    let (approver, mut asked) = scripted(vec![Some(Approval::AllowOnce)]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .approver(approver)
        .hook(Fixed {
            before: Some(ToolDecision::Ask {
                reason: None,
                args: Some(json!({"text": "rewritten"})),
            }),
            ..Fixed::named("rewriter")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    let request = asked.try_recv().expect("approver asked");
    assert_eq!(request.args, json!({"text": "rewritten"}));
    let info_args = events.iter().find_map(|e| match e {
        AgentEvent::PermissionRequested(info) => Some(info.args.clone()),
        _ => None,
    });
    assert_eq!(info_args, Some(json!({"text": "rewritten"})));
    assert_eq!(results(&events)[0].2, "rewritten");
    assert_eq!(results_sent(&provider), vec!["rewritten".to_string()]);
}

#[tokio::test]
async fn a_plain_rewrite_goes_through_the_gate_unprompted() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", r#"{"text":"a"}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Echo)
        .hook(Fixed {
            before: Some(ToolDecision::Rewrite {
                args: json!({"text": "b"}),
            }),
            ..Fixed::named("rw")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(results(&events)[0].2, "b");
    assert_eq!(decided(&events)[0].2, HookOutcome::Rewrite);
}

#[tokio::test]
async fn after_tool_appends_and_replaces_what_the_model_sees() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"one"}"#)
            .tool_call("c2", "write", "{}"),
        Turn::new().text("done"),
    ]);
    struct ByTool;
    #[async_trait]
    impl Hooks for ByTool {
        fn name(&self) -> &str {
            "by-tool"
        }
        async fn after_tool(
            &self,
            _: &HookContext,
            call: &ToolCall,
            _: &ToolOutput,
        ) -> ResultDecision {
            match call.name.as_str() {
                "echo" => ResultDecision::Append {
                    text: "Hook output:\nformatted".into(),
                },
                _ => ResultDecision::Replace {
                    result: ToolOutput::error("replaced by policy"),
                },
            }
        }
    }
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .tool(Write::default())
        .hook(ByTool)
        .build();
    let events = collect(agent.prompt("go")).await;
    let res = results(&events);
    assert_eq!(
        res[0],
        (
            "c1".into(),
            ToolStatus::Ok,
            "one\n\nHook output:\nformatted".into()
        )
    );
    assert_eq!(
        res[1],
        ("c2".into(), ToolStatus::Error, "replaced by policy".into())
    );
    // What the tool changed on disk is still reported.
    let changed = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult {
            id, changed_files, ..
        } if id == "c2" => Some(changed_files.clone()),
        _ => None,
    });
    assert_eq!(changed, Some(vec!["out.txt".to_string()]));
    assert_eq!(
        results_sent(&provider),
        vec![
            "one\n\nHook output:\nformatted".to_string(),
            "replaced by policy".to_string()
        ]
    );
    let kinds = kinds(&events);
    let started = kinds
        .iter()
        .position(|k| k == "tool_execution_started:c1")
        .unwrap();
    let hook = kinds.iter().position(|k| k == "hook_decided").unwrap();
    let result = kinds.iter().position(|k| k == "tool_result:c1").unwrap();
    assert!(started < hook && hook < result, "{kinds:?}");
}

#[tokio::test]
async fn a_halt_refuses_the_rest_of_the_step_and_ends_the_run() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "write", "{}")
            .tool_call("c2", "write", "{}"),
        Turn::new().text("never"),
    ]);
    struct HaltFirst;
    #[async_trait]
    impl Hooks for HaltFirst {
        fn name(&self) -> &str {
            "halt"
        }
        async fn before_tool(&self, _: &HookContext, call: &ToolCall) -> ToolDecision {
            assert_eq!(call.id, "c1", "the second call is refused without asking");
            ToolDecision::Halt {
                reason: "stop everything".into(),
            }
        }
    }
    let agent = Agent::builder(provider.clone())
        .tool(write.clone())
        .hook(HaltFirst)
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
    let res = results(&events);
    assert_eq!(res.len(), 2);
    assert!(res.iter().all(|r| r.1 == ToolStatus::Error));
    assert!(res[1].2.contains("a hook ended the run"), "{res:?}");
    // Every call still has a result in the transcript.
    let tool_results = agent
        .messages()
        .iter()
        .flat_map(|m| m.content.clone())
        .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
        .count();
    assert_eq!(tool_results, 2);
}

#[tokio::test]
async fn an_after_tool_halt_keeps_the_result_and_ends_the_run_after_the_step() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"kept"}"#)
            .tool_call("c2", "echo", r#"{"text":"also ran"}"#),
        Turn::new().tool_call("c3", "echo", r#"{"text":"again"}"#),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .hook(Fixed {
            after: Some(ResultDecision::Halt {
                reason: "enough for today".into(),
            }),
            ..Fixed::named("halter")
        })
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert_eq!(provider.requests().len(), 1);
    let res = results(&events);
    assert_eq!(res[0], ("c1".into(), ToolStatus::Ok, "kept".into()));
    // Both read-only calls ran as one parallel batch; the halt ends the run after it.
    assert_eq!(res.len(), 2);
    let halts = decided(&events)
        .iter()
        .filter(|d| d.2 == HookOutcome::Halt)
        .count();
    assert_eq!(halts, 2);
    // The next prompt starts with no halt pending: its call runs.
    let events = collect(agent.prompt("again")).await;
    assert_eq!(
        results(&events),
        vec![("c3".into(), ToolStatus::Ok, "again".into())]
    );
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn several_hooks_compose_first_deny_wins() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", r#"{"text":"x"}"#),
        Turn::new().text("ok"),
    ]);
    let late = Fixed {
        before: Some(ToolDecision::Allow),
        ..Fixed::named("late")
    };
    let late_seen = late.seen.clone();
    let agent = Agent::builder(provider)
        .tool(Echo)
        .hook(Fixed {
            before: Some(ToolDecision::Rewrite {
                args: json!({"text": "y"}),
            }),
            ..Fixed::named("first")
        })
        .hook(Fixed {
            before: Some(ToolDecision::Deny {
                reason: "second says no".into(),
            }),
            ..Fixed::named("second")
        })
        .hook(late)
        .build();
    let events = collect(agent.prompt("go")).await;
    let d = decided(&events);
    assert_eq!(d.len(), 2);
    assert_eq!((d[0].0.as_str(), d[0].2), ("first", HookOutcome::Rewrite));
    assert_eq!((d[1].0.as_str(), d[1].2), ("second", HookOutcome::Deny));
    assert!(!late_seen
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.starts_with("before")));
    assert!(results(&events)[0]
        .2
        .contains(r#"blocked by hook "second""#));
}

/// A before_tool hook that never answers.
struct Hang(mpsc::UnboundedSender<()>);

#[async_trait]
impl Hooks for Hang {
    async fn before_tool(&self, _: &HookContext, _: &ToolCall) -> ToolDecision {
        let _ = self.0.send(());
        std::future::pending().await
    }
}

#[tokio::test]
async fn abort_while_a_hook_runs_ends_the_run_with_every_call_answered() {
    let provider = ScriptedProvider::new([Turn::new().tool_call("c1", "echo", "{}")]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let agent = Agent::builder(provider).tool(Echo).hook(Hang(tx)).build();
    let run = agent.prompt("go");
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("hook started");
    run.abort();
    let events = collect(run).await;
    assert_eq!(finished(&events), RunStatus::Aborted);
    assert_eq!(results(&events).len(), 1);
    assert_eq!(results(&events)[0].1, ToolStatus::Error);
}
