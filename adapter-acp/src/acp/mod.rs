//! The Agent Client Protocol (ACP, v1) front end, on the official `agent-client-protocol`
//! SDK: `adapter-acp acp` serves it on stdin/stdout.
//!
//! - `initialize` reports protocol version 1, `loadSession`, image and embedded-context
//!   prompts, `session/list`, `resume`, `close` and `delete`, `mcpCapabilities.http`, and
//!   the agent's name and version; it records the client's capabilities (see "What the
//!   client lends").
//! - `session/new` creates a session (stored with the ZCode front end's sessions, so either
//!   front end can continue it); `session/load` replays its transcript as
//!   `session/update` notifications (`user_message_chunk`, `agent_message_chunk`,
//!   `agent_thought_chunk`, `tool_call` + `tool_call_update`, then the `plan`) before it
//!   answers. Both connect the request's `mcpServers` (stdio, `http` with headers; `sse`
//!   is listed as failed), with the `--mcp-config` servers, in the session's workspace; a
//!   server that fails is skipped. The response's `_meta.mcpServers` lists each server's
//!   `name`, `transport`, `status` (`connected` / `failed` with a `reason`), `tools` and
//!   `pid`. An invalid list (a name used twice, a URL that is not http(s)) is
//!   `invalid_params`.
//! - `session/prompt` streams the turn ([`mapping::AcpMapping`]) and answers with the stop
//!   reason: `end_turn`, `max_tokens`, `max_turn_requests` (the step limit), `refusal` or
//!   `cancelled`; other failures are a JSON-RPC error. The turn's usage is in the
//!   response's `_meta.usage`; `usage_update` notifications report the context in use.
//! - `session/cancel` aborts the running turn (streaming, tools and an open permission
//!   request, which is withdrawn with `$/cancel_request`); the prompt answers `cancelled`.
//! - Each session reads its workspace's `AGENTS.md` / `CLAUDE.md` files (from the git root
//!   down; `--no-context-files`: none) and discovers its skills when it starts. Its slash
//!   commands (`.zero/commands`, `.claude/commands`, then the user's, and its MCP servers'
//!   prompts as `mcp__<server>__<prompt>`), and the agent's own `/rewind`, are announced
//!   with `available_commands_update` after the `session/new` and `session/load` responses
//!   and when the set changes; a prompt starting `/name args` that names one is sent to the
//!   model expanded.
//! - `session/set_mode` takes one of [`handlers::MODES`]: `build` (default: asks before every
//!   call with side effects), `edit`, `auto`, `plan`, `yolo` — the ZCode front end's modes —
//!   or the aliases `default`/`ask`, `acceptEdits`, `unsafe`/`bypassPermissions`.
//! - Prompt-gated tool calls send `session/request_permission` with the options
//!   `allow_once`, `allow_always` and `reject_once`, answering the agent's approver with
//!   allow once / allow always / deny. Plan approval (`exit_plan_mode`) and `ask_user`
//!   questions are put to the client the same way, one request per question. A sub-agent's
//!   request is put under the prompt's session with the tool call id `task_id/call_id`.
//! - `session/new`, `session/load` and `session/resume` answer `configOptions`: `mode`,
//!   `model` (the provider's models, `GET /models` once per connection, else the session's
//!   own) and `thought_level` for a model that reasons; `session/set_config_option` changes
//!   one from the next model call and answers the whole set (an unknown id or value is
//!   `invalid_params`); `session/set_mode` and plan approval send `config_option_update`.
//! - `session/resume` makes a stored session active without replaying it; `session/close`
//!   cancels its prompt, ends it here and keeps it stored; `session/delete` removes it
//!   from `session/list` and the store. The first prompt's title goes out as
//!   `session_info_update`.
//!
//! # What the client lends
//!
//! The `client` module turns the client's capabilities into what each session's tools and MCP
//! servers use ([`agent_core::editor`], agent-host's `SessionClient`): `fs.readTextFile` /
//! `fs.writeTextFile` — the file tools read and write through `fs/read_text_file` /
//! `fs/write_text_file`; `terminal` — `bash` runs in a client terminal named in the call's
//! content, killed on cancel or timeout and always released (confined by this binary as
//! sandbox launcher, `agent_tools::launcher`, when the policy confines commands);
//! `elicitation.form` — `ask_user` is one form, MCP servers' questions go to the client;
//! `elicitation.url` — MCP authorization URLs, and `elicitation/complete` when the sign-in
//! is over. Each request is bounded; a client error is the call's error result.
//!
//! # Capabilities
//!
//! `adapter-acp acp` takes agent-host's capability flags (`--hooks FILE`, `--mcp-config
//! FILE`, `--sandbox read-only|workspace-write|off` (default `workspace-write`),
//! `--sandbox-network`, `--add-dir`, `--sandbox-fallback`, `--context-window`,
//! `--auto-compact`); every session's agent gets them, and the `Task` tools when
//! specialists are available. How each shows on ACP ([`mapping`] has the details):
//!
//! - MCP tools: ordinary `tool_call`s, `kind` and title from the server's annotations.
//! - Hooks: a decision on a call is a `tool_call_update` with `_meta.hook`; a `before_tool`
//!   veto fails the call with the reason; a blocked prompt is an `agent_message_chunk` with
//!   the reason and the stop reason `refusal`; other decisions are `agent_thought_chunk`s.
//! - Sandbox: a block is a line of the call's final content plus `_meta.block`; the
//!   sandbox report is logged, and is an agent thought when less is enforced than asked.
//! - Sub-agents: the `Task` call (kind `think`, titled `name: description`) carries the
//!   child's progress as its content (`_meta.subagent` names the task) and ends with the
//!   child's answer.
//! - Context: `usage_update {used, size, cost}` after every model call; a compaction
//!   inside a prompt is an agent thought ("Context compacted (auto): 170 000 → 2 100
//!   tokens.").
//! - Telemetry: the agent's spans go to OpenTelemetry when `OTEL_EXPORTER_OTLP_ENDPOINT`
//!   is set.
//!
//! # SIGTERM and SIGINT
//!
//! One rule for both signals, the same as for a closed stdin: input ends; the running turns
//! are stopped (their tool calls end `failed`, `bash` process groups are killed) and what is
//! in flight is finished — each running `session/prompt` is answered with the stop reason
//! `cancelled`, after its turn's updates; the sessions are flushed to the store; the process
//! exits 0 (an ACP agent is a server its client stops; there is no other exit code for it).
//! A closed stdout ends the process the same way.
//!
//! Layout: [`mapping`] (pure: events, history, tool calls in ACP form), [`handlers`] (the
//! SDK's agent builder and the methods, over agent-host's session host) and [`transport`]
//! (lines ⇄ the SDK's frames, with one ordered output queue; it knows no method names).

pub(crate) mod client;
pub mod handlers;
pub mod mapping;
pub mod transport;

pub use handlers::{AcpAgent, AcpOptions};
