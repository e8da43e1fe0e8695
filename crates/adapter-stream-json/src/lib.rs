//! Zero stream-json v2 front end: maps [`agent_core::AgentEvent`]s to Zero's JSONL output
//! events and parses its input events (in progress).

#![warn(missing_docs)]
