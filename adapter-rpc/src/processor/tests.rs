//! Tests of [`super`].

use super::*;
use agent_core::{message::ToolCall, RunStatus};
use serde_json::json;

/// The mapping over its own turn state, as a session's turn feeds it.
struct Processor(agent_host::turn::Fold<RpcMapping>);

impl Processor {
    fn map<'a>(&mut self, event: &'a AgentEvent) -> Option<Event<'a>> {
        let mut frame = None;
        self.0.feed(event, |event| frame = Some(event));
        frame
    }

    fn process(&mut self, event: AgentEvent) -> Option<Event<'static>> {
        self.map(&event).map(Event::into_owned)
    }

    fn map_into(&mut self, event: &AgentEvent, frames: &mut Frames) {
        if let Some(event) = self.map(event) {
            push_frame(frames, event);
        }
    }
}

fn processor(provider: &str) -> Processor {
    Processor(agent_host::turn::Fold::new(RpcMapping::new(
        SharedMeter::new(UsageMeter::new(provider)),
    )))
}

#[test]
fn reasoning_is_dropped_and_images_are_counted() {
    let content = vec![
        ContentBlock::Reasoning {
            text: "hmm".into(),
            signature: None,
            opaque: None,
        },
        ContentBlock::text("hi"),
        ContentBlock::image("image/png", vec![0u8; 7]),
        ContentBlock::ToolCall(ToolCall {
            id: "c".into(),
            name: "t".into(),
            args: json!({"a": 1}),
        }),
    ];
    let value = serde_json::to_value(blocks(&content)).expect("serialise");
    assert_eq!(
        value,
        json!([
            {"type": "text", "text": "hi"},
            {"type": "image", "mime_type": "image/png", "bytes": 7},
            {"type": "tool_call", "id": "c", "name": "t", "args": {"a": 1}}
        ])
    );
}

#[test]
fn stops_map_to_zut_values() {
    let mut p = processor("scripted");
    let end = |stop| AgentEvent::TurnEnded {
        step: 1,
        stop,
        error: None,
    };
    assert_eq!(
        p.process(end(StopReason::Refusal)),
        Some(Event::TurnEnd {
            stop: Stop::End,
            error: None
        })
    );
    assert_eq!(
        p.process(AgentEvent::TurnEnded {
            step: 1,
            stop: StopReason::Aborted,
            error: Some("aborted".into())
        }),
        Some(Event::TurnEnd {
            stop: Stop::Aborted,
            error: Some(ABORTED_ERROR.into())
        })
    );
    assert_eq!(
        p.process(AgentEvent::RunFinished {
            status: RunStatus::Success,
            final_text: None
        }),
        Some(Event::Done)
    );
    assert_eq!(
        p.process(AgentEvent::ReasoningDelta { delta: "x".into() }),
        None
    );
}

#[test]
fn every_variant_is_mapped_or_deliberately_not_shown() {
    let report = agent_host::turn::coverage::assert_covers(RpcMapping::new(SharedMeter::new(
        UsageMeter::new("openai"),
    )));
    // What the mapping declares not shown is what the docs list: NOT_SHOWN, and the
    // sandbox block, which rides on its call's `tool_result`.
    let mut declared: Vec<&str> = NOT_SHOWN.to_vec();
    declared.push("tool_blocked");
    let mut not_shown = report.not_shown();
    declared.sort_unstable();
    not_shown.sort_unstable();
    assert_eq!(not_shown, declared);
    let names = agent_core::testing::variant_names();
    assert!(names.len() >= 25, "serde listed {names:?}");
    for name in NOT_SHOWN.iter().chain(&PARTLY_SHOWN) {
        assert!(
            names.iter().any(|n| n == name),
            "NOT_SHOWN names `{name}`, which agent-core no longer has"
        );
    }
    // Every shown variant but the partly shown ones makes its frame.
    for entry in &report.entries {
        if entry.coverage == Coverage::Shown && !PARTLY_SHOWN.contains(&entry.kind.as_str()) {
            assert_eq!(entry.frames, 1, "`{}` makes one frame", entry.kind);
        }
    }
}

#[test]
fn frames_borrow_the_events_text_and_owned_frames_match() {
    let (mut p, mut twin) = (processor("openai"), processor("openai"));
    for event in agent_core::testing::one_of_each() {
        // Two processors, as usage is metered per processor.
        let borrowed = p.map(&event);
        let owned = twin.process(event.clone());
        assert_eq!(borrowed, owned, "{event:?}");
        if let Some(Event::TextDelta { delta }) = &borrowed {
            assert!(matches!(delta, Cow::Borrowed(_)), "no copy of a delta");
        }
    }
    let mut frames = Frames::with_escapes(agent_host::text::JsonEscapes::LineSeparators);
    p.map_into(
        &AgentEvent::TextDelta {
            delta: "a\u{2028}b".into(),
        },
        &mut frames,
    );
    p.map_into(
        &AgentEvent::ReasoningDelta { delta: "r".into() },
        &mut frames,
    );
    assert_eq!(
        frames.bytes(),
        b"{\"type\":\"text_delta\",\"delta\":\"a\\u2028b\"}\n"
    );
}

#[test]
fn measured_cache_figures_follow_the_provider() {
    let usage = Usage {
        input: 10,
        output: 5,
        reasoning: None,
        cache_read: 0,
        cache_write: 0,
        cost_usd: None,
    };
    let mut scripted = UsageMeter::new("scripted");
    let wire = scripted.record(&usage);
    assert_eq!(
        (wire.cache_measured_prompt, wire.cache_measured_read),
        (0, 0)
    );
    let cached = Usage {
        cache_read: 30,
        ..usage
    };
    let wire = scripted.record(&cached);
    assert_eq!(
        (wire.cache_measured_prompt, wire.cache_measured_read),
        (40, 30)
    );
    assert_eq!(scripted.cumulative(&usage).cache_measured_prompt, 40);

    let mut openai = UsageMeter::new("openai");
    let wire = openai.record(&usage);
    assert_eq!(
        (wire.cache_measured_prompt, wire.cache_measured_read),
        (10, 0)
    );
    assert_eq!(wire.cost_usd, 0.0);
}

#[test]
fn a_sandbox_block_rides_on_its_calls_tool_result() {
    let mut p = processor("openai");
    let samples = agent_core::testing::one_of_each();
    let blocked = samples
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolBlocked { .. }))
        .expect("sample");
    let result = samples
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .expect("sample");
    assert_eq!(p.map(blocked), None, "no frame of its own");
    let frame =
        serde_json::to_value(FrameRef::Event(p.map(result).expect("mapped"))).expect("json");
    assert_eq!(
        frame["block"],
        json!({"code": "sandbox", "tool_name": "bash", "path": "/etc/x",
               "reason": "the sandbox refused a write outside the workspace",
               "recoverable": true})
    );
    // Taken once: a later result of the same id has none.
    let again =
        serde_json::to_value(FrameRef::Event(p.map(result).expect("mapped"))).expect("json");
    assert!(again.get("block").is_none(), "{again}");
}

#[test]
fn a_blocked_prompt_and_a_halt_are_errors_other_hook_decisions_are_not_shown() {
    let mut p = processor("scripted");
    let decided = |event, outcome| AgentEvent::HookDecided {
        hook: "policy".into(),
        event,
        outcome,
        reason: Some("not today".into()),
        call_id: None,
    };
    assert_eq!(
        p.map(&decided(HookEvent::UserPrompt, HookOutcome::Block)),
        Some(Event::Error {
            message: "prompt was blocked by hook \"policy\": not today".into()
        })
    );
    assert_eq!(
        p.map(&decided(HookEvent::BeforeTool, HookOutcome::Halt)),
        Some(Event::Error {
            message: "the run was stopped by hook \"policy\": not today".into()
        })
    );
    for (event, outcome) in [
        (HookEvent::BeforeTool, HookOutcome::Deny),
        (HookEvent::BeforeTool, HookOutcome::Rewrite),
        (HookEvent::AfterTool, HookOutcome::Append),
        (HookEvent::Stop, HookOutcome::Continue),
        (HookEvent::UserPrompt, HookOutcome::AddContext),
        (HookEvent::BeforeTool, HookOutcome::Failed),
    ] {
        assert_eq!(
            p.map(&decided(event, outcome)),
            None,
            "{event:?} {outcome:?}"
        );
    }
}

#[test]
fn sub_agent_events_are_progress_of_the_task_call_never_top_level_text() {
    let mut p = processor("scripted");
    let wrap = |event: AgentEvent| AgentEvent::Subagent {
        task_id: "task_1".into(),
        name: "explorer".into(),
        call_id: "t".into(),
        event: Box::new(event),
    };
    let twice = |event: AgentEvent| AgentEvent::Subagent {
        task_id: "task_1".into(),
        name: "explorer".into(),
        call_id: "t".into(),
        event: Box::new(AgentEvent::Subagent {
            task_id: "task_2".into(),
            name: "worker".into(),
            call_id: "inner".into(),
            event: Box::new(event),
        }),
    };
    let progress = |p: &mut Processor, event: &AgentEvent| match p.map(event) {
        Some(Event::ToolProgress { id, text }) => Some((id.into_owned(), text.into_owned())),
        None => None,
        Some(other) => panic!("not progress: {other:?}"),
    };
    let delta = wrap(AgentEvent::TextDelta {
        delta: "Looking.".into(),
    });
    assert_eq!(
        progress(&mut p, &delta),
        Some(("t".into(), "Looking.".into()))
    );
    let nested = twice(AgentEvent::TextDelta {
        delta: "deep".into(),
    });
    assert_eq!(progress(&mut p, &nested), Some(("t".into(), "deep".into())));
    let call = wrap(AgentEvent::ToolCall {
        id: "c".into(),
        name: "read".into(),
        args: json!({"path": "a"}),
        raw_args: None,
        side_effect: Some(agent_core::SideEffect::Read),
    });
    let (_, text) = progress(&mut p, &call).expect("shown");
    assert!(text.contains("read") && text.contains("\"path\""), "{text}");
    let usage = wrap(AgentEvent::TurnStarted { step: 1 });
    assert_eq!(progress(&mut p, &usage), None);
    for event in agent_core::testing::one_of_each() {
        if let AgentEvent::SubagentStarted { .. } | AgentEvent::SubagentFinished { .. } = event {
            let (id, text) = progress(&mut p, &event).expect("shown");
            assert_eq!(id, "t");
            assert!(text.contains("explorer"), "{text}");
        }
    }
}
