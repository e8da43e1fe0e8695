//! Prompt, stop, session, compaction and fork hooks, and the hook events' JSON form.

use super::*;

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
    agent.update().max_stop_continuations(0).apply();
    let events = collect(agent.prompt("again")).await;
    assert_eq!(provider.requests().len(), 1);
    let outcomes: Vec<HookOutcome> = decided(&events).iter().map(|d| d.2).collect();
    assert_eq!(outcomes, vec![HookOutcome::Overruled]);
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
    fork.update().hooks([]).apply();
    let events = collect(fork.prompt("y")).await;
    assert!(decided(&events).is_empty());
    assert_eq!(provider.requests().len(), 1);
    // The parent still has its hook.
    let events = collect(agent.prompt("z")).await;
    assert_eq!(decided(&events).len(), 1);
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
