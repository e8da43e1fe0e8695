//! Whether a protocol's mapping knows an [`AgentEvent`](agent_core::AgentEvent): agent-host's
//! one [`Coverage`] convention ([`agent_host::turn`]), re-exported for the ZCode mapping
//! ([`ZcodeTurn`](crate::zcode::mapping::ZcodeTurn)); ACP's
//! [`AcpMapping`](crate::acp::mapping::AcpMapping) implements agent-host's
//! [`Mapping`](agent_host::turn::Mapping).

pub use agent_host::turn::Coverage;
