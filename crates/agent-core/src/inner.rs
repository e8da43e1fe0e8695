//! The shared state behind an [`crate::Agent`] and its runs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, ErrorCode};
use crate::message::Message;
use crate::permission::{Approver, PermissionMode};
use crate::provider::{Provider, ReasoningLevel, ToolSpec};
use crate::session::SessionStore;
use crate::tool::{PlanItem, Tool};
use crate::usage::Usage;

pub(crate) struct Inner {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// The tools' specs, built on first use and kept: schemas are costly to generate, and
    /// an agent that never calls the model (an idle session) should not hold them.
    pub(crate) specs: std::sync::OnceLock<Vec<ToolSpec>>,
    pub(crate) max_steps: u32,
    pub(crate) cwd: PathBuf,
    pub(crate) compact_keep_tail: usize,
    pub(crate) session: Option<(Arc<dyn SessionStore>, String)>,
    /// The OS sandbox policy for commands, and whether it was reported.
    pub(crate) sandbox: crate::sandbox::AgentSandbox,
    /// Lifecycle hooks (none: nothing is consulted).
    pub(crate) hooks: crate::hooks::AgentHooks,
    /// Serialises runs: a second prompt waits here, in FIFO order.
    pub(crate) queue: tokio::sync::Mutex<()>,
    pub(crate) state: Mutex<State>,
}

pub(crate) struct State {
    pub(crate) messages: Vec<Message>,
    pub(crate) system: Option<String>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) model: String,
    pub(crate) reasoning: ReasoningLevel,
    pub(crate) mode: PermissionMode,
    pub(crate) usage: Usage,
    pub(crate) busy: bool,
    /// Runs created but still waiting for the queue.
    pub(crate) queued: usize,
    pub(crate) active: Option<CancellationToken>,
    pub(crate) steering: Vec<Message>,
    pub(crate) granted: HashSet<String>,
    pub(crate) plan: Vec<PlanItem>,
}

impl Inner {
    /// The tools' specs (built on first use).
    pub(crate) fn specs(&self) -> &[ToolSpec] {
        self.specs
            .get_or_init(|| self.tools.iter().map(|t| t.spec()).collect())
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding this lock; recover the data if that ever changes.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

pub(crate) fn error_event(code: ErrorCode, message: impl Into<String>) -> AgentEvent {
    AgentEvent::Error {
        code,
        message: message.into(),
        recoverable: false,
    }
}
