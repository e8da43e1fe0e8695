//! Rewinding a Zero session (`zero sessions rewind-plan|rewind <id> --sequence N`, Zero's
//! `internal/sessions/replay.go` and `rewind.go`): a plan of the events kept and dropped, and
//! the rewind itself, which restores the workspace files of every `session_checkpoint` after
//! the target (oldest first, so the snapshot closest to the target wins; a file that did not
//! exist is deleted; nothing outside the workspace is written), cuts `events.jsonl` back to
//! the target and appends a `session_rewind` marker.
//!
//! Both checkpoint shapes are read: Zero's (`{tool, files: [{path, blob (sha-256), absent,
//! skipped, mode}]}`, blobs in `checkpoints/blobs/`) and exec's (`{files: [{path, blob,
//! existed}], tool, toolCallId}`, blobs in `blobs/`). Beyond Zero: where exec recorded the
//! files' state after the call (`checkpointAfter` on the call's `tool_result`), a file whose
//! content is no longer what the agent left is reported ([`RewindPlan::changed_since`]) and a
//! rewind refuses to overwrite it unless forced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::records::SessionEvent;
use super::sessions::{io, ZeroError, ZeroSessions};
use super::{BLOBS_DIR, EVENTS_FILE, LOCK_FILE};
use crate::fs::{write_atomic_with, Durability, FileLock};

/// The event type of a checkpoint.
pub const CHECKPOINT_EVENT: &str = "session_checkpoint";
/// The event type of the marker a rewind appends.
pub const REWIND_EVENT: &str = "session_rewind";

/// One event of a plan (Zero's `EventRef`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRef {
    /// `<sessionId>:<sequence>`.
    pub id: String,
    /// Its sequence.
    pub sequence: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it was written.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub created_at: String,
}

/// What a rewind targets (Zero's `RewindOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewindOptions {
    /// `--sequence N` (0: not given).
    pub target_sequence: u64,
    /// `--event ID` (empty: not given).
    pub target_event_id: String,
    /// The target event is kept (not `--exclude-target`).
    pub keep_target: bool,
}

/// What a rewind would keep and drop (Zero's `RewindPlan`, and the files changed since).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindPlan {
    /// The session.
    pub session_id: String,
    /// The target's sequence.
    pub target_sequence: u64,
    /// The target's id.
    pub target_event_id: String,
    /// Whether the target is kept.
    pub keep_target: bool,
    /// Events kept.
    pub kept_count: usize,
    /// Events dropped.
    pub dropped_count: usize,
    /// The last event kept.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_kept_event_id: String,
    /// Every event kept.
    pub kept_events: Vec<EventRef>,
    /// Every event dropped.
    pub dropped_events: Vec<EventRef>,
    /// Files the rewind would restore whose content is no longer what the agent left
    /// (someone else changed them since): a rewind refuses to overwrite them unless forced.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since: Vec<String>,
}

impl RewindPlan {
    /// The sequence a rewind keeps events through.
    pub fn keep_through(&self) -> u64 {
        match self.keep_target {
            true => self.target_sequence,
            false => self.target_sequence.saturating_sub(1),
        }
    }
}

/// What a rewind did to the workspace (Zero's `RestoreReport`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// The sequence events were kept through.
    pub target_sequence: u64,
    /// Files written back.
    pub files_restored: usize,
    /// Files deleted (they did not exist before).
    pub files_deleted: usize,
    /// Paths whose before-state was not recoverable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Paths changed since by someone else that `force` overwrote.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overwritten: Vec<String>,
}

/// The payload of the marker a rewind appends (Zero's `RewindMarker`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RewindMarker<'a> {
    target_sequence: u64,
    report: &'a RestoreReport,
}

/// One file of a checkpoint, in either shape.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckpointFile {
    #[serde(default)]
    path: String,
    #[serde(default)]
    blob: String,
    #[serde(default)]
    absent: bool,
    #[serde(default)]
    skipped: bool,
    /// exec's: whether it existed before the call.
    #[serde(default)]
    existed: Option<bool>,
    #[serde(default)]
    mode: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckpointPayload {
    #[serde(default)]
    files: Vec<CheckpointFile>,
    #[serde(default)]
    tool_call_id: String,
}

/// exec's record of a file's state after a checkpointed call (`tool_result.checkpointAfter`).
#[derive(Debug, Clone, Default, Deserialize)]
struct AfterState {
    #[serde(default)]
    path: String,
    /// The content hash ([`agent_core::rewind::content_hash`]); absent: no file.
    #[serde(default)]
    after: Option<String>,
}

/// What the checkpoints after the target put back, per file.
struct Restore {
    path: String,
    abs: Option<PathBuf>,
    file: CheckpointFile,
    /// What the agent last left there, when exec recorded it.
    last_after: Option<Option<String>>,
}

fn refs(events: &[SessionEvent]) -> Vec<EventRef> {
    events
        .iter()
        .map(|e| EventRef {
            id: e.id.clone(),
            sequence: e.sequence,
            kind: e.kind.clone(),
            created_at: e.created_at.clone(),
        })
        .collect()
}

/// Zero's `findRewindTarget`.
fn find_target(events: &[SessionEvent], options: &RewindOptions) -> Result<usize, ZeroError> {
    let event_id = options.target_event_id.trim();
    let corrupt = |m: String| ZeroError::Corrupt(m);
    if event_id.is_empty() && options.target_sequence == 0 {
        return Err(corrupt(
            "rewind target event id or sequence is required".into(),
        ));
    }
    if !event_id.is_empty() {
        let Some(index) = events.iter().position(|e| e.id == event_id) else {
            return Err(corrupt(format!(
                "rewind target event {event_id} was not found"
            )));
        };
        if options.target_sequence > 0 && events[index].sequence != options.target_sequence {
            return Err(corrupt(format!(
                "conflicting rewind target selectors: event {event_id} has sequence {}, not {}",
                events[index].sequence, options.target_sequence
            )));
        }
        return Ok(index);
    }
    events
        .iter()
        .position(|e| e.sequence == options.target_sequence)
        .ok_or_else(|| {
            corrupt(format!(
                "rewind target sequence {} was not found",
                options.target_sequence
            ))
        })
}

/// `rel` in the workspace `root`, symbolic links of its existing ancestors resolved; `None`
/// when it leads outside (Zero's `resolveWithinWorkspace`).
fn within(root: &Path, rel: &str) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let joined = agent_core::permission::target::absolute(&root, Path::new(rel));
    let mut existing = joined.clone();
    let mut missing = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        missing.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?.to_path_buf();
    }
    let mut resolved = existing.canonicalize().ok()?;
    for name in missing.into_iter().rev() {
        resolved.push(name);
    }
    resolved.starts_with(&root).then_some(resolved)
}

impl ZeroSessions {
    /// Zero's `PlanRewind`, with the files a rewind would find changed since (see the module
    /// docs); the session's workspace is its metadata's `cwd`.
    pub fn plan_rewind(&self, id: &str, options: &RewindOptions) -> Result<RewindPlan, ZeroError> {
        Self::check_id(id)?;
        let events = self.read_events(id)?;
        if events.is_empty() {
            return Err(ZeroError::Corrupt(format!(
                "zero session {id} has no events to rewind"
            )));
        }
        let index = find_target(&events, options)?;
        let target = &events[index];
        let cutoff = index + usize::from(options.keep_target);
        let (kept, dropped) = events.split_at(cutoff);
        let mut plan = RewindPlan {
            session_id: id.to_string(),
            target_sequence: target.sequence,
            target_event_id: target.id.clone(),
            keep_target: options.keep_target,
            kept_count: kept.len(),
            dropped_count: dropped.len(),
            last_kept_event_id: kept.last().map(|e| e.id.clone()).unwrap_or_default(),
            kept_events: refs(kept),
            dropped_events: refs(dropped),
            changed_since: Vec::new(),
        };
        if let Some(workspace) = self.workspace(id)? {
            let restores = self.restores(&workspace, &events, plan.keep_through())?;
            plan.changed_since = restores
                .iter()
                .filter(|r| changed_since(r))
                .map(|r| r.path.clone())
                .collect();
        }
        Ok(plan)
    }

    /// The session's recorded workspace.
    fn workspace(&self, id: &str) -> Result<Option<PathBuf>, ZeroError> {
        let meta = self
            .read_metadata(id)?
            .ok_or_else(|| ZeroError::NotFound(id.to_string()))?;
        let cwd = meta.cwd.trim();
        Ok((!cwd.is_empty()).then(|| PathBuf::from(cwd)))
    }

    /// The files the checkpoints after `keep_through` restore, each once (the closest to the
    /// target wins), with what the agent last left there.
    fn restores(
        &self,
        workspace: &Path,
        events: &[SessionEvent],
        keep_through: u64,
    ) -> Result<Vec<Restore>, ZeroError> {
        // What exec recorded after each checkpointed call, by call id.
        let mut after: HashMap<String, Vec<AfterState>> = HashMap::new();
        for event in events.iter().filter(|e| e.kind == "tool_result") {
            let Some(payload) = &event.payload else {
                continue;
            };
            let (Some(call), Some(states)) = (
                payload.get("toolCallId").and_then(Value::as_str),
                payload.get("checkpointAfter"),
            ) else {
                continue;
            };
            if let Ok(states) = serde_json::from_value::<Vec<AfterState>>(states.clone()) {
                after.insert(call.to_string(), states);
            }
        }
        let mut order: Vec<Restore> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for event in events
            .iter()
            .filter(|e| e.kind == CHECKPOINT_EVENT && e.sequence > keep_through)
        {
            // A checkpoint that does not decode fails the rewind (as Zero's): skipping it
            // would let a later checkpoint restore a later state than the one asked for.
            let payload: CheckpointPayload = match &event.payload {
                Some(payload) => serde_json::from_value(payload.clone()).map_err(|e| {
                    ZeroError::Corrupt(format!(
                        "decode checkpoint payload seq {}: {e}",
                        event.sequence
                    ))
                })?,
                None => CheckpointPayload::default(),
            };
            let states = after.get(&payload.tool_call_id);
            for file in payload.files {
                let abs = within(workspace, &file.path);
                let key = abs
                    .as_ref()
                    .map_or_else(|| file.path.clone(), |p| p.display().to_string());
                let last = states.and_then(|states| {
                    states
                        .iter()
                        .find(|s| s.path == file.path)
                        .map(|s| s.after.clone())
                });
                match seen.get(&key) {
                    Some(&at) => {
                        if last.is_some() {
                            order[at].last_after = last;
                        }
                    }
                    None => {
                        seen.insert(key, order.len());
                        order.push(Restore {
                            path: file.path.clone(),
                            abs,
                            file,
                            last_after: last,
                        });
                    }
                }
            }
        }
        Ok(order)
    }

    /// The content of blob `name` of session `id`: exec's `blobs/`, else Zero's
    /// `checkpoints/blobs/` (whose names are the content's sha-256, not checked here).
    fn blob(&self, id: &str, name: &str) -> Option<Vec<u8>> {
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return None;
        }
        let dir = self.session_dir(id);
        std::fs::read(dir.join(BLOBS_DIR).join(name))
            .or_else(|_| std::fs::read(dir.join("checkpoints").join("blobs").join(name)))
            .ok()
    }

    /// Zero's `ApplyRewind(id, workspace, keep_through)`, under the session's lock: the
    /// files of the checkpoints after `keep_through` restored, the events cut to it, a
    /// `session_rewind` marker appended. A file changed since by someone else (where exec
    /// recorded what the agent left) refuses the whole rewind, nothing changed, unless
    /// `force`.
    pub fn apply_rewind(
        &self,
        id: &str,
        keep_through: u64,
        force: bool,
    ) -> Result<RestoreReport, ZeroError> {
        Self::check_id(id)?;
        let workspace = self.workspace(id)?.ok_or_else(|| {
            ZeroError::Corrupt(
                "session has no recorded workspace (cwd); cannot restore files".into(),
            )
        })?;
        let dir = self.session_dir(id);
        let lock = FileLock::exclusive(&dir.join(LOCK_FILE)).map_err(io("lock zero session"))?;
        let events = self.read_events(id)?;
        let restores = self.restores(&workspace, &events, keep_through)?;
        let changed: Vec<String> = restores
            .iter()
            .filter(|r| changed_since(r))
            .map(|r| r.path.clone())
            .collect();
        if !changed.is_empty() && !force {
            return Err(ZeroError::Corrupt(format!(
                "rewind refused: {} file(s) changed since the agent's last change: {}. \
                 Nothing was changed; rerun with --force to overwrite them.",
                changed.len(),
                changed.join(", ")
            )));
        }
        let mut report = RestoreReport {
            target_sequence: keep_through,
            overwritten: changed,
            ..RestoreReport::default()
        };
        for restore in &restores {
            let Some(abs) = &restore.abs else {
                report.skipped.push(restore.path.clone());
                continue;
            };
            let file = &restore.file;
            if file.skipped {
                report.skipped.push(restore.path.clone());
            } else if file.absent || file.existed == Some(false) {
                match std::fs::remove_file(abs) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        report.skipped.push(restore.path.clone())
                    }
                    _ => report.files_deleted += 1,
                }
            } else {
                let data = self.blob(id, &file.blob);
                match data.map(|data| restore_file(abs, &data, file.mode)) {
                    Some(Ok(())) => report.files_restored += 1,
                    _ => report.skipped.push(restore.path.clone()),
                }
            }
        }
        // The events kept, rewritten whole; the metadata follows.
        let kept: Vec<&SessionEvent> = events
            .iter()
            .filter(|e| e.sequence <= keep_through)
            .collect();
        let mut data = Vec::new();
        for event in &kept {
            let line = serde_json::to_vec(event)
                .map_err(|e| ZeroError::Corrupt(format!("encode kept event: {e}")))?;
            data.extend_from_slice(&line);
            data.push(b'\n');
        }
        write_atomic_with(&dir.join(EVENTS_FILE), &data, Durability::Sync)
            .map_err(io("write truncated events"))?;
        if let Some(mut meta) = self.read_metadata(id)? {
            meta.event_count = kept.last().map_or(0, |e| e.sequence);
            meta.last_event_type = kept.last().map(|e| e.kind.clone()).unwrap_or_default();
            self.write_metadata(&meta)?;
        }
        self.prune_blobs(id, &kept);
        drop(lock);
        let marker = RewindMarker {
            target_sequence: keep_through,
            report: &report,
        };
        self.append(id, REWIND_EVENT, Some(&marker))?;
        Ok(report)
    }
}

impl ZeroSessions {
    /// Removes exec's blobs no kept checkpoint refers to (Zero's `pruneOrphanBlobs`).
    fn prune_blobs(&self, id: &str, kept: &[&SessionEvent]) {
        let referenced: std::collections::HashSet<String> = kept
            .iter()
            .filter(|e| e.kind == CHECKPOINT_EVENT)
            .filter_map(|e| e.payload.clone())
            .filter_map(|p| serde_json::from_value::<CheckpointPayload>(p).ok())
            .flat_map(|p| p.files.into_iter().map(|f| f.blob))
            .collect();
        let Ok(entries) = std::fs::read_dir(self.session_dir(id).join(BLOBS_DIR)) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !referenced.contains(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether the agent's last state of a file is known and differs from the file now.
fn changed_since(restore: &Restore) -> bool {
    let (Some(abs), Some(last)) = (&restore.abs, &restore.last_after) else {
        return false;
    };
    let now = std::fs::read(abs)
        .ok()
        .map(|d| agent_core::rewind::content_hash(&d));
    now != *last
}

/// Writes `data` over `path` atomically, with `mode` (0: the existing file's, else 0644).
fn restore_file(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        match mode {
            0 => std::fs::metadata(path)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o644),
            m => m & 0o7777,
        }
    };
    crate::fs::write_atomic(path, data)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::zero::CreateInput;
    use serde_json::json;

    /// A session in `root` whose workspace is `work`, with Zero's own checkpoints: `a.txt`
    /// (blob in `checkpoints/blobs/`), `new.txt` (absent before), `../out.txt` (outside).
    fn zero_session(root: &Path, work: &Path) -> ZeroSessions {
        let store = ZeroSessions::new(root);
        store
            .create(CreateInput {
                session_id: Some("z1".into()),
                cwd: work.display().to_string(),
                ..Default::default()
            })
            .expect("create");
        let blobs = store.session_dir("z1").join("checkpoints").join("blobs");
        std::fs::create_dir_all(&blobs).expect("blobs");
        std::fs::write(blobs.join("abc"), b"before\n").expect("blob");
        store
            .append("z1", "message", Some(json!({"role": "user"})))
            .expect("append");
        let files = json!({"tool": "write_file", "files": [
            {"path": "a.txt", "blob": "abc", "mode": 0o600},
            {"path": "new.txt", "absent": true},
            {"path": "../out.txt", "blob": "abc"}
        ]});
        store
            .append("z1", CHECKPOINT_EVENT, Some(files))
            .expect("append");
        store
            .append("z1", "tool_result", Some(json!({"toolCallId": "c"})))
            .expect("append");
        store
    }

    #[test]
    fn zeros_own_checkpoints_restore_inside_the_workspace_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).expect("work");
        std::fs::write(work.join("a.txt"), "after").expect("write");
        std::fs::write(work.join("new.txt"), "created").expect("write");
        let store = zero_session(&dir.path().join("sessions"), &work);

        let plan = store
            .plan_rewind(
                "z1",
                &RewindOptions {
                    target_sequence: 1,
                    keep_target: true,
                    ..Default::default()
                },
            )
            .expect("plan");
        assert_eq!((plan.kept_count, plan.dropped_count), (1, 2));
        assert_eq!(plan.target_event_id, "z1:1");
        assert!(plan.changed_since.is_empty(), "Zero records no after-state");

        let report = store.apply_rewind("z1", 1, false).expect("rewind");
        assert_eq!((report.files_restored, report.files_deleted), (1, 1));
        assert_eq!(report.skipped, ["../out.txt"]);
        assert_eq!(
            std::fs::read(work.join("a.txt")).expect("read"),
            b"before\n"
        );
        assert!(!work.join("new.txt").exists());
        assert!(!dir.path().join("out.txt").exists(), "nothing outside");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(work.join("a.txt")).expect("meta");
            assert_eq!(mode.permissions().mode() & 0o777, 0o600);
        }
        let events = store.read_events("z1").expect("events");
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["message", REWIND_EVENT]);
    }

    #[test]
    fn a_checkpoint_that_does_not_decode_fails_the_rewind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).expect("work");
        let store = zero_session(&dir.path().join("sessions"), &work);
        store
            .append("z1", CHECKPOINT_EVENT, Some(json!({"files": "no"})))
            .expect("append");
        let error = store.apply_rewind("z1", 1, false).expect_err("corrupt");
        assert!(
            error
                .to_string()
                .contains("decode checkpoint payload seq 4"),
            "{error}"
        );
        assert_eq!(
            store.read_events("z1").expect("events").len(),
            4,
            "log kept"
        );
    }
}
