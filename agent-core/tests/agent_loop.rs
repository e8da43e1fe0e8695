//! The agent loop, end to end on the scripted provider (aborts, the permission gate and
//! approvals in `agent_loop/gate.rs`).

mod common;
#[path = "agent_loop/gate.rs"]
mod gate;

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
    // Every call, the compaction's too, names the session (the prompt-cache key).
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests
        .iter()
        .all(|r| r.session_id.as_deref() == Some("s1")));
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
