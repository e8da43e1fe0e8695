//! zut RPC front end for [`agent_core`]: a drop-in for `zut rpc`.
//!
//! Newline-delimited JSON commands come in on stdin; responses and events go out on stdout,
//! one JSON object per line. The pieces:
//!
//! - [`wire`]: every frame as a serde type (commands, responses, events, messages).
//! - [`processor`]: the mapping [`agent_core::AgentEvent`] → [`wire::Event`].
//! - [`server`]: the dispatcher and the FIFO worker on agent-host's line reader, writer and
//!   turn driver, generic over the streams so it can be driven in-process.
//! - [`framing`]: line-safe serialisation (U+2028/U+2029 escaped).
//! - [`cli`]: zut's flags (agent-host's provider and capability flags flattened in) and
//!   building the agent; the binary `adapter-rpc rpc` uses it.
//! - SIGTERM/SIGINT: agent-host's [`agent_host::signals`]; the binary dies of the signal
//!   the way zut does ([`agent_host::signals::die_of`]).
//!
//! # Extensions to zut's flags
//!
//! zut has no hooks, MCP, OS sandbox or context flags; ours are agent-host's
//! [`agent_host::cli::CapabilityArgs`], listed under their own heading in `--help`:
//!
//! - `--mcp-config FILE`: MCP servers in the `{"mcpServers": {NAME: {"command", "args",
//!   "env", "cwd"} | {"type": "http", "url", "headers"}}}` format of Claude Code and Cursor.
//!   They are connected at start-up (concurrently, each bounded; one that fails is skipped
//!   with a warning on stderr), their tools are ordinary tools (`tool_call`,
//!   `tool_execution_started`, `tool_result` as for any other), a server's
//!   `notifications/tools/list_changed` takes effect before the next model call, and every
//!   server is shut down before the process exits (stdin EOF, a failed `hello`, a signal).
//!   An invalid file is a start-up error (exit 1).
//! - `--hooks FILE`: command hooks, Zero's `hooks.json` or Claude Code's `hooks` settings.
//!   The process is one session: `session_start` hooks (source `startup`) run before the
//!   first prompt, `session_end` hooks when it ends (reason `exit` at end of input, `other`
//!   on SIGTERM/SIGINT). A project's own hooks file (`.zero/hooks.json` in the workspace)
//!   is never read.
//! - `--sandbox read-only|workspace-write|off` (default `workspace-write`),
//!   `--sandbox-network allow|deny`, `--add-dir DIR`, `--sandbox-fallback
//!   refuse|prompt|allow`: the OS sandbox of `bash` and the commands it starts. RPC runs
//!   tools without confirmation, so on a kernel that cannot enforce the policy the
//!   `prompt` fallback lets commands run with what it does enforce (use `refuse` to refuse
//!   them); the stderr line says so.
//! - `--context-window N`, `--auto-compact PERCENT|off`: the context budget.
//!
//! `--tools` may name `Task` (with `TaskOutput` and `TaskStop`) besides the built-in tools;
//! `--no-tools` offers no `Task` either.
//!
//! # What the capabilities show on the wire
//!
//! zut's schema "only grows" within a major version (new events and optional fields may
//! appear); the fields marked *extension* are such optional fields.
//!
//! - **MCP tools**: ordinary tool events; `get_state` adds `tools` (every tool offered, MCP
//!   tools and `Task` included) and `mcp_servers` (*extension*: `name`, `transport`,
//!   `status` `connected`|`failed`, `reason`, `tools`, `pid`; omitted without
//!   `--mcp-config`).
//! - **Hooks** (`HookDecided`): a call a hook vetoed ends in its `tool_result`
//!   (`is_error:true`) whose text carries the hook's reason — what the model receives; a
//!   prompt a `UserPromptSubmit` hook blocks, and a run a hook halts, give
//!   `error{message}` then `done` (as an empty prompt does). Other decisions (rewritten
//!   arguments, appended output, added context, a forced continuation) show through the
//!   ordinary events and have no frame of their own.
//! - **Sandbox**: `get_state.sandbox` (*extension*: `mode`, `network`, `enforced`
//!   `full`|`partial`|`none`, `landlock_abi`, `fallback`, `fallback_active`, `reason`); a
//!   line on stderr when the kernel enforces less than the policy asks; what the sandbox
//!   refused during a call (`ToolBlocked`) is that call's `tool_result.block`
//!   (*extension*: `code` `sandbox`|`network`|…, `tool_name`, `path`, `reason`,
//!   `recoverable`).
//! - **Sub-agents**: the `Task` call is an ordinary `tool_call` … `tool_result` (the child's
//!   answer, or its failure as an error); the child's run in between is `tool_progress`
//!   lines of that call (`id` = the `Task` call's id): `[name] started: description`, its
//!   streamed text, its tool calls and their outcome, its errors, `[name] finished` —
//!   never a top-level `text_delta`. A background child's lines come after the launching
//!   call's `tool_result`.
//! - **Context budget**: `get_state.context` (*extension*: `used`, `window`, `percent`,
//!   from `Agent::context_usage`); every compaction, automatic ones inside a prompt
//!   included, is a `compact_done{summary}`; the `usage` event is unchanged.
//! - **Telemetry**: OpenTelemetry export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! # SIGTERM and SIGINT
//!
//! zut installs no handler in RPC mode, so Go's default applies: it dies of the signal. We
//! end the same way, after cleaning up; SIGINT and SIGTERM alike: stdin is no longer read,
//! the active prompt or compaction is aborted (its tools' process groups are killed) and
//! its last events (`tool_result`, `turn_end`, `done`) are written, queued prompts are
//! dropped unanswered, stdout is flushed, the MCP servers are shut down, and then the
//! process is killed by the same signal (the default action restored and the signal raised
//! again: a parent sees "killed by SIGTERM", a shell reports 143, or 130 for SIGINT).
//!
//! # Choices where the protocol leaves room
//!
//! - `done` ends every prompt **and** every compaction (the protocol document's event table:
//!   "the whole prompt/compact completed"), after `compact_done` or `error`.
//! - The `{"started":true}` response of a prompt or compaction is written when its turn
//!   starts: for one queued behind another, after that one's `done` (zut's order).
//! - A command before a required `hello`, and a `hello` with a missing or wrong token, are
//!   answered with `success:false` and the process exits 1 (the document: "if absent or wrong
//!   … the process exits").
//! - An input line over the limit (16 MiB) is answered with a failure response
//!   (`command:""`) and skipped; the server keeps reading.
//! - `set_model` accepts the provider's catalogue and the startup model; a provider with an
//!   empty catalogue accepts any non-empty id.
//! - `turn_end` of an aborted call carries `error:"context canceled"`, zut's text.
//! - Tools run without confirmation ([`cli::AllowAll`]), as in zut; permission events are not
//!   part of the protocol and are dropped. The OS sandbox still confines commands.

#![warn(missing_docs)]

pub mod auth;
pub mod cli;
pub mod framing;
pub mod mcp_oauth;
pub mod processor;
pub mod reasoning;
pub mod server;
pub mod wire;

pub use server::{serve, serve_until, Ended, ServeError, ServerConfig};
