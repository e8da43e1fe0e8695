//! [`Mapping`]: a protocol's view of a turn, a function of (state, event) → frames;
//! [`Coverage`], what it says it did with each variant; [`FRAMING`], the variants the
//! session protocols leave out; [`Fold`], a state and a mapping kept in step.

use agent_core::AgentEvent;

use super::state::TurnState;

/// What a mapping does with one kind of agent event.
///
/// Each mapping matches every variant it shows, or deliberately does not, by name.
/// `AgentEvent` is `#[non_exhaustive]`, so the compiler still wants a last arm for variants
/// added to agent-core later: that arm is [`Coverage::rest`], which knows the [`FRAMING`]
/// variants and answers [`Coverage::Unknown`] (logged) for the others; the coverage
/// harness (`agent_host::turn::coverage`, feature `test-util`) fails until such a variant is
/// mapped or declared not shown.
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
    /// level (a release build keeps serving; the coverage harness catches it).
    pub fn unknown(event: &AgentEvent) -> Self {
        tracing::debug!(?event, "an agent event this protocol does not map");
        Self::Unknown
    }

    /// The last arm of a mapping: [`NotShown`](Self::NotShown) for the [`FRAMING`]
    /// variants, else [`unknown`](Self::unknown).
    pub fn rest(event: &AgentEvent) -> Self {
        match is_framing(event) {
            true => Self::NotShown,
            false => Self::unknown(event),
        }
    }
}

/// The run's framing (by serde tag): the variants a protocol with a turn of its own (ACP,
/// ZCode, Zero's stream-json) does not show. The client sent the prompt itself
/// (`user_message`); the run's start and its model calls (`run_started`, `turn_started`,
/// `request_started`, `retry_scheduled`, `assistant_started`, `turn_recovery`) are inside
/// the protocol's one turn; a call is announced whole by `tool_call`, not by its streamed
/// arguments (`tool_use_started`, `tool_use_args_delta`, `tool_use_ended`); the assistant's
/// message was streamed as deltas (`assistant_message`). zut RPC, which mirrors agent-core's
/// events, shows all of them but `run_started`.
pub const FRAMING: &[&str] = &[
    "run_started",
    "user_message",
    "turn_started",
    "request_started",
    "retry_scheduled",
    "assistant_started",
    "tool_use_started",
    "tool_use_args_delta",
    "tool_use_ended",
    "assistant_message",
    "turn_recovery",
];

/// Whether `event` is one of the [`FRAMING`] variants.
pub fn is_framing(event: &AgentEvent) -> bool {
    matches!(
        event,
        AgentEvent::RunStarted { .. }
            | AgentEvent::UserMessage { .. }
            | AgentEvent::TurnStarted { .. }
            | AgentEvent::RequestStarted { .. }
            | AgentEvent::RetryScheduled { .. }
            | AgentEvent::AssistantStarted
            | AgentEvent::ToolUseStarted { .. }
            | AgentEvent::ToolUseArgsDelta { .. }
            | AgentEvent::ToolUseEnded { .. }
            | AgentEvent::AssistantMessage { .. }
            | AgentEvent::TurnRecovery { .. }
    )
}

/// A protocol's view of a turn: each event, read with the turn's [`TurnState`], becomes
/// frames of the protocol. What the state knows (calls, sub-agents, usage, the outcome) a
/// mapping reads from it instead of keeping tables of its own; it keeps only its
/// configuration and what is its protocol's alone.
///
/// The caller applies the event to the state first ([`TurnState::apply`], then
/// [`map`](Self::map) with the same event): [`Fold`] does both, and so does the session
/// host's turn driver for a [`TurnObserver`](crate::session::TurnObserver).
pub trait Mapping {
    /// One frame of the protocol; it may borrow from the event it was mapped from.
    type Frame<'e>;

    /// Hands `out` the frames `event` becomes (often none), in order, and says whether the
    /// event's variant is shown on the protocol at all. `state` already includes `event`.
    fn map<'e>(
        &mut self,
        state: &TurnState,
        event: &'e AgentEvent,
        out: impl FnMut(Self::Frame<'e>),
    ) -> Coverage;
}

/// A turn's state and a mapping kept in step: each event is applied, then mapped.
#[derive(Debug, Clone)]
pub struct Fold<M> {
    state: TurnState,
    mapping: M,
}

impl<M: Mapping> Fold<M> {
    /// `mapping` from the start of a turn.
    pub fn new(mapping: M) -> Self {
        Self::with_state(TurnState::new(), mapping)
    }

    /// `mapping` over `state` (a state with a test clock, say).
    pub fn with_state(state: TurnState, mapping: M) -> Self {
        Self { state, mapping }
    }

    /// Applies `event` to the state, then maps it.
    pub fn feed<'e>(&mut self, event: &'e AgentEvent, out: impl FnMut(M::Frame<'e>)) -> Coverage {
        self.state.apply(event);
        self.mapping.map(&self.state, event, out)
    }

    /// The frames of `event`, collected.
    pub fn frames<'e>(&mut self, event: &'e AgentEvent) -> Vec<M::Frame<'e>> {
        let mut out = Vec::new();
        self.feed(event, |frame| out.push(frame));
        out
    }

    /// The turn's state so far.
    pub fn state(&self) -> &TurnState {
        &self.state
    }

    /// The mapping.
    pub fn mapping(&self) -> &M {
        &self.mapping
    }

    /// The mapping, to change its settings.
    pub fn mapping_mut(&mut self) -> &mut M {
        &mut self.mapping
    }
}
