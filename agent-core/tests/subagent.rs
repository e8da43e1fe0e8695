//! Sub-agents in the loop: `Agent::as_tool`, `run_as_child` and `spawn_as_child` with the
//! scripted provider.

mod common;

use std::sync::{Arc, Mutex};

use agent_core::{
    async_trait,
    event::ToolStatus,
    hooks::{
        HookContext, HookEvent, HookOutcome, Hooks, StartDecision, StopDecision, StopRequest,
        ToolDecision,
    },
    message::ToolCall,
    permission::{Approval, ApprovalRequest},
    provider::ProviderErrorKind,
    session::{MemorySessionStore, SessionRecord, SessionStore},
    subagent::{SubagentInfo, SubagentRequest},
    Agent, AgentEvent, Approver, PermissionMode, RunStatus, SideEffect, Tool, ToolContext,
    ToolError, ToolOutput, Usage,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::{collect, Echo, Gate, Write, WAIT};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

/// The events of the sub-agent `task`, unwrapped one level, in order.
fn child_events(events: &[AgentEvent], name: &str) -> Vec<AgentEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Subagent { name: n, event, .. } if n == name => Some((**event).clone()),
            _ => None,
        })
        .collect()
}

fn tool_result(events: &[AgentEvent], id: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                id: i,
                status,
                content,
                ..
            } if i == id => Some((
                *status,
                content
                    .iter()
                    .filter_map(|b| match b {
                        agent_core::ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect::<String>(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn last_cumulative(events: &[AgentEvent]) -> Usage {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::Usage { cumulative, .. } => Some(*cumulative),
            _ => None,
        })
        .expect("a top-level usage event")
}

fn position(events: &[AgentEvent], pred: impl Fn(&AgentEvent) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .expect("the event is in the stream")
}

#[tokio::test]
async fn a_child_agent_answers_as_a_tool_and_its_events_and_usage_reach_the_parent() {
    let child_provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("k1", "echo", r#"{"text":"found it"}"#)
            .usage(5, 1),
        Turn::new().text("The answer is 42.").usage(7, 2),
    ]);
    let researcher = Agent::builder(child_provider.clone())
        .system_prompt("You research.")
        .tool(Echo)
        .build();
    let parent_provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "researcher", r#"{"prompt":"Find the answer."}"#)
            .usage(10, 3),
        Turn::new().text("Done: 42.").usage(20, 4),
    ]);
    let agent = Agent::builder(parent_provider)
        .tool(researcher.as_tool("researcher", "Researches a question."))
        .build();

    let events = collect(agent.prompt("Ask the researcher.")).await;

    // The parent finished with its own answer; the child's answer was the tool's result.
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) }) if t == "Done: 42."
    ));
    assert_eq!(
        tool_result(&events, "c1"),
        (ToolStatus::Ok, "The answer is 42.".to_string())
    );
    // The child's own run is wrapped whole, inside the call's window.
    let inner = child_events(&events, "researcher");
    assert!(matches!(inner.first(), Some(AgentEvent::RunStarted { .. })));
    assert!(matches!(
        inner.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
    assert!(inner
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolResult { id, .. } if id == "k1")));
    let started = position(
        &events,
        |e| matches!(e, AgentEvent::ToolExecutionStarted { id, .. } if id == "c1"),
    );
    let sub_started = position(
        &events,
        |e| matches!(e, AgentEvent::SubagentStarted { call_id, depth: 1, background: false, .. } if call_id == "c1"),
    );
    let first_wrapped = position(&events, |e| matches!(e, AgentEvent::Subagent { .. }));
    let finished = position(&events, |e| {
        matches!(e, AgentEvent::SubagentFinished { .. })
    });
    let result = position(
        &events,
        |e| matches!(e, AgentEvent::ToolResult { id, .. } if id == "c1"),
    );
    assert!(started < sub_started && sub_started < first_wrapped);
    assert!(first_wrapped < finished && finished < result);
    // No child text leaks to the top level.
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::TextDelta { delta } if delta.contains("42.") && !delta.contains("Done"))));

    // Usage: the child's is reported per child and rolls up into the parent's total.
    let child_usage = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SubagentFinished { usage, status, .. } => {
                assert_eq!(*status, RunStatus::Success);
                Some(*usage)
            }
            _ => None,
        })
        .expect("SubagentFinished");
    assert_eq!((child_usage.input, child_usage.output), (12, 3));
    let total = last_cumulative(&events);
    assert_eq!((total.input, total.output), (10 + 12 + 20, 3 + 3 + 4));
    assert_eq!(agent.state().usage.input, 42);

    // The child had its own transcript and system prompt; the template is untouched.
    let child_requests = child_provider.requests();
    assert_eq!(child_requests[0].system.as_deref(), Some("You research."));
    assert_eq!(child_requests[0].messages.len(), 1);
    assert_eq!(child_requests[0].messages[0].text(), "Find the answer.");
    assert!(researcher.messages().is_empty());
    assert_eq!(agent.messages().len(), 4);
}

#[tokio::test]
async fn run_finish_counts_the_children_usage() {
    let child = Agent::builder(ScriptedProvider::new([Turn::new().text("ok").usage(3, 1)])).build();
    let parent = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "helper", r#"{"prompt":"go"}"#)
            .usage(10, 1),
        Turn::new().text("done").usage(10, 1),
    ]);
    let agent = Agent::builder(parent)
        .tool(child.as_tool("helper", "Helps."))
        .build();
    let outcome = tokio::time::timeout(WAIT, agent.prompt("go").finish())
        .await
        .expect("in time");
    assert_eq!((outcome.usage.input, outcome.usage.output), (23, 3));
    assert_eq!(outcome.text.as_deref(), Some("done"));
}

#[tokio::test]
async fn a_failing_child_is_the_tool_error_and_the_parent_goes_on() {
    let child = Agent::builder(ScriptedProvider::new([Turn::new()
        .text("partial thoughts")
        .error(ProviderErrorKind::Server, "upstream exploded")]))
    .build();
    let parent = ScriptedProvider::new([
        Turn::new().tool_call("c1", "helper", r#"{"prompt":"go"}"#),
        Turn::new().text("The helper failed, so I stop."),
    ]);
    let agent = Agent::builder(parent.clone())
        .tool(child.as_tool("helper", "Helps."))
        .build();
    let events = collect(agent.prompt("go")).await;
    let (status, text) = tool_result(&events, "c1");
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("sub-agent helper failed"), "{text}");
    assert!(text.contains("upstream exploded"), "{text}");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::SubagentFinished { status: RunStatus::Error, error: Some(m), .. } if m.contains("upstream exploded")
    )));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
    // The model saw the failure as the tool's error result.
    let second = &parent.requests()[1];
    assert!(second
        .messages
        .iter()
        .any(|m| m.content.iter().any(|b| matches!(
            b,
            agent_core::ContentBlock::ToolResult { is_error: true, .. }
        ))));
}

#[tokio::test]
async fn aborting_the_parent_aborts_the_child_and_its_tool() {
    let release = Arc::new(Notify::new());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Gate {
        name: "wait",
        release,
        started: started_tx,
    };
    let child = Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("k1", "wait", "{}"),
        Turn::new().text("never"),
    ]))
    .tool(gate)
    .build();
    let parent = ScriptedProvider::new([
        Turn::new().tool_call("c1", "helper", r#"{"prompt":"wait"}"#),
        Turn::new().text("never either"),
    ]);
    let agent = Agent::builder(parent)
        .tool(child.as_tool("helper", "Helps."))
        .build();
    let run = agent.prompt("go");
    let who = tokio::time::timeout(WAIT, started.recv())
        .await
        .expect("the child's tool started")
        .expect("a call id");
    assert_eq!(who, "k1");
    run.abort();
    let events = collect(run).await;
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
    let inner = child_events(&events, "helper");
    assert!(inner.iter().any(|e| matches!(
        e,
        AgentEvent::ToolResult { id, status: ToolStatus::Error, .. } if id == "k1"
    )));
    assert!(matches!(
        inner.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::SubagentFinished {
            status: RunStatus::Aborted,
            ..
        }
    )));
    assert_eq!(tool_result(&events, "c1").0, ToolStatus::Error);
    assert!(!agent.state().busy);
}

#[tokio::test]
async fn nesting_is_one_level_unless_the_tool_allows_more() {
    let grandchild = || {
        Agent::builder(ScriptedProvider::new([Turn::new()
            .text("deep answer")
            .usage(1, 1)]))
        .build()
    };
    let child_with = |max_depth: u32| {
        Agent::builder(ScriptedProvider::new([
            Turn::new()
                .tool_call("g1", "deeper", r#"{"prompt":"go deeper"}"#)
                .usage(2, 2),
            Turn::new().text("child answer").usage(2, 2),
        ]))
        .tool(
            grandchild()
                .as_tool("deeper", "Goes deeper.")
                .max_depth(max_depth),
        )
        .build()
    };
    for (max_depth, nested) in [(1, false), (2, true)] {
        let parent = ScriptedProvider::new([
            Turn::new().tool_call("c1", "helper", r#"{"prompt":"go"}"#),
            Turn::new().text("done"),
        ]);
        let agent = Agent::builder(parent)
            .tool(child_with(max_depth).as_tool("helper", "Helps."))
            .build();
        let events = collect(agent.prompt("go")).await;
        let inner = child_events(&events, "helper");
        let (status, text) = tool_result(&inner, "g1");
        match nested {
            false => {
                assert_eq!(status, ToolStatus::Error);
                assert!(text.contains("depth 2"), "{text}");
                assert_eq!(agent.state().usage.input, 4);
            }
            true => {
                assert_eq!((status, text.as_str()), (ToolStatus::Ok, "deep answer"));
                // The grandchild's events are wrapped twice, and its usage reaches the top.
                let twice = child_events(&inner, "deeper");
                assert!(matches!(twice.first(), Some(AgentEvent::RunStarted { .. })));
                assert!(inner.iter().any(|e| matches!(
                    e,
                    AgentEvent::SubagentStarted { depth: 2, name, .. } if name == "deeper"
                )));
                assert_eq!(agent.state().usage.input, 5);
            }
        }
        assert_eq!(tool_result(&events, "c1").0, ToolStatus::Ok);
    }
}

/// Hooks that add context to sub-agents, continue a sub-agent once, and record what they
/// saw.
#[derive(Default)]
struct Watch {
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl Hooks for Watch {
    fn name(&self) -> &str {
        "watch"
    }
    async fn before_tool(&self, ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        let who = ctx.subagent.as_ref().map_or("top", |s| s.name.as_str());
        self.seen
            .lock()
            .unwrap()
            .push(format!("before_tool {who} {}", call.name));
        ToolDecision::Allow
    }
    async fn stop(&self, _ctx: &HookContext, _stop: &StopRequest) -> StopDecision {
        self.seen.lock().unwrap().push("stop".into());
        StopDecision::Accept
    }
    async fn subagent_start(&self, ctx: &HookContext, prompt: &str) -> StartDecision {
        let info = ctx.subagent.as_ref().expect("a sub-agent context");
        self.seen
            .lock()
            .unwrap()
            .push(format!("subagent_start {} {prompt}", info.name));
        StartDecision::AddContext {
            text: "Be brief.".into(),
        }
    }
    async fn subagent_stop(&self, ctx: &HookContext, stop: &StopRequest) -> StopDecision {
        let info = ctx.subagent.as_ref().expect("a sub-agent context");
        self.seen
            .lock()
            .unwrap()
            .push(format!("subagent_stop {}", info.name));
        match stop.active() {
            false => StopDecision::Continue {
                reason: "Double-check.".into(),
            },
            true => StopDecision::Accept,
        }
    }
}

#[tokio::test]
async fn the_child_runs_under_the_parent_hooks_with_subagent_hook_points() {
    let child_provider = ScriptedProvider::new([
        Turn::new().tool_call("k1", "echo", r#"{"text":"x"}"#),
        Turn::new().text("first answer"),
        Turn::new().text("checked answer"),
    ]);
    let child = Agent::builder(child_provider.clone()).tool(Echo).build();
    let parent = ScriptedProvider::new([
        Turn::new().tool_call("c1", "helper", r#"{"prompt":"look"}"#),
        Turn::new().text("done"),
    ]);
    let watch = Arc::new(Watch::default());
    let agent = Agent::builder(parent)
        .tool(child.as_tool("helper", "Helps."))
        .hook(watch.clone())
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(
        tool_result(&events, "c1"),
        (ToolStatus::Ok, "checked answer".to_string())
    );
    assert_eq!(
        *watch.seen.lock().unwrap(),
        vec![
            "before_tool top helper",
            "subagent_start helper look",
            "before_tool helper echo",
            "subagent_stop helper",
            "subagent_stop helper",
            "stop",
        ]
    );
    // The start context is in the child's transcript after its prompt.
    let first = &child_provider.requests()[0];
    assert_eq!(first.messages[1].text(), "Be brief.");
    // The decisions are reported inside the child's run.
    let inner = child_events(&events, "helper");
    let decided: Vec<(HookEvent, HookOutcome)> = inner
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookDecided { event, outcome, .. } => Some((*event, *outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        vec![
            (HookEvent::SubagentStart, HookOutcome::AddContext),
            (HookEvent::SubagentStop, HookOutcome::Continue),
        ]
    );
}

/// Records who asked, then allows.
#[derive(Default)]
struct Recorder {
    asked: Mutex<Vec<(Option<SubagentInfo>, ApprovalRequest)>>,
}

#[async_trait]
impl Approver for Recorder {
    async fn approve(&self, request: ApprovalRequest) -> Approval {
        self.asked.lock().unwrap().push((None, request));
        Approval::AllowOnce
    }
    async fn approve_subagent(&self, who: &SubagentInfo, request: ApprovalRequest) -> Approval {
        self.asked
            .lock()
            .unwrap()
            .push((Some(who.clone()), request));
        Approval::AllowOnce
    }
}

#[tokio::test]
async fn the_child_asks_the_parent_approver_in_the_parent_mode() {
    let write = Write::default();
    let child = Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("k1", "write", "{}"),
        Turn::new().text("wrote"),
    ]))
    .tool(write.clone())
    // The child's own mode and approver are replaced by the parent's.
    .permission_mode(PermissionMode::Unsafe)
    .build();
    let recorder = Arc::new(Recorder::default());
    let agent = Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("c1", "helper", r#"{"prompt":"write"}"#),
        Turn::new().text("done"),
    ]))
    .tool(child.as_tool("helper", "Helps."))
    .permission_mode(PermissionMode::Ask)
    .approver(recorder.clone())
    .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(tool_result(&events, "c1").0, ToolStatus::Ok);
    assert_eq!(write.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let asked = recorder.asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    let (who, request) = &asked[0];
    let who = who.as_ref().expect("asked through approve_subagent");
    assert_eq!((who.name.as_str(), who.call_id.as_str()), ("helper", "c1"));
    assert_eq!(
        (request.call_id.as_str(), request.mode),
        ("k1", PermissionMode::Ask)
    );
    let inner = child_events(&events, "helper");
    assert!(inner
        .iter()
        .any(|e| matches!(e, AgentEvent::PermissionRequested(info) if info.id == "k1")));
}

#[tokio::test]
async fn a_child_records_to_the_parent_store_under_its_task_id() {
    let store = Arc::new(MemorySessionStore::new());
    let child = Agent::builder(ScriptedProvider::new([Turn::new().text("child says hi")])).build();
    let agent = Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("c1", "helper", r#"{"prompt":"hi"}"#),
        Turn::new().text("done"),
    ]))
    .tool(child.as_tool("helper", "Helps."))
    .session(store.clone(), "parent-1")
    .build();
    let events = collect(agent.prompt("go")).await;
    let task_id = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SubagentStarted {
                task_id,
                parent_session_id,
                ..
            } => {
                assert_eq!(parent_session_id.as_deref(), Some("parent-1"));
                Some(task_id.clone())
            }
            _ => None,
        })
        .expect("SubagentStarted");
    assert!(task_id.starts_with("subagent_"), "{task_id}");
    let records = store.load(&task_id).await.expect("the child's session");
    let messages = SessionRecord::replay(&records);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].text(), "child says hi");
    let mut ids = store.list().await.unwrap();
    ids.sort();
    assert_eq!(ids.len(), 2);
}

/// Starts the template in the background and returns its task id.
struct Spawn {
    template: Agent,
    children: Arc<Mutex<Vec<agent_core::subagent::BackgroundChild>>>,
}

#[async_trait]
impl Tool for Spawn {
    fn name(&self) -> &str {
        "spawn"
    }
    fn description(&self) -> &str {
        "Starts a helper in the background."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let child = self
            .template
            .spawn_as_child(&ctx, SubagentRequest::new("bg", "work in the background"))
            .await?;
        let id = child.task_id().to_string();
        self.children.lock().unwrap().push(child);
        Ok(ToolOutput::text(id))
    }
}

#[tokio::test]
async fn a_background_child_reports_after_the_call_and_is_stopped_when_the_run_ends() {
    let release = Arc::new(Notify::new());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let child = Agent::builder(ScriptedProvider::new([
        Turn::new().tool_call("k1", "wait", "{}").usage(4, 4),
        Turn::new().text("never"),
    ]))
    .tool(Gate {
        name: "wait",
        release,
        started: started_tx,
    })
    .build();
    let children = Arc::new(Mutex::new(Vec::new()));
    let parent = ScriptedProvider::new([
        Turn::new().tool_call("c1", "spawn", "{}").usage(1, 1),
        Turn::new().text("launched").usage(1, 1),
    ]);
    let agent = Agent::builder(parent)
        .tool(Spawn {
            template: child,
            children: children.clone(),
        })
        .build();
    let mut run = agent.prompt("go");
    // The child's tool starts while the parent carries on.
    tokio::time::timeout(WAIT, started.recv())
        .await
        .expect("the background child runs")
        .expect("a call id");
    let mut events = Vec::new();
    while tokio::time::timeout(WAIT, run.recv_many(&mut events, usize::MAX))
        .await
        .expect("events in time")
        > 0
    {}
    let result = position(
        &events,
        |e| matches!(e, AgentEvent::ToolResult { id, .. } if id == "c1"),
    );
    let started_at = position(&events, |e| {
        matches!(
            e,
            AgentEvent::SubagentStarted {
                background: true,
                ..
            }
        )
    });
    let first_wrapped = position(&events, |e| matches!(e, AgentEvent::Subagent { .. }));
    let finished = position(&events, |e| {
        matches!(
            e,
            AgentEvent::SubagentFinished {
                status: RunStatus::Aborted,
                ..
            }
        )
    });
    assert!(started_at < result, "SubagentStarted inside the call");
    assert!(
        result < first_wrapped,
        "the child reports after the call's result"
    );
    assert_eq!(finished, events.len() - 2, "stopped before RunFinished");
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
    let child = children.lock().unwrap()[0].clone();
    assert!(child.is_finished());
    let outcome = child.outcome().expect("an outcome");
    assert_eq!(outcome.status, RunStatus::Aborted);
    assert_eq!(outcome.usage.input, 4);
    assert_eq!(agent.state().usage.input, 6);
}
