//! The agent loop, end to end on the scripted provider.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use agent_core::{
    event::{CompactionReason, ErrorCode, RecoveryReason, StopReason, ToolStatus},
    message::Role,
    permission::{Approval, PermissionAction},
    provider::ProviderErrorKind,
    session::{MemorySessionStore, SessionRecord, SessionStore},
    Agent, AgentEvent, ContentBlock, PermissionMode, RunStatus, UserInput,
};
use agent_providers::scripted::{ScriptUsage, ScriptedProvider, Step, Turn};
use common::*;
use serde_json::json;
use tokio::sync::{mpsc, Notify};

fn slow_text() -> Turn {
    Turn::new()
        .text("partial")
        .delay(std::time::Duration::from_secs(600))
        .text("never")
}

#[tokio::test]
async fn plain_text_turn() {
    let provider = ScriptedProvider::new([Turn::new().text("Hel").text("lo").usage(10, 2)]);
    let agent = Agent::builder(provider.clone())
        .system_prompt("be brief")
        .build();
    let events = collect(agent.prompt("hi")).await;
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "user_message",
            "turn_started",
            "request_started:Agent",
            "request_started:Provider",
            "assistant_started",
            "text_delta",
            "text_delta",
            "usage",
            "assistant_message",
            "context_usage",
            "turn_ended:End",
            "run_finished:Success",
        ]
    );
    // The provider reported 10 input + 2 output tokens of the scripted model's 200k window.
    assert!(events.contains(&AgentEvent::ContextUsage {
        used: 12,
        window: 200_000,
        percent: 0.0
    }));
    match events.last() {
        Some(AgentEvent::RunFinished { final_text, .. }) => {
            assert_eq!(final_text.as_deref(), Some("Hello"))
        }
        other => panic!("unexpected last event {other:?}"),
    }
    let messages = agent.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].text(), "Hello");
    let request = &provider.requests()[0];
    assert_eq!(request.system.as_deref(), Some("be brief"));
    assert_eq!(request.messages[0].text(), "hi");
    assert!(!agent.state().busy);
}

#[tokio::test]
async fn tool_call_then_second_model_call() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .text("Checking.")
            .tool_call_chunks("c1", "echo", ["{\"text\":", "\"pong\"}"]),
        Turn::new().text("It said pong."),
    ]);
    let agent = Agent::builder(provider.clone()).tool(Echo).build();
    let events = collect(agent.prompt("ping?")).await;
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "user_message",
            "turn_started",
            "request_started:Agent",
            "request_started:Provider",
            "assistant_started",
            "text_delta",
            "tool_use_started",
            "tool_use_args_delta",
            "tool_use_args_delta",
            "tool_use_ended",
            "assistant_message",
            "context_usage",
            "tool_call:c1",
            "turn_ended:ToolUse",
            "tool_execution_started:c1",
            "tool_result:c1",
            "turn_started",
            "request_started:Agent",
            "request_started:Provider",
            "assistant_started",
            "text_delta",
            "assistant_message",
            "context_usage",
            "turn_ended:End",
            "run_finished:Success",
        ]
    );
    let call = events.iter().find_map(|e| match e {
        AgentEvent::ToolCall {
            args, side_effect, ..
        } => Some((args.clone(), *side_effect)),
        _ => None,
    });
    assert_eq!(
        call,
        Some((json!({"text": "pong"}), Some(agent_core::SideEffect::Read)))
    );
    // The second request carries the call and its result.
    let second = &provider.requests()[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.messages[2].role, Role::Tool);
    assert_eq!(
        second.messages[2].content[0],
        ContentBlock::ToolResult {
            call_id: "c1".into(),
            is_error: false,
            content: vec![ContentBlock::text("pong")],
        }
    );
    assert_eq!(agent.messages().len(), 4);
}

#[tokio::test]
async fn read_only_calls_run_in_parallel_with_deterministic_order() {
    // Tool `a` only finishes once `b` has started: if calls ran one after another, `a` would
    // never be released and the run would time out.
    let release_a = Arc::new(Notify::new());
    let release_b = Arc::new(Notify::new());
    let (started_tx, mut started_rx) = mpsc::unbounded_channel();
    let a = Gate {
        name: "a",
        release: release_a.clone(),
        started: started_tx.clone(),
    };
    let b = Gate {
        name: "b",
        release: release_b.clone(),
        started: started_tx,
    };
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("ca", "a", "{}")
            .tool_call("cb", "b", "{}"),
        Turn::new().text("both done"),
    ]);
    let agent = Agent::builder(provider).tool(a).tool(b).build();
    let run = agent.prompt("go");
    let mut started = Vec::new();
    for _ in 0..2 {
        let id = tokio::time::timeout(WAIT, started_rx.recv())
            .await
            .expect("both tools start concurrently")
            .expect("sender alive");
        started.push(id);
    }
    started.sort();
    assert_eq!(started, ["ca", "cb"]);
    // Release b first: its result must still come after a's.
    release_b.notify_one();
    release_a.notify_one();
    let events = collect(run).await;
    let tool_events: Vec<String> = kinds(&events)
        .into_iter()
        .filter(|k| {
            k.starts_with("tool_execution") || k.starts_with("tool_result") || k == "tool_progress"
        })
        .collect();
    assert_eq!(
        tool_events,
        [
            "tool_execution_started:ca",
            "tool_progress",
            "tool_result:ca",
            "tool_execution_started:cb",
            "tool_progress",
            "tool_result:cb",
        ]
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}

#[tokio::test]
async fn max_steps_ends_the_run_with_an_error() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", "{\"text\":\"1\"}"),
        Turn::new().tool_call("c2", "echo", "{\"text\":\"2\"}"),
        Turn::new().text("unreachable"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .max_steps(2)
        .build();
    let events = collect(agent.prompt("loop")).await;
    let tail: Vec<_> = events.iter().rev().take(2).cloned().collect();
    assert_eq!(
        tail[1],
        AgentEvent::Error {
            code: ErrorCode::MaxSteps,
            message: "agent model step limit exceeded: 2".into(),
            recoverable: false,
        }
    );
    assert!(matches!(
        tail[0],
        AgentEvent::RunFinished {
            status: RunStatus::Error,
            ..
        }
    ));
    assert_eq!(provider.requests().len(), 2);
    // Both calls have results in the transcript.
    let results = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(results, 2);
}

/// Every tool call in the transcript has exactly one result.
fn assert_consistent(agent: &Agent) {
    let messages = agent.messages();
    let calls: Vec<String> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()))
        .collect();
    let results: Vec<String> = messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, results, "every call has one result, in order");
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_text_and_ends_aborted() {
    let provider = ScriptedProvider::new([slow_text(), Turn::new().text("after")]);
    let agent = Agent::builder(provider).build();
    let mut run = agent.prompt("talk");
    until(&mut run, |e| matches!(e, AgentEvent::TextDelta { .. })).await;
    assert!(agent.state().busy);
    run.abort();
    let rest = collect(run).await;
    assert_eq!(
        kinds(&rest),
        [
            "assistant_message",
            "turn_ended:Aborted",
            "run_finished:Aborted"
        ]
    );
    let messages = agent.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].text(), "partial");
    assert!(!agent.state().busy);
    // The agent is usable afterwards.
    let events = collect(agent.prompt("again")).await;
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}

#[tokio::test]
async fn abort_mid_tool_gives_every_call_a_result() {
    let release = Arc::new(Notify::new());
    let (started_tx, _started_rx) = mpsc::unbounded_channel();
    let slow = Gate {
        name: "slow",
        release,
        started: started_tx,
    };
    let write = Write::default();
    let provider = ScriptedProvider::new([Turn::new()
        .tool_call("c1", "slow", "{}")
        .tool_call("c2", "write", "{}")]);
    let agent = Agent::builder(provider)
        .tool(slow)
        .tool(write.clone())
        .permission_mode(PermissionMode::Unsafe)
        .build();
    let mut run = agent.prompt("work");
    until(&mut run, |e| {
        matches!(e, AgentEvent::ToolExecutionStarted { .. })
    })
    .await;
    agent.abort();
    let rest = collect(run).await;
    let results: Vec<(String, ToolStatus)> = rest
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, status, .. } => Some((id.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1".to_string(), ToolStatus::Error),
            ("c2".to_string(), ToolStatus::Error)
        ]
    );
    assert!(matches!(
        rest.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
    assert_eq!(write.calls.load(Ordering::SeqCst), 0, "c2 never ran");
    assert_consistent(&agent);
}

#[tokio::test]
async fn abort_while_waiting_for_approval() {
    let (asked_tx, mut asked_rx) = mpsc::unbounded_channel();
    let approver = Scripted {
        answers: std::sync::Mutex::new(vec![None]),
        asked: asked_tx,
    };
    let write = Write::default();
    let provider = ScriptedProvider::new([Turn::new().tool_call("c1", "write", "{}")]);
    let agent = Agent::builder(provider)
        .tool(write.clone())
        .permission_mode(PermissionMode::Ask)
        .approver(approver)
        .build();
    let run = agent.prompt("write it");
    let request = tokio::time::timeout(WAIT, asked_rx.recv())
        .await
        .expect("approval asked")
        .expect("sender alive");
    assert_eq!(request.tool, "write");
    run.abort();
    let events = collect(run).await;
    let decided = events.iter().find_map(|e| match e {
        AgentEvent::PermissionDecided { action, .. } => Some(*action),
        _ => None,
    });
    assert_eq!(decided, Some(PermissionAction::Cancel));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
    assert_consistent(&agent);
}

#[tokio::test]
async fn prompt_without_approver_reaches_the_model_as_an_error_result() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().text("I could not write."),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(write.clone())
        .permission_mode(PermissionMode::Ask)
        .build();
    let events = collect(agent.prompt("write it")).await;
    let ks = kinds(&events);
    let at = ks
        .iter()
        .position(|k| k == "permission_requested")
        .expect("permission requested");
    assert_eq!(ks[at + 1], "tool_result:c1", "no execution in between");
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
    let second = &provider.requests()[1];
    match &second.messages[2].content[0] {
        ContentBlock::ToolResult {
            is_error, content, ..
        } => {
            assert!(is_error);
            let text = match &content[0] {
                ContentBlock::Text { text } => text.clone(),
                other => panic!("unexpected {other:?}"),
            };
            assert!(
                text.starts_with("Error: Permission required for write:"),
                "{text}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn approver_allows_denies_and_always_allows() {
    let (asked_tx, mut asked_rx) = mpsc::unbounded_channel();
    let approver = Scripted {
        answers: std::sync::Mutex::new(vec![
            Some(Approval::AllowOnce),
            Some(Approval::Deny {
                reason: Some("not today".into()),
            }),
            Some(Approval::AllowAlways),
        ]),
        asked: asked_tx,
    };
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().tool_call("c2", "write", "{}"),
        Turn::new().tool_call("c3", "write", "{}"),
        Turn::new().tool_call("c4", "write", "{}"),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool(write.clone())
        .permission_mode(PermissionMode::Ask)
        .approver(approver)
        .build();
    let events = collect(agent.prompt("write four times")).await;
    let decisions: Vec<(String, PermissionAction, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PermissionDecided {
                info,
                action,
                always,
                ..
            } => Some((info.id.clone(), *action, *always)),
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("c1".to_string(), PermissionAction::Allow, false),
            ("c2".to_string(), PermissionAction::Deny, false),
            ("c3".to_string(), PermissionAction::Allow, true),
            ("c4".to_string(), PermissionAction::Allow, false),
        ]
    );
    // c4 was covered by the standing grant: three prompts only.
    let mut asked = 0;
    while asked_rx.try_recv().is_ok() {
        asked += 1;
    }
    assert_eq!(asked, 3);
    assert_eq!(write.calls.load(Ordering::SeqCst), 3);
    let denied = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult {
            id,
            status: ToolStatus::Error,
            content,
            ..
        } if id == "c2" => Some(content.clone()),
        _ => None,
    });
    assert_eq!(
        denied,
        Some(vec![ContentBlock::text(
            "Error: Permission denied for write: not today"
        )])
    );
}

#[tokio::test]
async fn usage_accumulates_across_calls_with_cost() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", "{}")
            .step(Step::Usage(ScriptUsage {
                input: 1000,
                output: 100,
                reasoning: Some(10),
                cache_read: 500,
                cache_write: 0,
            })),
        Turn::new().text("ok").usage(2000, 200),
    ]);
    let agent = Agent::builder(provider).tool(Echo).build();
    let events = collect(agent.prompt("count")).await;
    let usages: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage { turn, cumulative } => Some((*turn, *cumulative)),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 2);
    let (first, _) = usages[0];
    let (second, total) = usages[1];
    assert_eq!(total.input, 3000);
    assert_eq!(total.output, 300);
    assert_eq!(total.cache_read, 500);
    assert_eq!(total.reasoning, Some(10));
    // Scripted prices: $1 / $2 / $0.1 per million input / output / cache-read tokens.
    let cost = |u: &agent_core::Usage| u.cost_usd.expect("priced");
    assert!((cost(&first) - (1000.0 + 200.0 + 50.0) / 1e6).abs() < 1e-12);
    assert!((cost(&total) - (cost(&first) + cost(&second))).abs() < 1e-12);
    assert_eq!(agent.state().usage, total);
}

#[tokio::test]
async fn steering_lands_before_the_next_model_call() {
    let release = Arc::new(Notify::new());
    let (started_tx, mut started_rx) = mpsc::unbounded_channel();
    let gate = Gate {
        name: "wait",
        release: release.clone(),
        started: started_tx,
    };
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "wait", "{}"),
        Turn::new().text("steered"),
    ]);
    let agent = Agent::builder(provider.clone()).tool(gate).build();
    let run = agent.prompt("start");
    tokio::time::timeout(WAIT, started_rx.recv())
        .await
        .expect("tool started")
        .expect("sender alive");
    agent.steer("use TypeScript instead");
    release.notify_one();
    let events = collect(run).await;
    let users: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::UserMessage { message } => Some(message.text()),
            _ => None,
        })
        .collect();
    assert_eq!(users, ["start", "use TypeScript instead"]);
    let second = &provider.requests()[1];
    let last = second.messages.last().expect("messages");
    assert_eq!(last.role, Role::User);
    assert_eq!(last.text(), "use TypeScript instead");
}

#[tokio::test]
async fn compaction_replaces_the_transcript() {
    let provider = ScriptedProvider::new([
        Turn::new().text("one"),
        Turn::new().text("two"),
        Turn::new().text("three"),
        Turn::new()
            .text("Summary: ")
            .text("we said three things.")
            .usage(50, 9),
    ]);
    let store = Arc::new(MemorySessionStore::new());
    let agent = Agent::builder(provider.clone())
        .session(store.clone(), "s1")
        .build();
    for prompt in ["a", "b", "c"] {
        collect(agent.prompt(prompt)).await;
    }
    assert_eq!(agent.messages().len(), 6);
    let events = collect(agent.compact()).await;
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "compaction_started",
            "request_started:Agent",
            "request_started:Provider",
            "assistant_started",
            "text_delta",
            "text_delta",
            "usage",
            "compaction_finished",
            "context_usage",
            "run_finished:Success",
        ]
    );
    assert!(events.contains(&AgentEvent::CompactionStarted {
        reason: CompactionReason::Manual
    }));
    let (before, after) = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::CompactionFinished { before, after, .. } => Some((*before, *after)),
            _ => None,
        })
        .expect("compaction_finished");
    assert!(before > 0 && after > 0, "{before} -> {after}");
    let messages = agent.messages();
    assert_eq!(messages.len(), 5);
    assert!(messages[0].synthetic);
    assert_eq!(
        messages[0].text(),
        "## Context Summary (compacted)\n\nSummary: we said three things."
    );
    assert_eq!(messages[1].text(), "b");
    assert_eq!(messages[4].text(), "three");
    // The compaction request offered no tools: one user message rendering the compacted
    // part (the first exchange) as text, ending with the summary instruction.
    let request = provider.requests().pop().expect("request");
    assert!(request.tools.is_empty());
    assert_eq!(request.messages.len(), 1);
    let text = request.messages[0].text();
    assert!(text.contains("[user]\na\n") && text.contains("[assistant]\none\n"));
    assert!(
        !text.contains("[user]\nb\n"),
        "the kept tail is not summarised"
    );
    assert!(text.ends_with(agent_core::compaction::COMPACTION_REQUEST));
    // The session replays to the compacted transcript.
    let records = store.load("s1").await.expect("session");
    assert_eq!(SessionRecord::replay(&records), messages);
}

#[tokio::test]
async fn compaction_refuses_short_transcripts() {
    let agent = Agent::builder(ScriptedProvider::new([Turn::new().text("x")])).build();
    let events = collect(agent.compact()).await;
    assert!(events.contains(&AgentEvent::Error {
        code: ErrorCode::Compaction,
        message: "nothing to compact".into(),
        recoverable: false,
    }));
    collect(agent.prompt("hi")).await;
    let events = collect(agent.compact()).await;
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Error { message, .. }
        if message == "nothing to compact: keep-tail covers the whole transcript")));
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn provider_error_gives_error_and_terminal_events() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .text("par")
            .error(ProviderErrorKind::Server, "upstream exploded"),
        Turn::new().text("recovered"),
    ]);
    let agent = Agent::builder(provider).build();
    let events = collect(agent.prompt("hi")).await;
    let tail: Vec<_> = events.iter().rev().take(3).rev().cloned().collect();
    assert_eq!(
        tail,
        [
            AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::Error,
                error: Some("upstream exploded".into()),
            },
            AgentEvent::Error {
                code: ErrorCode::Provider,
                message: "upstream exploded".into(),
                recoverable: false,
            },
            AgentEvent::RunFinished {
                status: RunStatus::Error,
                final_text: None,
            },
        ]
    );
    // The partial reply is not kept, and the agent works afterwards.
    assert_eq!(agent.messages().len(), 1);
    let events = collect(agent.prompt("again")).await;
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}

#[tokio::test]
async fn missing_answer_is_recovered_exactly_once() {
    let provider = ScriptedProvider::new([
        Turn::new(),
        Turn::new().reasoning("hmm"),
        Turn::new().text("late"),
    ]);
    let agent = Agent::builder(provider.clone()).build();
    let events = collect(agent.prompt("answer me")).await;
    let recoveries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnRecovery { reason, attempt } => Some((*reason, *attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(recoveries, [(RecoveryReason::MissingAnswer, 1)]);
    let stops: Vec<StopReason> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnEnded { stop, .. } => Some(*stop),
            _ => None,
        })
        .collect();
    // The second empty reply is not recovered again: the run ends after two calls.
    assert_eq!(stops, [StopReason::Continue, StopReason::End]);
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(provider.remaining(), 1);
    let nudge = provider.requests()[1]
        .messages
        .last()
        .cloned()
        .expect("nudge");
    assert_eq!(nudge.text(), agent_core::RECOVERY_PROMPT);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            final_text: None
        })
    ));
}

#[tokio::test]
async fn recovery_leads_to_an_answer() {
    let provider = ScriptedProvider::new([
        Turn::new().reasoning("thinking only"),
        Turn::new().text("answer"),
    ]);
    let agent = Agent::builder(provider).build();
    let events = collect(agent.prompt("q")).await;
    assert!(events.contains(&AgentEvent::TurnRecovery {
        reason: RecoveryReason::CommentaryOnly,
        attempt: 1
    }));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { final_text: Some(t), .. }) if t == "answer"
    ));
}

#[tokio::test]
async fn second_prompt_waits_for_the_first() {
    let release = Arc::new(Notify::new());
    let (started_tx, mut started_rx) = mpsc::unbounded_channel();
    let gate = Gate {
        name: "wait",
        release: release.clone(),
        started: started_tx,
    };
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "wait", "{}"),
        Turn::new().text("first done"),
        Turn::new().text("second done"),
    ]);
    let agent = Agent::builder(provider.clone()).tool(gate).build();
    let first = agent.prompt("first");
    let second = agent.prompt("second");
    tokio::time::timeout(WAIT, started_rx.recv())
        .await
        .expect("tool started")
        .expect("sender alive");
    // The second prompt has not reached the provider while the first is in its tool.
    assert_eq!(provider.requests().len(), 1);
    release.notify_one();
    let first = collect(first).await;
    let second = collect(second).await;
    assert!(
        matches!(first.last(), Some(AgentEvent::RunFinished { final_text: Some(t), .. }) if t == "first done")
    );
    assert!(
        matches!(second.last(), Some(AgentEvent::RunFinished { final_text: Some(t), .. }) if t == "second done")
    );
    let texts: Vec<String> = agent.messages().iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        ["first", "", "", "first done", "second", "second done"]
    );
}

#[tokio::test]
async fn empty_prompt_is_an_error() {
    let agent = Agent::builder(ScriptedProvider::new([])).build();
    let events = collect(agent.prompt(UserInput::text("  "))).await;
    assert_eq!(
        events[1],
        AgentEvent::Error {
            code: ErrorCode::EmptyPrompt,
            message: "prompt is empty".into(),
            recoverable: false
        }
    );
    assert_eq!(agent.messages().len(), 0);
}

#[tokio::test]
async fn images_become_image_blocks() {
    let provider = ScriptedProvider::new([Turn::new().text("a cat")]);
    let agent = Agent::builder(provider.clone()).build();
    collect(
        agent.prompt(UserInput::text("what is this?").with_image("image/png", vec![1u8, 2, 3])),
    )
    .await;
    let sent = &provider.requests()[0].messages[0];
    assert_eq!(
        sent.content[1],
        ContentBlock::image("image/png", vec![1u8, 2, 3])
    );
    // Images survive a JSON round trip (base64 in JSON).
    let json = serde_json::to_string(sent).expect("serialise");
    assert!(json.contains("\"data\":\"AQID\""));
    let back: agent_core::Message = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(&back, sent);
}

#[tokio::test]
async fn sessions_record_and_resume_the_transcript() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", "{\"text\":\"x\"}"),
        Turn::new().text("first"),
        Turn::new().text("second"),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(Echo)
        .session(store.clone(), "abc")
        .build();
    collect(agent.prompt("one")).await;
    let resumed = Agent::builder(provider.clone())
        .tool(Echo)
        .resume(store.clone(), "abc")
        .await
        .expect("session exists")
        .build();
    assert_eq!(resumed.messages(), agent.messages());
    collect(resumed.prompt("two")).await;
    assert_eq!(provider.requests()[2].messages.len(), 5);
    assert_eq!(store.list().await.expect("list"), ["abc"]);
    // Fork copies the transcript into a new session and leaves the original alone.
    let forked = resumed
        .fork_into(store.clone(), "fork")
        .await
        .expect("fork");
    assert_eq!(forked.messages(), resumed.messages());
    assert_eq!(forked.state().usage, Default::default());
    let replay = SessionRecord::replay(&store.load("fork").await.expect("fork session"));
    assert_eq!(replay, resumed.messages());
    resumed.clear().await.expect("clear");
    assert!(resumed.messages().is_empty());
    assert!(SessionRecord::replay(&store.load("abc").await.expect("abc")).is_empty());
    assert_eq!(forked.messages().len(), 6);
}

#[tokio::test]
async fn dropping_a_run_aborts_it() {
    let provider = ScriptedProvider::new([slow_text(), Turn::new().text("next")]);
    let agent = Agent::builder(provider).build();
    let mut run = agent.prompt("talk");
    until(&mut run, |e| matches!(e, AgentEvent::TextDelta { .. })).await;
    drop(run);
    // The next prompt runs (it would wait forever behind a run that was not aborted).
    let events = collect(agent.prompt("again")).await;
    assert!(
        matches!(events.last(), Some(AgentEvent::RunFinished { final_text: Some(t), .. }) if t == "next")
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_become_error_results() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "nope", "{}")
            .tool_call("c2", "echo", "{\"text\":"),
        Turn::new().text("sorry"),
    ]);
    let agent = Agent::builder(provider).tool(Echo).build();
    let events = collect(agent.prompt("x")).await;
    let results: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { id, content, .. } => match &content[0] {
                ContentBlock::Text { text } => Some((id.clone(), text.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(results[0], ("c1".into(), "unknown tool: nope".into()));
    assert!(
        results[1].1.starts_with("invalid arguments for echo:"),
        "{}",
        results[1].1
    );
    let raw = events.iter().find_map(|e| match e {
        AgentEvent::ToolCall {
            id,
            raw_args,
            side_effect,
            ..
        } if id == "c1" || id == "c2" => Some((id.clone(), raw_args.clone(), *side_effect)),
        _ => None,
    });
    assert_eq!(raw, Some(("c1".into(), None, None)));
    assert!(!kinds(&events)
        .iter()
        .any(|k| k.starts_with("tool_execution_started")));
    assert_consistent(&agent);
}

#[tokio::test]
async fn plan_mode_denies_writes() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider)
        .tool(write.clone())
        .permission_mode(PermissionMode::Plan)
        .build();
    let events = collect(agent.prompt("x")).await;
    assert!(events.iter().any(|e| matches!(e, AgentEvent::PermissionDecided { action: PermissionAction::Deny, info, .. } if info.reason.as_deref() == Some("plan mode is read-only"))));
    assert_eq!(write.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn auto_mode_allows_workspace_writes_and_reports_the_decision() {
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().text("ok"),
    ]);
    let agent = Agent::builder(provider).tool(write.clone()).build();
    let events = collect(agent.prompt("x")).await;
    let decided = events.iter().find_map(|e| match e {
        AgentEvent::PermissionDecided {
            info,
            action,
            granted,
            ..
        } => Some((info.reason.clone(), *action, *granted)),
        _ => None,
    });
    assert_eq!(
        decided,
        Some((
            Some("workspace write is allowed".into()),
            PermissionAction::Allow,
            false
        ))
    );
    let changed = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { changed_files, .. } => Some(changed_files.clone()),
        _ => None,
    });
    assert_eq!(changed, Some(vec!["out.txt".to_string()]));
    assert_eq!(write.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn system_prompt_and_approver_can_change_after_build() {
    let (asked_tx, mut asked_rx) = mpsc::unbounded_channel();
    let write = Write::default();
    let provider = ScriptedProvider::new([
        Turn::new().text("one"),
        Turn::new().tool_call("c1", "write", "{}"),
        Turn::new().text("two"),
    ]);
    let agent = Agent::builder(provider.clone())
        .system_prompt("base")
        .tool(write.clone())
        .permission_mode(PermissionMode::Ask)
        .build();
    collect(agent.prompt("a")).await;
    let fork = agent.fork();
    fork.set_system_prompt(Some("base\n\nGoal: ship it".into()));
    fork.set_approver(Some(Arc::new(Scripted {
        answers: std::sync::Mutex::new(vec![Some(Approval::AllowOnce)]),
        asked: asked_tx,
    })));
    collect(fork.prompt("b")).await;
    let requests = provider.requests();
    assert_eq!(requests[0].system.as_deref(), Some("base"));
    assert_eq!(requests[1].system.as_deref(), Some("base\n\nGoal: ship it"));
    assert_eq!(
        fork.system_prompt().as_deref(),
        Some("base\n\nGoal: ship it")
    );
    assert_eq!(
        agent.system_prompt().as_deref(),
        Some("base"),
        "the parent is unchanged"
    );
    assert!(
        asked_rx.try_recv().is_ok(),
        "the fork's new approver was asked"
    );
    assert_eq!(write.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn recv_many_returns_the_same_events_in_bursts() {
    let turn = || Turn::new().text("a").text("b").text("c").usage(3, 3);
    let one_by_one = collect(
        Agent::builder(ScriptedProvider::new([turn()]))
            .build()
            .prompt("hi"),
    )
    .await;
    let mut run = Agent::builder(ScriptedProvider::new([turn()]))
        .build()
        .prompt("hi");
    let mut batched = Vec::new();
    let mut calls = 0;
    loop {
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            run.recv_many(&mut batched, 4),
        )
        .await
        .expect("an event or the end within 10 s");
        if n == 0 {
            break;
        }
        assert!(n <= 4, "at most the limit per call, got {n}");
        calls += 1;
    }
    assert_eq!(kinds(&batched), kinds(&one_by_one));
    assert!(calls >= batched.len().div_ceil(4));
    assert!(matches!(
        batched.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}
