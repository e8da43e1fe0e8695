//! The ZCode app-server front end (`adapter-acp app-server --stdio`): a drop-in for
//! `zcode app-server --stdio` as spawned by hosts such as the zcode-acp-server bridge.
//!
//! - [`wire`]: the protocol's serde types.
//! - [`mapping`]: one turn's `AgentEvent`s → `session/event` payloads.
//! - [`snapshot`]: session info, projection, settings and messages in ZCode shapes.
//! - [`eventlog`]: the per-session, seq'd event log with replay.
//! - `handlers`: the dispatcher and the method handlers.
//! - `outbox`: the writer's queue and the event logs' live sink; `reply`: a request's
//!   answer or error reply.
//! - [`server`]: the stdio loop and the writer.
//!
//! # Capabilities
//!
//! `app-server` takes the capability flags of every front end (`--hooks FILE`,
//! `--mcp-config FILE`, `--sandbox read-only|workspace-write|off`, `--sandbox-network`,
//! `--add-dir`, `--sandbox-fallback`, `--context-window`, `--auto-compact`; see
//! [`agent_host::cli::CapabilityArgs`]) and applies them to every session's agent (the
//! sandbox defaults to `workspace-write`). In the protocol:
//!
//! - MCP: `session/create` and `session/resume` take `mcpServers` (ACP's list or a
//!   Claude-style `{name: {command, args, env} | {type: "http", url, headers}}` map); the
//!   session connects them (with the `--mcp-config` servers) in its workspace before it
//!   answers; `mcp/list {sessionId?}` answers `{servers: [{sessionId, name, transport,
//!   status: "connected"|"failed", reason?, tools, pid?}]}`. MCP tools are ordinary tool
//!   calls. A session's servers end with `session/close` or the process.
//! - Hooks: a vetoed call's `tool.updated` `error` is `{type: "hook_denied", code:
//!   "hook_denied", message, data: {hooks: [{hook, event, outcome, reason}]}}`, and its tool
//!   part's state carries the same `metadata`; an `after_tool` decision shows in
//!   `result.metadata.hooks`. `session_start` hooks run at create/resume, `session_end` at
//!   close and exit.
//! - Sandbox: `session.updated{sandbox: {mode, network, enforced, landlockAbi?, …,
//!   summary}}` once per agent (and a line on stderr); a refused operation is the call's
//!   `error.code` (`sandbox`, `network`) with `error.data.block` / `result.metadata.block`
//!   `{code, toolName, reason, recoverable, path?}`, and the tool part's `metadata.block`.
//! - Sub-agents: a `Task` call's child is a session (`sessionKind: "subagent"`,
//!   `parentSessionId`), listed by `session/subagents {sessionId}` (`{subagents: [{session,
//!   agentType, description, toolCallId, background, status, finalText?, error?, usage,
//!   durationMs?}]}`), readable with `session/read` / `session/messages`, with its own
//!   `session/event` stream; the `Task` call's `tool.updated` carry `source: "subagent"`,
//!   `agentId`, `agentType`, `childSessionId`, `background`; background tasks are in
//!   `projection.backgroundJobs` and `session.updated{taskId, status, …}`, and
//!   `session/cancelBackgroundTask` stops one. A child's permission requests carry the
//!   child's session id.
//! - Context: `session.updated{contextUsed, contextWindow}` after every model call,
//!   `projection.contextUsed/contextWindow` and `runtime.contextUsage`; a compaction inside
//!   a prompt is `session.updated{compaction: {state: "running"|"completed", auto, reason,
//!   before, after}}` and a `compaction{auto}` part before the summary in
//!   `session/messages`.
//!
//! - Slash commands: the command files of a session's workspace (`.zero/commands`,
//!   `.claude/commands`, then the user's) are listed in its snapshot's `slashCommands`
//!   (`[{name, description, argumentHint?}]`); `session/send` of `/name args` naming one
//!   starts the turn with its prompt. Each session reads its workspace's `AGENTS.md` /
//!   `CLAUDE.md` files and discovers its skills when it starts (`--no-context-files`: no
//!   instructions).
//!
//! # Sessions shared by a fleet
//!
//! With `--session-store postgres://…` ([`Options::storage`](crate::Options::storage)) `session/send` and
//! `session/compact` take the session's writer claim first (another node's running turn:
//! -32010 "prompt is running"), and a session another node changed is loaded again, with its
//! event log, before it is read or continued (see the crate README).
//!
//! # SIGTERM and SIGINT
//!
//! The zcode-acp-server bridge ends the server with SIGTERM to its process group and
//! SIGKILLs it 3 s later. Both signals are handled alike, as the end of input: every
//! running turn is stopped (tool process groups killed) and its `turn.completed`
//! (`resultType: "cancelled"`) is written, sessions are flushed, `session_end` hooks run and
//! MCP servers are shut down, all within 2.5 s; then the process exits 0, as after stdin
//! EOF.

mod commands;
pub mod eventlog;
mod handlers;
pub mod mapping;
mod outbox;
mod reply;
pub mod server;
pub mod snapshot;
pub mod wire;

pub use server::{serve, serve_gated, ServerOptions};
