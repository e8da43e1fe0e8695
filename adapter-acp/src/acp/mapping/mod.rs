//! The pure part of the ACP front end: [`AgentEvent`](agent_core::AgentEvent)s of a
//! prompt turn become ACP
//! [`SessionUpdate`](agent_client_protocol::v1::schema::SessionUpdate)s ([`AcpMapping`],
//! an [`agent_host::turn::Mapping`] over the turn's [`TurnState`]), a finished run becomes
//! a [`StopReason`]
//! ([`turn_end`]), a stored transcript becomes the updates that replay it and an ACP prompt
//! becomes a [`UserInput`](agent_core::UserInput) ([`history`]); [`tools`] describes tool
//! calls for editors, [`subagent`] a sub-agent's run as its call's progress, [`meta`] the
//! `_meta` of tool call updates, [`servers`] a session's `mcpServers` as MCP server
//! configurations.
//!
//! What each capability looks like on ACP:
//!
//! - MCP tools are ordinary `tool_call`s, their `kind` and title from the server's
//!   annotations ([`tools::mcp_kind`]).
//! - A hook's decision on a call is a `tool_call_update` with `_meta.hook`; a `before_tool`
//!   deny or halt also fails the call with the reason. A prompt a `user_prompt` hook blocked
//!   is an `agent_message_chunk` with the reason and the stop reason `refusal` (the prompt is
//!   not in the transcript, as ACP's `refusal` means); other decisions not bound to a call
//!   (a stop hook's continuation, a hook that failed) are `agent_thought_chunk`s.
//! - A sandbox block is a line of the call's final content (and `_meta.block`); the
//!   sandbox report is logged, and is an `agent_thought_chunk` when the sandbox enforces
//!   less than asked.
//! - A sub-agent's run is the progress of its call ([`subagent`]).
//! - `ContextUsage` is a `usage_update {used, size, cost}` (cost: the session's cumulative
//!   cost in USD, when the model's price is known); a compaction inside a prompt is an
//!   `agent_thought_chunk` ("Context compacted (auto): 170 000 → 2 100 tokens.").

pub mod history;
pub mod meta;
pub mod servers;
pub mod subagent;
#[cfg(test)]
mod tests;
pub mod tools;
mod turn;

use agent_client_protocol::v1::schema::StopReason;
use agent_core::{
    event::{ErrorCode, StopReason as CoreStop},
    RunStatus,
};
use agent_host::turn::TurnState;

pub use history::{prompt_input, replay, LinkRead, PromptError};
pub use servers::mcp_servers;
pub use tools::{
    block_text, content_block, describe, mcp_kind, mcp_title, permission_tool_call, plan_update,
    tool_call, tool_kind, tool_locations, tool_preview, tool_title,
};
pub use turn::AcpMapping;

/// The stop of a turn for [`turn_end`]: `Refusal` when a hook blocked the prompt, else the
/// stop of its last model call.
pub fn stop_reason(state: &TurnState) -> Option<CoreStop> {
    match state.prompt_blocked() {
        true => Some(CoreStop::Refusal),
        false => state.last_stop(),
    }
}

/// How a prompt turn ends on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `session/prompt` answers with this stop reason.
    Stop(StopReason),
    /// `session/prompt` answers with an internal error carrying this message.
    Failed(String),
}

/// The stop reason of a finished run: `cancelled` when the client cancelled (or the run was
/// aborted), `max_tokens` / `refusal` from the last model stop, `max_turn_requests` when
/// the step limit or the spend cap ended it, another error as a failure, else `end_turn`.
pub fn turn_end(
    status: RunStatus,
    last_stop: Option<CoreStop>,
    error: Option<(ErrorCode, &str)>,
    cancel_requested: bool,
) -> TurnEnd {
    if cancel_requested || status == RunStatus::Aborted {
        return TurnEnd::Stop(StopReason::Cancelled);
    }
    match (status, error) {
        // The spend cap stops the run before its next model request, as the step limit
        // does: ACP's nearest stop reason is `max_turn_requests` (its message went out as a
        // thought).
        (RunStatus::Error, Some((ErrorCode::MaxSteps | ErrorCode::BudgetExceeded, _))) => {
            TurnEnd::Stop(StopReason::MaxTurnRequests)
        }
        (RunStatus::Error, Some((_, message))) => TurnEnd::Failed(message.to_string()),
        (RunStatus::Error, None) => TurnEnd::Failed("the agent run failed".to_string()),
        _ => TurnEnd::Stop(match last_stop {
            Some(CoreStop::Length) => StopReason::MaxTokens,
            Some(CoreStop::Refusal) => StopReason::Refusal,
            _ => StopReason::EndTurn,
        }),
    }
}
