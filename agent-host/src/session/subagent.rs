//! Sub-agent sessions: when a session's run starts a sub-agent (a `Task` call), the
//! sub-agent becomes a session of its own: id = its `task_id` (its transcript is recorded in
//! the store under that id by agent-core), `parentSessionId` = the session, title
//! `name: description`, status running until its `SubagentFinished` sets the outcome and
//! usage. It is registered with the manager (so [`SessionManager::get`] finds it), listed by
//! its parent ([`Session::subagents`]) and takes no prompts of its own; its events are the
//! parent run's `Subagent` events, which a front end maps onto the child's own stream.
//!
//! [`SessionManager::get`]: super::SessionManager::get

use std::sync::{Arc, Mutex};

use agent_core::{event::RunKind, Agent, RunStatus, Usage};
use agent_mcp::McpManager;
use agent_specialists::BackgroundTasks;

use super::live::{lock_registry, Parts, Session};
use super::store::valid_session_id;
use super::types::{
    new_id, now_ms, ActiveTurn, SessionMeta, SubagentMeta, SubagentStatus, ToolCallStatus,
};

/// A sub-agent that just started, as its `SubagentStarted` event names it.
pub(super) struct NewChild<'a> {
    pub(super) task_id: &'a str,
    pub(super) name: &'a str,
    pub(super) call_id: &'a str,
    pub(super) description: Option<&'a str>,
    pub(super) model: &'a str,
    pub(super) background: bool,
    pub(super) depth: u32,
}

/// A sub-agent session that started or finished (to persist).
pub(super) enum ChildChange {
    /// Created now.
    Started(Arc<Session>),
    /// Its run ended now.
    Finished(Arc<Session>),
}

impl Session {
    /// Creates and registers the session of a sub-agent this session's run started; `None`
    /// (logged) when its id cannot be a session id or the manager is gone.
    pub(super) fn start_subagent(self: &Arc<Self>, new: NewChild<'_>) -> Option<Arc<Session>> {
        if !valid_session_id(new.task_id) {
            tracing::warn!(session = %self.id(), task = new.task_id, "a sub-agent id that is no session id; no session for it");
            return None;
        }
        let registry = self.registry.upgrade()?;
        if let Some(existing) = self.subagent(new.task_id) {
            return Some(existing);
        }
        let parent = self.meta();
        let title = match new.description.map(str::trim).filter(|d| !d.is_empty()) {
            Some(description) => format!("{}: {description}", new.name),
            None => new.name.to_string(),
        };
        let meta = SessionMeta {
            session_id: new.task_id.to_string(),
            workspace_key: parent.workspace_key.clone(),
            parent_session_id: Some(parent.session_id.clone()),
            trace_id: parent.trace_id.clone(),
            title: title.chars().take(80).collect(),
            mode: parent.mode,
            thought_level: parent.thought_level,
            turn_count: 1,
            subagent: Some(SubagentMeta {
                name: new.name.to_string(),
                description: new.description.map(str::to_string),
                call_id: new.call_id.to_string(),
                background: new.background,
                depth: new.depth,
                status: SubagentStatus::Running,
                final_text: None,
                error: None,
                duration_ms: None,
            }),
            ..SessionMeta::new(
                &parent.workspace_path,
                parent.provider_id.clone(),
                new.model.to_string(),
            )
        };
        let started_at = meta.created_at;
        // A stand-in agent for the settings and context window of the child's model; the
        // child's own agent runs inside the parent's run.
        let agent = Agent::builder(self.agent.provider().clone())
            .model(new.model.to_string())
            .cwd(&parent.workspace_path)
            .build();
        let turn_id = new_id("turn");
        let turn = Arc::new(Mutex::new(Some(turn_id.clone())));
        let link = self
            .interaction_link()
            .for_session(new.task_id, turn.clone());
        let child = Arc::new(Session::new_child(
            Parts {
                agent,
                store: self.store.clone(),
                meta,
                turn,
                link,
                mcp: McpManager::empty(),
                tasks: BackgroundTasks::default(),
                registry: self.registry.clone(),
            },
            self,
        ));
        child.data().active = Some(ActiveTurn {
            turn_id,
            kind: RunKind::Prompt,
            started_at,
            abort: None,
        });
        child.idle.send_replace(false);
        self.data().children.push(child.clone());
        lock_registry(&registry).insert(child.id().to_string(), child.clone());
        Some(child)
    }

    /// Ends a sub-agent's session's run: status from `status`, the final text, error,
    /// usage (the child's total) and duration when known. Returns whether it was running
    /// (else nothing changes).
    pub(super) fn finish_subagent(
        &self,
        status: RunStatus,
        final_text: Option<String>,
        error: Option<String>,
        usage: Option<Usage>,
        duration_ms: Option<u64>,
    ) -> bool {
        {
            let mut data = self.data();
            let now = now_ms();
            let Some(sub) = data
                .meta
                .subagent
                .as_mut()
                .filter(|s| s.status == SubagentStatus::Running)
            else {
                return false;
            };
            sub.status = SubagentStatus::of_run(status);
            sub.final_text = final_text;
            sub.error = error.clone();
            sub.duration_ms = duration_ms;
            if let Some(usage) = usage {
                data.meta.usage = usage;
            }
            if error.is_some() {
                data.meta.last_error = error;
            }
            data.meta.updated_at = now;
            data.active = None;
            data.last_status = Some(status);
            data.revision += 1;
            for state in data.tool_calls.values_mut() {
                if matches!(
                    state.status,
                    ToolCallStatus::Pending | ToolCallStatus::Running
                ) {
                    state.status = ToolCallStatus::Failed;
                    state.completed_at = Some(now);
                }
            }
        }
        self.set_turn(None);
        self.idle.send_replace(true);
        true
    }

    /// Every sub-agent session below this one (children, then theirs), oldest first.
    pub(super) fn all_subagents(&self) -> Vec<Arc<Session>> {
        let mut out = Vec::new();
        for child in self.subagents() {
            let below = child.all_subagents();
            out.push(child);
            out.extend(below);
        }
        out
    }
}
