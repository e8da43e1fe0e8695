//! One turn fold for every front end: a pure [`TurnState`] (the tool-call table, the
//! sub-agent tree, usage and the outcome, folded one [`AgentEvent`](agent_core::AgentEvent)
//! at a time), one [`Mapping`] trait (a protocol's frames as a function of state and event),
//! one [`Coverage`] convention with the [`FRAMING`] variants the session protocols leave
//! out, and one outcome type, [`TurnOutcome`].
//!
//! ```text
//! event ──► TurnState::apply ──► Mapping::map(&state, event, out) ──► frames
//!                │
//!                └─► TurnState::outcome() ──► TurnOutcome (the turn's end)
//! ```
//!
//! The state is applied before the mapping reads it. The session host's turn driver keeps
//! one state per turn and hands it to its observer
//! ([`TurnObserver::observe`](crate::session::TurnObserver::observe)); a front end without
//! sessions keeps a [`Fold`]. `coverage` (feature `test-util`) is the one coverage
//! harness.
//!
//! Imports run one way: `calls` and `outcome` ← `state` ← `mapping` ← `coverage`; this
//! module imports nothing else of the crate, and `session` imports it.

mod calls;
#[cfg(any(test, feature = "test-util"))]
pub mod coverage;
mod mapping;
mod outcome;
mod state;
#[cfg(test)]
mod tests;

pub use calls::{HookNote, ToolCallState, ToolCallStatus};
pub use mapping::{is_framing, Coverage, Fold, Mapping, FRAMING};
pub use outcome::TurnOutcome;
pub use state::{Compaction, SubagentNode, TurnState};
