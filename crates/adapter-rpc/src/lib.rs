//! zut RPC front end: newline-delimited JSON commands in, responses and events out, mapped
//! from [`agent_core::AgentEvent`] (in progress).

#![warn(missing_docs)]
