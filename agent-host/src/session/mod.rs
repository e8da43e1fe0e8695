//! The session host of multi-session servers, protocol-free: many sessions in one process,
//! each an [`Agent`](agent_core::Agent) with persisted metadata, one turn at a time, driven
//! by a task that feeds a front end's [`TurnObserver`], and an
//! [`Approver`](agent_core::Approver) that turns permission prompts into
//! [`InteractionRequest`]s for the front end to put to its client.
//!
//! - [`types`]: the plain data (metadata, turn facts, interactions); every other module
//!   imports it and it imports none of them.
//! - [`storage`]: what a backend stores ([`SessionStorage`]: metadata, transcript, event
//!   log), and [`store`]: the on-disk backend ([`FileStore`], its event log in
//!   [`file_events`]).
//! - [`factory`]: how an agent is built ([`AgentFactory`]: a session's, or a one-agent
//!   front end's through [`AgentFactory::agent`]), and [`tool_filter`]: which tools it
//!   offers ([`ToolRequest`], [`ToolFilter`]).
//! - [`interaction`]: how a session asks the client ([`InteractionLink`],
//!   [`SessionApprover`]).
//! - [`live`] and [`turn`]: one [`Session`] and its turns ([`TurnObserver`]); [`queue`]:
//!   the FIFO turn queue of a host that queues prompts ([`Session::enqueue_prompt`],
//!   [`QueuedTurn`]); [`single`]: the session of a one-session host
//!   ([`Session::standalone`], [`Session::begin`]).
//! - [`memory`]: a storage in memory ([`MemoryStorage`]), for a host that keeps no files.
//! - [`zero`]: a storage in Zero's on-disk layout ([`ZeroStorage`], over [`zero::ZeroSessions`]),
//!   so a host's sessions are ones `zero exec --resume` finds.
//! - [`subagent`]: sub-agent sessions (a `Task` call's child as a session of its own).
//! - [`tools`]: the session-bound tools that ask the user (`ask_user`, `exit_plan_mode`).
//! - [`journal`]: a session's numbered event log over the storage ([`EventJournal`]):
//!   stored before it is shown, replayed from memory and storage, trimmed to a retention.
//! - [`manager`]: [`SessionManager`], creating, resuming, forking and closing sessions.
//! - [`claim`]: one writer per session among processes sharing a storage
//!   ([`SessionManager::claim_turn`], [`TurnClaim`]).
//! - [`client`]: what a front end's client lends each session ([`SessionClient`]: an
//!   editor's buffers and terminals, a way to ask the user for its MCP servers);
//!   [`ask_mcp`]: MCP servers' questions asked as the session's questions
//!   ([`AskThroughInteractions`]); [`models`]: the provider's models for a picker
//!   ([`ModelList`]).
//!
//! Imports run one way: `types` ← `storage` ← `store`, `zero`, `journal`, `factory` (with `tool_filter`) ← `live` (with
//! `interaction`, which finds sub-agent sessions in the live registry) ← `subagent`, `turn`,
//! `tools` ← `manager`.
//!
//! # Capabilities
//!
//! The process's [`Capabilities`](crate::capabilities::Capabilities) given to
//! [`AgentFactory::capabilities`] apply to every session's agent: hooks, the sandbox
//! policy, the context settings, and `Task` tools over the specialists (each session keeps
//! a handle on its background tasks: [`Session::background_tasks`]). Each session
//! connects its MCP servers when it is created or loaded ([`CreateOptions::mcp_servers`],
//! [`ResumeOptions::mcp_servers`], plus the capabilities' `--mcp-config` servers), in its
//! workspace, concurrently; [`Session::mcp`] lists them. With no server configured nothing
//! starts. The servers end when the session is closed ([`SessionManager::close`]) or the
//! process shuts down ([`SessionManager::shutdown`]); no server process outlives it.
//!
//! # Hooks around a session
//!
//! `session_start` hooks run when a session is created (`startup`) or loaded (`resume`),
//! before its first turn; `session_end` hooks when it is closed (`other`) or the process
//! shuts down (`exit`).
//!
//! # Sub-agents
//!
//! A `SubagentStarted` event of a session's run creates the sub-agent's session (id =
//! `task_id`, `parent_session_id` = the session, title `name: description`, status running;
//! [`SessionMeta::subagent`]); the manager finds it by id, [`Session::subagents`] and
//! [`SessionManager::subagents`] list it, and [`Session::messages`] reads the transcript the
//! child records to the store (after [`Session::sync_transcript`]). Its
//! `SubagentFinished` sets the status, final text, error and usage. It takes no prompts;
//! [`Session::stop`] on it stops a background sub-agent. A sub-agent's permission prompts
//! are asked in the name of its session.

pub mod ask_mcp;
pub mod claim;
pub mod client;
pub mod factory;
pub mod file_events;
pub mod interaction;
pub mod journal;
pub mod live;
pub mod manager;
pub mod memory;
pub mod models;
pub mod queue;
pub mod single;
pub mod storage;
pub mod store;
pub mod subagent;
pub mod tool_filter;
pub mod tools;
pub mod turn;
pub mod types;
pub mod zero;

pub use ask_mcp::AskThroughInteractions;
pub use claim::{TurnClaim, WriterClaim};
pub use client::SessionClient;
pub use factory::{
    canonical_tool_name, AgentFactory, AgentSpec, BuiltAgent, FactoryError, Recording,
};
pub use interaction::{InteractionLink, SessionApprover};
pub use journal::{EventJournal, JournalOptions, JournalSink, Replay};
pub use live::{Session, SessionView};
pub use manager::{ManagerError, SessionManager};
pub use memory::MemoryStorage;
pub use models::ModelList;
pub use queue::QueuedTurn;
pub use storage::{
    BoxError, Durability, EventBounds, MetaQuery, SessionStorage, StoreError, StoredEvent,
};
pub use store::{valid_session_id, FileStore};
pub use tool_filter::{valid_tool_name, ToolCheck, ToolFilter, ToolFilterError, ToolRequest};
pub use tools::{ExitPlanModeTool, SessionQuestions, SessionSlot};
pub use turn::{StartError, TurnObserver};
pub use types::{
    new_id, now_ms, ActiveTurn, Busy, CreateOptions, Goal, HookNote, InteractionKind,
    InteractionReply, InteractionRequest, QuestionSpec, ResumeOptions, SessionMeta, SessionMode,
    SubagentMeta, SubagentStatus, ToolCallState, ToolCallStatus, TurnInfo, TurnOutcome,
    UserInputAnswer, UserInputRequest, DEFAULT_CONTEXT_WINDOW,
};
pub use zero::ZeroStorage;
