//! Aborts, the permission gate and approvals.

use super::*;

fn slow_text() -> Turn {
    Turn::new()
        .text("partial")
        .delay(std::time::Duration::from_secs(600))
        .text("never")
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
    fork.update()
        .system_prompt(Some("base\n\nGoal: ship it".into()))
        .approver(Scripted {
            answers: std::sync::Mutex::new(vec![Some(Approval::AllowOnce)]),
            asked: asked_tx,
        })
        .apply();
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
