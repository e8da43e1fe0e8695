//! The mapping's unit tests: per-call regrouping, output caps, exit codes, and the
//! coverage of every `AgentEvent` variant (agent-host's harness).

use super::*;
use agent_core::{
    event::{ErrorCode, StopReason},
    ContentBlock, Message, Permission, PermissionMode, RunStatus, Usage,
};
use agent_host::turn::coverage::assert_covers;
use serde_json::json;

fn config() -> MappingConfig {
    MappingConfig {
        session_id: "s".into(),
        permission_mode: "ask".into(),
        autonomy: "low".into(),
    }
}

fn info(id: &str) -> Box<PermissionInfo> {
    Box::new(PermissionInfo {
        id: id.into(),
        name: "read_file".into(),
        args: json!({}),
        mode: PermissionMode::Ask,
        permission: Permission::Prompt,
        side_effect: SideEffect::Read,
        reason: Some("why".into()),
        risk: Risk::for_side_effect(SideEffect::Read),
        block: None,
        rule: None,
    })
}

fn call(id: &str) -> AgentEvent {
    AgentEvent::ToolCall {
        id: id.into(),
        name: "read_file".into(),
        args: json!({"path": "a"}),
        raw_args: None,
        side_effect: Some(SideEffect::Read),
    }
}

fn result(id: &str, text: &str) -> AgentEvent {
    AgentEvent::ToolResult {
        id: id.into(),
        name: "read_file".into(),
        status: ToolStatus::Ok,
        content: vec![ContentBlock::text(text)],
        truncated: false,
        redacted: false,
        changed_files: vec![],
        duration_ms: 1,
    }
}

fn finished(status: RunStatus, text: Option<&str>) -> AgentEvent {
    AgentEvent::RunFinished {
        status,
        final_text: text.map(str::to_string),
    }
}

/// Orders, folds and ends `events` the way exec does; returns every line.
fn lines(events: Vec<AgentEvent>) -> (Vec<EventBody>, i32) {
    let terminal = crate::pipeline::bodies(config(), events);
    (terminal.events, terminal.exit_code)
}

fn types(events: &[EventBody]) -> Vec<&'static str> {
    events.iter().map(EventBody::type_name).collect()
}

#[test]
fn calls_are_regrouped_per_call() {
    let (all, code) = lines(vec![
        AgentEvent::TextDelta { delta: "hi".into() },
        AgentEvent::Usage {
            turn: Usage {
                input: 10,
                cache_read: 5,
                output: 3,
                ..Usage::default()
            },
            cumulative: Usage::default(),
        },
        AgentEvent::AssistantMessage {
            message: Message::assistant_text("hi"),
        },
        call("c1"),
        call("c2"),
        AgentEvent::TurnEnded {
            step: 1,
            stop: StopReason::ToolUse,
            error: None,
        },
        AgentEvent::ToolExecutionStarted {
            id: "c1".into(),
            name: "read_file".into(),
        },
        result("c1", "one"),
        AgentEvent::PermissionRequested(info("c2")),
        result("c2", "Error: no"),
        finished(RunStatus::Success, Some("done")),
    ]);
    assert_eq!(
        types(&all),
        [
            "text",
            "usage",
            "tool_call",
            "tool_result",
            "tool_call",
            "permission_request",
            "tool_result",
            "final",
            "run_end"
        ]
    );
    assert_eq!(
        all[1],
        EventBody::Usage(UsageEvent {
            completion_tokens: 3,
            prompt_tokens: 15,
            total_tokens: 18
        })
    );
    let EventBody::PermissionRequest(req) = &all[5] else {
        panic!("expected a permission request");
    };
    assert!(!req.permission_granted);
    assert_eq!(req.action, "prompt");
    assert_eq!(req.risk.level, "low");
    assert_eq!(req.session_id, "s");
    assert_eq!(code, 0);
}

#[test]
fn output_is_capped_on_a_char_boundary() {
    let long = "é".repeat(TOOL_OUTPUT_LIMIT);
    let (out, cut) = cap_output(&long);
    assert!(cut);
    assert!(out.ends_with("\n[truncated]"));
    assert!(out.len() <= TOOL_OUTPUT_LIMIT + "\n[truncated]".len());
    assert_eq!(cap_output("short"), ("short".into(), false));
}

#[test]
fn errors_map_to_exit_codes() {
    let error = |code| AgentEvent::Error {
        code,
        message: "boom".into(),
        recoverable: false,
    };
    let (t, code) = lines(vec![
        error(ErrorCode::Provider),
        finished(RunStatus::Error, None),
    ]);
    assert_eq!(code, 3);
    assert_eq!(types(&t), ["error", "run_end"]);
    let (t, code) = lines(vec![
        error(ErrorCode::MaxSteps),
        finished(RunStatus::Error, Some("partial")),
    ]);
    assert_eq!(code, 4);
    assert_eq!(types(&t), ["final", "error", "run_end"]);
    let (t, code) = lines(vec![finished(RunStatus::Aborted, None)]);
    assert_eq!(code, 130);
    assert_eq!(types(&t), ["error", "run_end"]);
    // A stream that ends without `RunFinished` was aborted.
    let (_, code) = lines(vec![]);
    assert_eq!(code, 130);
}

fn tag(event: &AgentEvent) -> String {
    let value = serde_json::to_value(event).expect("serialise");
    value["type"].as_str().expect("tagged").to_string()
}

/// Fails when agent-core gains a variant the mapping neither maps nor declares not shown
/// (agent-host's harness), or when a variant it says it shows shows nothing (in this run's
/// lines, the terminal ones included) or one it does not show shows something.
#[test]
fn every_variant_is_shown_or_not_shown() {
    let report = assert_covers(ZeroMapping::new(config()));
    let names = agent_core::testing::variant_names();
    assert!(names.len() >= 25, "{names:?}");
    assert_eq!(report.entries.len(), names.len());
    for framing in agent_host::turn::FRAMING {
        assert!(report.not_shown().contains(framing), "{framing}");
    }
    let samples = agent_core::testing::one_of_each();
    let mut sampled: Vec<String> = samples.iter().map(tag).collect();
    sampled.sort();
    let mut all = names.clone();
    all.sort();
    assert_eq!(sampled, all, "one_of_each has one of every variant");

    // A run of nothing but its end; each sample is fed before that end.
    let end = || finished(RunStatus::Success, None);
    let plain = lines(vec![end()]).0;
    for sample in samples {
        let name = tag(&sample);
        let (events, baseline) = match sample {
            end @ AgentEvent::RunFinished { .. } => (vec![end], plain.clone()),
            // Zero shows a turn's end only when the output limit cut it (a warning).
            AgentEvent::TurnEnded { step, error, .. } => (
                vec![
                    AgentEvent::TurnEnded {
                        step,
                        stop: StopReason::Length,
                        error,
                    },
                    end(),
                ],
                plain.clone(),
            ),
            // A report shows only when the sandbox enforces less than asked.
            AgentEvent::SandboxReport(mut report) => {
                report.enforced = agent_core::sandbox::Enforcement::Partial;
                (
                    vec![AgentEvent::SandboxReport(report), end()],
                    plain.clone(),
                )
            }
            // A decision shows when it blocked the prompt (or halted the run).
            AgentEvent::HookDecided {
                hook,
                reason,
                call_id,
                ..
            } => (
                vec![
                    AgentEvent::HookDecided {
                        hook,
                        event: HookEvent::UserPrompt,
                        outcome: HookOutcome::Block,
                        reason,
                        call_id,
                    },
                    end(),
                ],
                plain.clone(),
            ),
            // A block shows on its call's result.
            AgentEvent::ToolBlocked { id, name, block } => (
                vec![
                    AgentEvent::ToolBlocked {
                        id: id.clone(),
                        name,
                        block,
                    },
                    result(&id, "x"),
                    end(),
                ],
                lines(vec![result(&id, "x"), end()]).0,
            ),
            other => (vec![other, end()], plain.clone()),
        };
        let shown = lines(events).0 != baseline;
        assert_eq!(
            shown,
            report.shown().contains(&name.as_str()),
            "{name}: shown {shown}, its coverage says the other way"
        );
    }
}
