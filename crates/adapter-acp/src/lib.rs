//! ZCode app-server JSON-RPC (`app-server --stdio`) and Agent Client Protocol (`acp`) front
//! ends, both views of [`agent_core::AgentEvent`] (in progress).

#![warn(missing_docs)]
