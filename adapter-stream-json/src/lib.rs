//! Zero stream-json v2 front end for [`agent_core`]: a drop-in for `zero exec`.
//!
//! The binary `adapter-stream-json` accepts `adapter-stream-json exec …` with Zero's flags
//! (so a link named `zero` pointing at it works as `zero exec …`), runs one prompt headless,
//! and reports it in one of Zero's output formats. Under `-o stream-json` stdout carries only
//! protocol lines: `run_start`, `reasoning`, `text`, `tool_call`, `checkpoint`,
//! `permission_request`, `permission_decision`, `tool_result`, `usage`, `final`, `warning`,
//! `error` and `run_end`, each redacted before it is written.
//!
//! - [`wire`]: the protocol's serde types (and the `-o json` lines).
//! - [`input`]: the strict stream-json input parser (`prompt`, `message`, images).
//! - [`redact`]: protocol-level redaction of every output line and session record, in one
//!   place ([`redact::Redacted`]).
//! - [`order`]: Zero's order of a run's events (per tool call).
//! - [`mapping`]: [`agent_core::AgentEvent`]s to output events, nothing else: an
//!   [`agent_host::turn::Mapping`] over the turn's state, and the terminal lines from its
//!   outcome.
//! - [`record`]: the session recorder, an observer of the same events and state.
//! - [`checkpoint`]: file snapshots taken before a file-changing tool runs.
//! - [`pipeline`]: order, turn fold, recorder and rendering in one step per event.
//! - [`output`]: the `stream-json`, `json` and `text` renderers, and stdout through
//!   agent-host's line writer.
//! - [`session`]: exec's sessions (resume, fork, the payloads it records) in Zero's layout,
//!   which is agent-host's `session::zero`.
//! - [`cli`]: the `exec` command line, errors in Zero's words.
//! - [`exec`]: [`run_exec`], one run from arguments to exit code: a one-turn host, its prompt
//!   the one turn of a standalone agent-host `Session`.
//!
//! Host machinery (session files, provider flags, line writer, the session host, text helpers,
//! the capability layer) comes from `agent-host`; this crate keeps Zero's wire types, its
//! mapping and its `exec`.
//!
//! # Capabilities
//!
//! `exec` reads its capabilities where Zero reads them, plus agent-host's flags:
//!
//! - **MCP**: `$XDG_CONFIG_HOME/zero/config.json` (`mcp.servers`, also `mcpServers` and
//!   `mcp_servers`), the project's `.zero/config.json` only in a workspace the user trusted
//!   (`zero trust`), `disabled` servers left out, plus `--mcp-config FILE` (Claude Code's
//!   format). Servers connect before `--list-tools` (which lists their tools) and shut down
//!   at exit; none start in plan mode. An invalid configuration is `error{code:"mcp_error"}`
//!   then `run_end{exitCode:3}` with no `run_start`; a server that cannot be reached is a
//!   `warning` (`MCP server X unavailable, skipped: …`) and the run goes on.
//! - **Hooks**: Zero's `hooks.json` (user, and project when trusted; audit log in
//!   `$XDG_DATA_HOME/zero/hooks/audit.jsonl`) plus `--hooks FILE` (Zero's or Claude Code's
//!   format); `session_start`/`session_end` run around the run. A vetoed call shows as Zero
//!   shows it, its `tool_result` (`Error: "bash" was blocked by hook "id": reason`); a
//!   blocked prompt or a hook that halts the run is a `warning`.
//! - **Sandbox**: `--sandbox read-only|workspace-write|off` (default workspace-write),
//!   `--sandbox-network allow|deny`, `--add-dir DIR` (Zero's flag: also writable for the file
//!   tools), `--sandbox-fallback refuse|prompt|allow`. A sandbox that enforces less than
//!   asked is a `warning` after `run_start`; what it refused is the `block` of the call's
//!   `tool_result`; asking to run outside it is a `permission_request` carrying the block,
//!   refused headless.
//! - **Specialists**: the `Task` tools where Zero offers them (`--auto medium|high` or
//!   unsafe, not in a `--tag specialist` run). A sub-agent shows only as its `Task` call; it
//!   records a child session where Zero keeps one (kind `child`, tag `specialist`, under its
//!   task id) and the parent gets `specialist_start`/`specialist_stop`. A specialist layer
//!   Zero refuses to load is `error{code:"specialist_error"}`, exit 3, before the run.
//! - **Context budget**: `--context-window N`, `--auto-compact PERCENT|off`; a compaction is
//!   a `warning` (`Context compacted (auto): 170000 → 2100 tokens.`); context usage has no
//!   line in Zero's schema. Tool output over budget is spilled into the session's directory.
//! - **Structured output**: `--output-schema FILE` (Codex's flag) asks the model for JSON of
//!   that schema and checks the final answer (one repair turn); an answer that still does
//!   not match is `error{code:"output_schema_error"}`, exit 3.
//! - **Telemetry**: spans go to an OTLP collector when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! # Signals
//!
//! SIGINT and SIGTERM follow one rule, Zero's: the run is aborted (running tools stop and
//! their process groups are killed, MCP calls are cancelled), the session records the
//! interruption, the last lines are `error{code:"interrupted"}` and
//! `run_end{status:"interrupted", exitCode:130}`, MCP servers are shut down, and the process
//! exits 130.
//!
//! ```no_run
//! # async fn demo() {
//! use adapter_stream_json::{run_exec, ExecHooks, ExecIo};
//! let args: Vec<String> = ["-o", "stream-json", "Say hello."].iter().map(|s| s.to_string()).collect();
//! let code = run_exec(&args, ExecIo::stdio(), ExecHooks::default()).await;
//! std::process::exit(code);
//! # }
//! ```

#![warn(missing_docs)]

pub mod checkpoint;
pub mod cli;
pub mod exec;
pub mod ids;
pub mod input;
pub mod mapping;
pub mod order;
pub mod output;
pub mod pipeline;
pub mod record;
pub mod redact;
pub mod session;
pub mod wire;

pub use exec::{run_exec, run_mcp, ExecHooks, ExecIo};
pub use session::rewind_cli::run_sessions;
