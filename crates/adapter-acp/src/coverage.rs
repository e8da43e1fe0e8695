//! Whether a protocol's mapping knows an [`AgentEvent`](agent_core::AgentEvent).
//!
//! Each mapping (ZCode's [`ZcodeTurn`](crate::zcode::mapping::ZcodeTurn), ACP's
//! [`TurnMapper`](crate::acp::mapping::TurnMapper)) matches every variant by name and says
//! for each one whether it is [shown](Coverage::Shown) or
//! [deliberately not shown](Coverage::NotShown). `AgentEvent` is `#[non_exhaustive]`, so the
//! compiler still wants a last arm for variants added to agent-core later: that arm says
//! [`Coverage::Unknown`] (and logs it), and each protocol's coverage test, which feeds one
//! event of every variant agent-core has, fails until the new variant is mapped or listed.

/// What a mapping does with one kind of agent event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Mapped to the protocol (an empty delta may still map to nothing).
    Shown,
    /// Deliberately not shown on this protocol (bookkeeping only, or carried another way).
    NotShown,
    /// A variant this mapping does not know: added to agent-core after the mapping.
    Unknown,
}

impl Coverage {
    /// The coverage of an event the mapping does not know, logged once per event at debug
    /// level (a release build keeps serving; the coverage tests catch it).
    pub fn unknown(event: &agent_core::AgentEvent) -> Self {
        tracing::debug!(?event, "an agent event this protocol does not map");
        Self::Unknown
    }
}

/// One sample event of every `AgentEvent` variant, and the check that the samples cover
/// every variant agent-core has.
#[cfg(test)]
pub(crate) mod samples {
    use agent_core::{
        AgentEvent, Block, BlockCode, ContentBlock, ErrorCode, HookEvent, HookOutcome, Message,
        Permission, PermissionAction, PermissionInfo, PermissionMode, PlanItem, PlanStatus,
        ProgressStream, RecoveryReason, RequestScope, RunKind, RunStatus, SandboxPolicy,
        SandboxReport, SideEffect, StopReason, ToolStatus, Usage,
    };
    use serde_json::json;

    /// The `type` tags of every `AgentEvent` variant, read from serde's "unknown variant"
    /// error, which lists them all: this follows agent-core without a list kept here.
    pub(crate) fn variant_tags() -> Vec<String> {
        let err = match serde_json::from_value::<AgentEvent>(json!({"type": "\u{1}"})) {
            Ok(event) => panic!("a tag that is no variant parsed as {event:?}"),
            Err(err) => err.to_string(),
        };
        let expected = err
            .split_once("expected one of")
            .map(|(_, list)| list)
            .unwrap_or_else(|| panic!("serde no longer lists the variants: {err}"));
        let tags: Vec<String> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert!(tags.len() > 10, "too few variants read from {err}");
        tags
    }

    fn tag(event: &AgentEvent) -> String {
        serde_json::to_value(event).expect("an event serialises")["type"]
            .as_str()
            .expect("tagged")
            .to_string()
    }

    fn permission_info() -> PermissionInfo {
        PermissionInfo {
            id: "c1".into(),
            name: "bash".into(),
            args: json!({"command": "ls"}),
            mode: PermissionMode::Ask,
            permission: Permission::Prompt,
            side_effect: SideEffect::Shell,
            reason: None,
            risk: Default::default(),
            block: None,
        }
    }

    /// One event of every variant, each with content a mapping can show.
    pub(crate) fn every_event() -> Vec<AgentEvent> {
        let usage = Usage {
            input: 10,
            output: 5,
            ..Default::default()
        };
        let events = vec![
            AgentEvent::RunStarted {
                kind: RunKind::Prompt,
            },
            AgentEvent::SandboxReport(SandboxReport::new(&SandboxPolicy::workspace_write(), None)),
            AgentEvent::UserMessage {
                message: Message::user_text("hi"),
            },
            AgentEvent::TurnStarted { step: 1 },
            AgentEvent::RequestStarted {
                scope: RequestScope::Agent,
                provider: "scripted".into(),
                model: "m".into(),
                attempt: 1,
                max_attempts: 3,
            },
            AgentEvent::RetryScheduled {
                scope: RequestScope::Agent,
                attempt: 2,
                max_attempts: 3,
                delay_ms: 10,
            },
            AgentEvent::AssistantStarted,
            AgentEvent::TextDelta {
                delta: "Hello".into(),
            },
            AgentEvent::ReasoningDelta {
                delta: "hmm".into(),
            },
            AgentEvent::ToolUseStarted {
                id: "c1".into(),
                name: "bash".into(),
            },
            AgentEvent::ToolUseArgsDelta {
                id: "c1".into(),
                delta: "{".into(),
            },
            AgentEvent::ToolUseEnded { id: "c1".into() },
            AgentEvent::Usage {
                turn: usage,
                cumulative: usage,
            },
            AgentEvent::AssistantMessage {
                message: Message::assistant_text("Hello"),
            },
            AgentEvent::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                args: json!({"command": "ls"}),
                raw_args: None,
                side_effect: None,
            },
            AgentEvent::TurnEnded {
                step: 1,
                stop: StopReason::ToolUse,
                error: None,
            },
            AgentEvent::TurnRecovery {
                reason: RecoveryReason::MissingAnswer,
                attempt: 1,
            },
            AgentEvent::PermissionRequested(Box::new(permission_info())),
            AgentEvent::PermissionDecided {
                info: Box::new(permission_info()),
                action: PermissionAction::Deny,
                granted: false,
                always: false,
            },
            AgentEvent::HookDecided {
                hook: "guard".into(),
                event: HookEvent::BeforeTool,
                outcome: HookOutcome::Deny,
                reason: Some("not here".into()),
                call_id: Some("c1".into()),
            },
            AgentEvent::ToolExecutionStarted {
                id: "c1".into(),
                name: "bash".into(),
            },
            AgentEvent::ToolProgress {
                id: "c1".into(),
                stream: ProgressStream::Stdout,
                text: "out".into(),
            },
            AgentEvent::PlanUpdated {
                id: Some("c2".into()),
                explanation: None,
                plan: vec![PlanItem {
                    step: "read".into(),
                    status: PlanStatus::InProgress,
                }],
            },
            AgentEvent::ToolBlocked {
                id: "c1".into(),
                name: "bash".into(),
                block: Block {
                    code: BlockCode::OutsideWorkspace,
                    tool_name: Some("bash".into()),
                    action: PermissionAction::Deny,
                    risk: Default::default(),
                    path: Some("/etc/passwd".into()),
                    reason: "outside the workspace".into(),
                    recoverable: true,
                },
            },
            AgentEvent::ToolResult {
                id: "c1".into(),
                name: "bash".into(),
                status: ToolStatus::Ok,
                content: vec![ContentBlock::text("out")],
                truncated: false,
                redacted: false,
                changed_files: Vec::new(),
                duration_ms: 1,
            },
            AgentEvent::ContextUsage {
                used: 1,
                window: 2,
                percent: 50.0,
            },
            AgentEvent::CompactionStarted {
                reason: agent_core::CompactionReason::Auto,
            },
            AgentEvent::CompactionFinished {
                summary: "short".into(),
                before: 2,
                after: 1,
            },
            AgentEvent::Error {
                code: ErrorCode::Provider,
                message: "boom".into(),
                recoverable: true,
            },
            AgentEvent::RunFinished {
                status: RunStatus::Success,
                final_text: Some("Hello".into()),
            },
        ];
        let mut missing: Vec<String> = variant_tags()
            .into_iter()
            .filter(|t| !events.iter().any(|e| tag(e) == *t))
            .collect();
        missing.sort();
        assert!(
            missing.is_empty(),
            "agent-core has AgentEvent variants without a sample here: {missing:?}; add one \
             to `every_event`, then map it in each protocol or list it as not shown"
        );
        events
    }

    #[test]
    fn the_samples_cover_every_variant() {
        let events = every_event();
        assert_eq!(events.len(), variant_tags().len(), "one sample per variant");
    }
}
