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
