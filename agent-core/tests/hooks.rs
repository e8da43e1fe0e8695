//! Lifecycle hooks in the agent loop, on the scripted provider.

mod common;

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
async fn a_blocked_prompt_never_reaches_the_model_or_the_transcript() {
    let provider = ScriptedProvider::new([Turn::new().text("never")]);
    let agent = Agent::builder(provider.clone())
        .hook(Fixed {
            prompt: Some(PromptDecision::Block {
                reason: "no secrets in prompts".into(),
            }),
            ..Fixed::named("dlp")
        })
        .build();
    let events = collect(agent.prompt("my password is hunter2")).await;
    assert_eq!(
        kinds(&events),
        vec!["run_started", "hook_decided", "run_finished:Success"]
    );
    assert_eq!(
        decided(&events),
        vec![(
            "dlp".into(),
            HookEvent::UserPrompt,
            HookOutcome::Block,
            Some("no secrets in prompts".into())
        )]
    );
    assert!(provider.requests().is_empty());
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn prompt_context_follows_the_prompt_as_a_synthetic_message() {
    let provider = ScriptedProvider::new([Turn::new().text("ok")]);
    let agent = Agent::builder(provider.clone())
        .hook(Fixed {
            prompt: Some(PromptDecision::AddContext {
                text: "branch: main".into(),
            }),
            ..Fixed::named("ctx")
        })
        .build();
    let events = collect(agent.prompt("hi")).await;
    let users: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::UserMessage { message } => Some((message.text(), message.synthetic)),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        vec![("hi".into(), false), ("branch: main".into(), true)]
    );
    let sent = &provider.requests()[0].messages;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].role, Role::User);
    assert_eq!(sent[1].text(), "branch: main");
}

/// Counts stop calls and always asks to continue.
struct Nag(AtomicU32);

#[async_trait]
impl Hooks for Nag {
    fn name(&self) -> &str {
        "nag"
    }
    async fn stop(&self, _: &HookContext, stop: &StopRequest) -> StopDecision {
        assert_eq!(stop.continuations, self.0.fetch_add(1, Ordering::SeqCst));
        StopDecision::Continue {
            reason: "run the tests first".into(),
        }
    }
}

#[tokio::test]
async fn stop_continuations_are_bounded_by_default_to_one() {
    let provider = ScriptedProvider::new([
        Turn::new().text("first answer"),
        Turn::new().text("second answer"),
        Turn::new().text("never asked"),
    ]);
    let agent = Agent::builder(provider.clone())
        .hook(Nag(AtomicU32::new(0)))
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(finished(&events), RunStatus::Success);
    let outcomes: Vec<HookOutcome> = decided(&events).iter().map(|d| d.2).collect();
    assert_eq!(
        outcomes,
        vec![HookOutcome::Continue, HookOutcome::Overruled]
    );
    // The second model call was given the reason as its next instruction.
    let second = &provider.requests()[1].messages;
    let last = second.last().unwrap();
    assert_eq!(
        (last.role, last.text(), last.synthetic),
        (Role::User, "run the tests first".into(), true)
    );
    let kinds = kinds(&events);
    let hook = kinds.iter().position(|k| k == "hook_decided").unwrap();
    assert_eq!(kinds[hook + 1], "turn_ended:Continue");
    assert_eq!(kinds[kinds.len() - 2], "turn_ended:End");
    match events.last() {
        Some(AgentEvent::RunFinished { final_text, .. }) => {
            assert_eq!(final_text.as_deref(), Some("second answer"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stop_continuations_follow_the_configured_limit() {
    let provider = ScriptedProvider::new([
        Turn::new().text("1"),
        Turn::new().text("2"),
        Turn::new().text("3"),
    ]);
    let agent = Agent::builder(provider.clone())
        .hook(Nag(AtomicU32::new(0)))
        .max_stop_continuations(2)
        .build();
    collect(agent.prompt("go")).await;
    assert_eq!(provider.requests().len(), 3);

    let provider = ScriptedProvider::new([Turn::new().text("only"), Turn::new().text("never")]);
    let agent = Agent::builder(provider.clone())
        .hook(Nag(AtomicU32::new(0)))
        .build();
    agent.set_max_stop_continuations(0);
    let events = collect(agent.prompt("again")).await;
    assert_eq!(provider.requests().len(), 1);
    let outcomes: Vec<HookOutcome> = decided(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Overruled]);
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

#[tokio::test]
async fn session_hooks_run_when_the_host_calls_them() {
    let provider = ScriptedProvider::new([Turn::new().text("ok")]);
    let hook = Fixed {
        start: Some(StartDecision::AddContext {
            text: "today is Tuesday".into(),
        }),
        ..Fixed::named("session")
    };
    let seen = hook.seen.clone();
    let agent = Agent::builder(provider.clone()).hook(hook).build();
    let reports = agent.session_start(SessionSource::Startup).await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].outcome, HookOutcome::AddContext);
    let events = collect(agent.prompt("hi")).await;
    assert_eq!(finished(&events), RunStatus::Success);
    let texts: Vec<String> = provider.requests()[0]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert!(texts.contains(&"today is Tuesday".to_string()), "{texts:?}");
    let reports = agent
        .session_end(SessionEnd::new(SessionEndReason::Exit))
        .await;
    assert!(reports.is_empty());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("start:Startup"));
    assert_eq!(seen.last().map(String::as_str), Some("end:Exit"));
}

#[tokio::test]
async fn pre_compact_runs_before_the_summary_request() {
    let provider = ScriptedProvider::new([
        Turn::new().text("a"),
        Turn::new().text("b"),
        Turn::new().text("summary"),
    ]);
    let hook = Fixed::named("compact");
    let seen = hook.seen.clone();
    let agent = Agent::builder(provider)
        .hook(hook)
        .compact_keep_tail(1)
        .build();
    collect(agent.prompt("one")).await;
    collect(agent.prompt("two")).await;
    let events = collect(agent.compact()).await;
    assert_eq!(finished(&events), RunStatus::Success);
    assert!(seen.lock().unwrap().contains(&"compact:Manual".to_string()));
}

#[tokio::test]
async fn a_forked_agent_keeps_its_parents_hooks_until_replaced() {
    let provider = ScriptedProvider::new([Turn::new().text("parent"), Turn::new().text("child")]);
    let agent = Agent::builder(provider.clone())
        .hook(Fixed {
            prompt: Some(PromptDecision::Block {
                reason: "no".into(),
            }),
            ..Fixed::named("blocker")
        })
        .build();
    let fork = agent.fork();
    let events = collect(fork.prompt("x")).await;
    assert_eq!(decided(&events).len(), 1);
    fork.set_hooks([]);
    let events = collect(fork.prompt("y")).await;
    assert!(decided(&events).is_empty());
    assert_eq!(provider.requests().len(), 1);
    // The parent still has its hook.
    let events = collect(agent.prompt("z")).await;
    assert_eq!(decided(&events).len(), 1);
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

#[tokio::test]
async fn hooked_events_round_trip_through_json() {
    let event = AgentEvent::HookDecided {
        hook: "policy".into(),
        event: HookEvent::BeforeTool,
        outcome: HookOutcome::Deny,
        reason: Some("no".into()),
        call_id: Some("c1".into()),
    };
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(
        value,
        json!({"type": "hook_decided", "hook": "policy", "event": "before_tool",
               "outcome": "deny", "reason": "no", "call_id": "c1"})
    );
    let back: AgentEvent = serde_json::from_value(value).unwrap();
    assert_eq!(back, event);
}
