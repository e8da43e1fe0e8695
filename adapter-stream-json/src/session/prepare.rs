//! How an exec run uses its session: preflight checks, creating, resuming or forking it, and
//! the prior context a resumed run's prompt carries.

use agent_host::session::zero::{CreateInput, Metadata, SessionEvent, ZeroError, ZeroSessions};
use agent_host::text::cut_utf8;
use serde_json::Value;

/// How the run uses its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecMode {
    /// A new session.
    New,
    /// `--resume`.
    Resume,
    /// `--fork`.
    Fork,
}

/// A session ready for a run.
#[derive(Debug, Clone)]
pub struct PreparedSession {
    /// New, resumed or forked.
    pub mode: ExecMode,
    /// The session the run records to.
    pub meta: Metadata,
    /// Prior events used as model context.
    pub context: Vec<SessionEvent>,
}

/// What the command line asked of sessions.
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    /// `--resume <id>`.
    pub resume: Option<String>,
    /// `--resume` alone.
    pub resume_latest: bool,
    /// `--fork <id>`.
    pub fork: Option<String>,
    /// `--init-session-id`.
    pub init_session_id: Option<String>,
}

/// A user-facing session error (reported as `usage_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PreflightError(pub String);

impl From<ZeroError> for PreflightError {
    fn from(err: ZeroError) -> Self {
        Self(err.to_string())
    }
}

/// Checks that a resume or fork target exists and may be used, before anything is created.
pub fn preflight(store: &ZeroSessions, req: &SessionRequest) -> Result<(), PreflightError> {
    if let Some(fork) = &req.fork {
        if store.get(fork)?.is_none() {
            return Err(PreflightError(format!("Zero session not found: {fork}")));
        }
        return Ok(());
    }
    if req.resume.is_some() || req.resume_latest {
        let meta = match &req.resume {
            Some(id) => store
                .get(id)?
                .ok_or_else(|| PreflightError(format!("Zero session not found: {id}")))?,
            None => store
                .latest_resumable()?
                .ok_or_else(|| PreflightError("No Zero sessions available to resume.".into()))?,
        };
        if !meta.is_resumable() {
            return Err(PreflightError(format!(
                "Zero session is not resumable: {}",
                meta.session_id
            )));
        }
    }
    Ok(())
}

/// Details of a new session.
#[derive(Debug, Clone, Default)]
pub struct NewSessionInfo {
    /// Title.
    pub title: String,
    /// Workspace root.
    pub cwd: String,
    /// Model.
    pub model_id: String,
    /// Provider.
    pub provider: String,
}

/// Creates, resumes or forks the run's session.
pub fn prepare(
    store: &ZeroSessions,
    req: &SessionRequest,
    info: NewSessionInfo,
) -> Result<PreparedSession, PreflightError> {
    preflight(store, req)?;
    if let Some(parent) = &req.fork {
        let context = store.read_events(parent)?;
        let meta = store.fork(
            parent,
            req.init_session_id.clone(),
            None,
            info.cwd,
            info.model_id,
            info.provider,
        )?;
        return Ok(PreparedSession {
            mode: ExecMode::Fork,
            meta,
            context,
        });
    }
    if req.resume.is_some() || req.resume_latest {
        let meta = match &req.resume {
            Some(id) => store.get(id)?,
            None => store.latest_resumable()?,
        }
        .ok_or_else(|| PreflightError("No Zero sessions available to resume.".into()))?;
        let context = store.read_events(&meta.session_id)?;
        return Ok(PreparedSession {
            mode: ExecMode::Resume,
            meta,
            context,
        });
    }
    let meta = store.create(CreateInput {
        session_id: req.init_session_id.clone(),
        title: info.title,
        cwd: info.cwd,
        model_id: info.model_id,
        provider: info.provider,
        ..CreateInput::default()
    })?;
    Ok(PreparedSession {
        mode: ExecMode::New,
        meta,
        context: Vec::new(),
    })
}

/// A new session's title: the whitespace-collapsed prompt cut to 80 bytes, or a default.
pub fn session_title(explicit: Option<&str>, prompt: &str) -> String {
    if let Some(title) = explicit.map(str::trim).filter(|t| !t.is_empty()) {
        return title.to_string();
    }
    let collapsed = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return "Zero exec session".into();
    }
    cut_utf8(&collapsed, 80).to_string()
}

const CONTEXT_TYPES: [&str; 7] = [
    "message",
    "session_compaction",
    "session_fork",
    "session_child",
    "specialist_start",
    "specialist_stop",
    "error",
];

fn extract_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => items
            .iter()
            .map(extract_text)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        Value::Object(map) => {
            if let Some(Value::String(summary)) = map.get("summary") {
                if !summary.trim().is_empty() {
                    return summary.clone();
                }
            }
            // Zero walks the map in Go's random order; the role goes first here, then the
            // rest by key, so the summary is stable.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| (k.as_str() != "role", k.as_str()));
            keys.iter()
                .map(|k| extract_text(&map[*k]))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        }
        Value::Null => String::new(),
    }
}

fn summarize(payload: Option<&Value>) -> String {
    let text = payload.map(extract_text).unwrap_or_default();
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        text = payload
            .map(Value::to_string)
            .unwrap_or_else(|| "{}".to_string());
    }
    cut_utf8(&text, 500).to_string()
}

/// The model prompt of a resumed or forked run: the prior context, then the request. A new
/// session, or one with no events, gets the prompt unchanged.
pub fn format_exec_prompt(prompt: &str, prepared: &PreparedSession) -> String {
    if prepared.mode == ExecMode::New || prepared.context.is_empty() {
        return prompt.to_string();
    }
    let mut events: Vec<&SessionEvent> = prepared
        .context
        .iter()
        .filter(|e| CONTEXT_TYPES.contains(&e.kind.as_str()))
        .collect();
    if events.is_empty() {
        events = prepared.context.iter().collect();
    }
    if events.len() > 80 {
        events.drain(..events.len() - 80);
    }
    let lines: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "- #{} {}: {}",
                e.sequence,
                e.kind,
                summarize(e.payload.as_ref())
            )
        })
        .collect();
    let (label, id) = match prepared.mode {
        ExecMode::Fork if !prepared.meta.parent_session_id.is_empty() => {
            ("Forked from", prepared.meta.parent_session_id.as_str())
        }
        ExecMode::Fork => ("Forked from", prepared.meta.session_id.as_str()),
        _ => ("Continuing", prepared.meta.session_id.as_str()),
    };
    [
        format!("{label} Zero session {id}."),
        "Previous session context:".to_string(),
        lines.join("\n"),
        String::new(),
        "Current user request:".to_string(),
        prompt.to_string(),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> (tempfile::TempDir, ZeroSessions) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ZeroSessions::new(dir.path().join("zero").join("sessions"));
        (dir, store)
    }

    #[test]
    fn preflight_errors_use_zeros_words() {
        let (_dir, store) = store();
        let req = |resume: Option<&str>, latest: bool, fork: Option<&str>| SessionRequest {
            resume: resume.map(Into::into),
            resume_latest: latest,
            fork: fork.map(Into::into),
            init_session_id: None,
        };
        let msg = |r: SessionRequest| preflight(&store, &r).expect_err("must fail").0;
        assert_eq!(
            msg(req(Some("nope"), false, None)),
            "Zero session not found: nope"
        );
        assert_eq!(
            msg(req(None, true, None)),
            "No Zero sessions available to resume."
        );
        assert_eq!(
            msg(req(Some("../escape"), false, None)),
            "invalid zero session id \"../escape\""
        );
        assert_eq!(
            msg(req(None, false, Some("gone"))),
            "Zero session not found: gone"
        );
        store
            .create(CreateInput {
                session_id: Some("kid".into()),
                session_kind: "child".into(),
                ..Default::default()
            })
            .expect("create");
        assert_eq!(
            msg(req(Some("kid"), false, None)),
            "Zero session is not resumable: kid"
        );
    }

    #[test]
    fn exec_prompt_carries_prior_context() {
        let event = |seq: u64, kind: &str, payload: Value| SessionEvent {
            id: format!("s:{seq}"),
            session_id: "s".into(),
            sequence: seq,
            kind: kind.into(),
            created_at: String::new(),
            payload: Some(payload),
        };
        let prepared = PreparedSession {
            mode: ExecMode::Resume,
            meta: Metadata {
                session_id: "s".into(),
                ..Default::default()
            },
            context: vec![
                event(
                    1,
                    "message",
                    json!({"role": "user", "content": "first   question"}),
                ),
                event(2, "tool_call", json!({"id": "c", "name": "read_file"})),
                event(
                    3,
                    "message",
                    json!({"role": "assistant", "content": "answer"}),
                ),
            ],
        };
        assert_eq!(
            format_exec_prompt("next", &prepared),
            "Continuing Zero session s.\nPrevious session context:\n- #1 message: user first question\n- #3 message: assistant answer\n\nCurrent user request:\nnext"
        );
        let new = PreparedSession {
            mode: ExecMode::New,
            ..prepared
        };
        assert_eq!(format_exec_prompt("next", &new), "next");
        assert_eq!(session_title(None, "  a\n b  "), "a b");
        assert_eq!(session_title(None, ""), "Zero exec session");
        assert_eq!(session_title(None, &"é".repeat(60)).len(), 80);
    }
}
