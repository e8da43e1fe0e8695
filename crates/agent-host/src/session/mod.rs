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
//! - [`factory`]: how a session's agent is built ([`AgentFactory`]).
//! - [`interaction`]: how a session asks the client ([`InteractionLink`],
//!   [`SessionApprover`]).
//! - [`live`] and [`turn`]: one [`Session`] and its turns ([`TurnObserver`]).
//! - [`tools`]: the session-bound tools that ask the user (`ask_user`, `exit_plan_mode`).
//! - [`journal`]: a session's numbered event log over the storage ([`EventJournal`]):
//!   stored before it is shown, replayed from memory and storage, trimmed to a retention.
//! - [`manager`]: [`SessionManager`], creating, resuming and forking sessions.
//! - [`claim`]: one writer per session among processes sharing a storage
//!   ([`SessionManager::claim_turn`], [`TurnClaim`]).
//!
//! Imports run one way: `types` ← `storage` ← `store`, `factory`, `interaction` ← `live` ← `turn`,
//! `tools` ← `manager`.

pub mod claim;
pub mod factory;
pub mod file_events;
pub mod interaction;
pub mod journal;
pub mod live;
pub mod manager;
pub mod storage;
pub mod store;
pub mod tools;
pub mod turn;
pub mod types;

pub use claim::{TurnClaim, WriterClaim};
pub use factory::{canonical_tool_name, AgentFactory, FactoryError};
pub use interaction::{InteractionLink, SessionApprover};
pub use journal::{EventJournal, JournalOptions, JournalSink, Replay};
pub use live::{Session, SessionView};
pub use manager::{ManagerError, SessionManager};
pub use storage::{
    BoxError, Durability, EventBounds, MetaQuery, SessionStorage, StoreError, StoredEvent,
};
pub use store::{valid_session_id, FileStore};
pub use tools::{AskUserTool, ExitPlanModeTool, SessionSlot};
pub use turn::TurnObserver;
pub use types::{
    new_id, now_ms, ActiveTurn, Busy, CreateOptions, Goal, InteractionKind, InteractionReply,
    InteractionRequest, QuestionSpec, SessionMeta, SessionMode, ToolCallState, ToolCallStatus,
    TurnInfo, TurnOutcome, UserInputAnswer, UserInputRequest, DEFAULT_CONTEXT_WINDOW,
};
