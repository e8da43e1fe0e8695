//! Rewinding files to a checkpoint: [`Agent::checkpoints`], [`Agent::rewind_plan`] and
//! [`Agent::rewind`].
//!
//! Before each call of a tool that writes files (the file tools, `apply_patch`) the agent
//! keeps the before-state of the files the call names, and once it ran a hash of their new
//! state: a [`Checkpoint`], recorded with the session ([`SessionRecord::Checkpoint`]) in
//! whatever store keeps it. A checkpoint is named by the id of its call. Rewinding to one puts
//! every file changed at or after it back as it was just before that call (the snapshot
//! closest to it wins; a file the call created is deleted), and cuts the transcript back to
//! just before the assistant message that made the call. A file whose content is no longer
//! what the agent's last change left (someone else changed it since, or a shell command did:
//! those are not checkpointed) is reported and left alone unless the rewind is forced. Files
//! outside the workspace are never written by a rewind.
//!
//! ```no_run
//! # async fn demo(agent: agent_core::Agent) -> Result<(), agent_core::rewind::RewindError> {
//! let checkpoints = agent.checkpoints().await?;
//! if let Some(first) = checkpoints.first() {
//!     let plan = agent.rewind_plan(&first.id).await?;
//!     println!("{} file(s) to restore, {} changed since", plan.files.len(), plan.conflicts().count());
//!     let report = agent.rewind(&first.id, false).await?;
//!     println!("restored {:?}, kept {:?}", report.restored, report.conflicts);
//! }
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::message::{ContentBlock, Message, Role};
use crate::permission::target::absolute;
use crate::session::{SessionError, SessionRecord};
use crate::Agent;

/// A file's state before a checkpointed call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileBefore {
    /// It did not exist: a rewind deletes it.
    Absent,
    /// Its content (base64 in JSON) and permission bits.
    Content {
        /// The bytes.
        #[serde(with = "crate::message::base64_bytes")]
        data: Bytes,
        /// Unix permission bits, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<u32>,
    },
    /// Not kept (too large, not a regular file, unreadable): not restorable.
    Skipped {
        /// Why.
        reason: String,
    },
}

/// One file of a [`Checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCheckpoint {
    /// The path as the call named it (relative to the workspace, or absolute).
    pub path: String,
    /// Its state before the call.
    pub before: FileBefore,
    /// A hash of its content after the call ([`content_hash`]); `None` when it did not exist
    /// then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// The files one call changed, as they were before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The call's id (the checkpoint's name).
    pub id: String,
    /// The tool.
    pub tool: String,
    /// Its files.
    pub files: Vec<FileCheckpoint>,
}

/// A checkpoint as [`Agent::checkpoints`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointSummary {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The files it changed, as the call named them.
    pub files: Vec<String>,
}

/// The content hash a checkpoint keeps of a file's state after a call: FNV-1a (64 bits) and
/// the length, as `fnv1a64:<hex>:<len>`. It tells a file the agent left from one changed
/// since; it is no security measure.
pub fn content_hash(data: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in data {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}:{}", data.len())
}

/// What a rewind does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Write its before-content back.
    Restore,
    /// Delete it (the agent created it).
    Delete,
    /// Leave it: its before-state was not kept, or it is outside the workspace.
    Skip,
}

/// One file of a [`RewindPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePlan {
    /// The path as the calls named it.
    pub path: String,
    /// What the rewind does to it.
    pub action: FileAction,
    /// Why it is skipped, or why it is a conflict (`changed since the checkpoint: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its content is not what the agent's last change left: someone else changed it (or a
    /// shell command did). Not overwritten unless the rewind is forced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_since: bool,
}

/// What [`Agent::rewind`] would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindPlan {
    /// The checkpoint rewound to.
    pub checkpoint: String,
    /// Messages the transcript keeps.
    pub kept_messages: usize,
    /// Messages it drops.
    pub dropped_messages: usize,
    /// The checkpoints undone (this one and every later one), oldest first.
    pub undone: Vec<String>,
    /// Every file changed at or after the checkpoint.
    pub files: Vec<FilePlan>,
}

impl RewindPlan {
    /// The files changed since by someone else.
    pub fn conflicts(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.changed_since)
    }
}

/// What [`Agent::rewind`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RewindReport {
    /// The checkpoint rewound to.
    pub checkpoint: String,
    /// Files written back.
    pub restored: Vec<String>,
    /// Files deleted (the agent had created them).
    pub deleted: Vec<String>,
    /// Files left alone, with why.
    pub skipped: Vec<(String, String)>,
    /// Files changed since by someone else, left alone (empty when forced).
    pub conflicts: Vec<String>,
    /// Messages the transcript kept.
    pub kept_messages: usize,
}

/// A rewind could not be planned or made.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// The agent records no session: it keeps no checkpoints.
    #[error("this agent records no session, so it keeps no checkpoints")]
    NoSession,
    /// A run is in flight.
    #[error("a run is in flight; rewind once it is over")]
    Busy,
    /// No checkpoint of that id (or it was rewound already).
    #[error("no checkpoint {0:?} in this session")]
    NotFound(String),
    /// The session could not be read or recorded.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// The checkpoints still standing in `records` (a rewind undoes those from its target on),
/// each with the index of its record.
fn standing(records: &[SessionRecord]) -> Vec<(usize, &Checkpoint)> {
    let mut list: Vec<(usize, &Checkpoint)> = Vec::new();
    for (index, record) in records.iter().enumerate() {
        match record {
            SessionRecord::Checkpoint { checkpoint } => list.push((index, checkpoint)),
            SessionRecord::Rewound { checkpoint } => {
                if let Some(at) = list.iter().position(|(_, c)| c.id == *checkpoint) {
                    list.truncate(at);
                }
            }
            _ => {}
        }
    }
    list
}

/// The transcript cut back to just before the assistant message that made call `id`: the
/// records before its checkpoint, replayed, without that message.
fn cut(records: &[SessionRecord], index: usize, id: &str) -> Vec<Message> {
    let mut messages = SessionRecord::replay(&records[..index]);
    let made_it = |m: &Message| {
        m.role == Role::Assistant
            && m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(call) if call.id == id))
    };
    if let Some(at) = messages.iter().rposition(made_it) {
        messages.truncate(at);
    }
    messages
}

/// One file to put back: the state to restore and the state the agent last left.
struct Target {
    path: String,
    abs: PathBuf,
    before: FileBefore,
    last_after: Option<String>,
}

/// The files the checkpoints from `from` on changed, each once (the first snapshot, the
/// closest to the target, wins; the last one's after-state is what the agent left).
fn targets(list: &[(usize, &Checkpoint)], cwd: &Path) -> Vec<Target> {
    let mut order: Vec<Target> = Vec::new();
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    for (_, checkpoint) in list {
        for file in &checkpoint.files {
            let abs = absolute(cwd, Path::new(&file.path));
            match seen.get(&abs) {
                Some(&at) => order[at].last_after = file.after.clone(),
                None => {
                    seen.insert(abs.clone(), order.len());
                    order.push(Target {
                        path: file.path.clone(),
                        abs,
                        before: file.before.clone(),
                        last_after: file.after.clone(),
                    });
                }
            }
        }
    }
    order
}

/// Whether `abs` lies in the workspace `root` (symbolic links of existing ancestors
/// resolved, so a link cannot lead a rewind out of it).
fn inside(root: &Path, abs: &Path) -> bool {
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    let mut existing = abs.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return false,
        }
    }
    let Ok(mut resolved) = existing.canonicalize() else {
        return false;
    };
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    resolved.starts_with(&root)
}

fn plan_file(target: &Target, cwd: &Path) -> FilePlan {
    let plan = |action, note: Option<String>, changed_since| FilePlan {
        path: target.path.clone(),
        action,
        note,
        changed_since,
    };
    if !inside(cwd, &target.abs) {
        return plan(
            FileAction::Skip,
            Some("outside the workspace".into()),
            false,
        );
    }
    let action = match &target.before {
        FileBefore::Absent => FileAction::Delete,
        FileBefore::Content { .. } => FileAction::Restore,
        FileBefore::Skipped { reason } => {
            return plan(
                FileAction::Skip,
                Some(format!("not restorable: {reason}")),
                false,
            )
        }
    };
    let now = std::fs::read(&target.abs).ok().map(|d| content_hash(&d));
    match now == target.last_after {
        true => plan(action, None, false),
        false => {
            let what = match (&now, &target.last_after) {
                (None, _) => "it was deleted",
                (Some(_), None) => "it was created again",
                (Some(_), Some(_)) => "its content changed",
            };
            plan(
                action,
                Some(format!("changed since the agent's last change: {what}")),
                true,
            )
        }
    }
}

/// Writes `data` over `path` through a temporary file beside it (renamed over it), with
/// `mode`.
fn write_back(path: &Path, data: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    use std::io::Write;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}-{n}.rewind", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(data)?;
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

impl Agent {
    /// The session's checkpoints still standing, oldest first (see [`crate::rewind`]).
    pub async fn checkpoints(&self) -> Result<Vec<CheckpointSummary>, RewindError> {
        let (store, id) = self.inner.session.clone().ok_or(RewindError::NoSession)?;
        let records = store.load(&id).await?;
        Ok(standing(&records)
            .into_iter()
            .map(|(_, c)| CheckpointSummary {
                id: c.id.clone(),
                tool: c.tool.clone(),
                files: c.files.iter().map(|f| f.path.clone()).collect(),
            })
            .collect())
    }

    /// What rewinding to checkpoint `to` (a call id) would do: the files it would restore or
    /// delete, those changed since by someone else, the messages it keeps.
    pub async fn rewind_plan(&self, to: &str) -> Result<RewindPlan, RewindError> {
        let (store, id) = self.inner.session.clone().ok_or(RewindError::NoSession)?;
        let records = store.load(&id).await?;
        self.plan_of(&records, to)
    }

    fn plan_of(&self, records: &[SessionRecord], to: &str) -> Result<RewindPlan, RewindError> {
        let list = standing(records);
        let at = list
            .iter()
            .position(|(_, c)| c.id == to)
            .ok_or_else(|| RewindError::NotFound(to.to_string()))?;
        let (index, _) = list[at];
        let kept = cut(records, index, to).len();
        let total = SessionRecord::replay(records).len();
        let cwd = &self.inner.cwd;
        let files = targets(&list[at..], cwd)
            .iter()
            .map(|t| plan_file(t, cwd))
            .collect();
        Ok(RewindPlan {
            checkpoint: to.to_string(),
            kept_messages: kept,
            dropped_messages: total.saturating_sub(kept),
            undone: list[at..].iter().map(|(_, c)| c.id.clone()).collect(),
            files,
        })
    }

    /// Rewinds to checkpoint `to` (a call id): every file changed at or after it is put back
    /// as it was just before that call, and the transcript is cut back to just before the
    /// assistant message that made it (recorded, so a resumed session has the cut
    /// transcript). A file changed since by someone else is left alone and reported, unless
    /// `force`. Fails while a run is in flight.
    pub async fn rewind(&self, to: &str, force: bool) -> Result<RewindReport, RewindError> {
        let (store, id) = self.inner.session.clone().ok_or(RewindError::NoSession)?;
        let _idle = self.inner.queue.try_lock().map_err(|_| RewindError::Busy)?;
        let records = store.load(&id).await?;
        let plan = self.plan_of(&records, to)?;
        let list = standing(&records);
        let at = list.iter().position(|(_, c)| c.id == to).unwrap_or(0);
        let index = list.get(at).map_or(records.len(), |(i, _)| *i);
        let targets = targets(&list[at..], &self.inner.cwd);
        let mut report = RewindReport {
            checkpoint: to.to_string(),
            ..RewindReport::default()
        };
        for (file, target) in plan.files.iter().zip(&targets) {
            if file.changed_since && !force {
                report.conflicts.push(file.path.clone());
                continue;
            }
            let done = match (&file.action, &target.before) {
                (FileAction::Restore, FileBefore::Content { data, mode }) => {
                    write_back(&target.abs, data, *mode).map(|()| &mut report.restored)
                }
                (FileAction::Delete, _) => match std::fs::remove_file(&target.abs) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(&mut report.deleted),
                },
                _ => {
                    let why = file.note.clone().unwrap_or_else(|| "not restorable".into());
                    report.skipped.push((file.path.clone(), why));
                    continue;
                }
            };
            match done {
                Ok(list) => list.push(file.path.clone()),
                Err(err) => report
                    .skipped
                    .push((file.path.clone(), format!("cannot write it: {err}"))),
            }
        }
        let messages = cut(&records, index, to);
        report.kept_messages = messages.len();
        store
            .append(
                &id,
                &SessionRecord::Rewound {
                    checkpoint: to.to_string(),
                },
            )
            .await?;
        store
            .append(
                &id,
                &SessionRecord::Replaced {
                    messages: messages.clone(),
                },
            )
            .await?;
        self.inner.state().messages = messages;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_tells_contents_apart() {
        assert_eq!(content_hash(b""), "fnv1a64:cbf29ce484222325:0");
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
        assert_ne!(content_hash(b"ab"), content_hash(b"ba"));
    }

    #[test]
    fn a_rewind_undoes_its_checkpoint_and_every_later_one() {
        let cp = |id: &str| SessionRecord::Checkpoint {
            checkpoint: Box::new(Checkpoint {
                id: id.into(),
                tool: "write_file".into(),
                files: Vec::new(),
            }),
        };
        let records = vec![
            cp("a"),
            cp("b"),
            cp("c"),
            SessionRecord::Rewound {
                checkpoint: "b".into(),
            },
            cp("d"),
        ];
        let ids: Vec<&str> = standing(&records)
            .iter()
            .map(|(_, c)| c.id.as_str())
            .collect();
        assert_eq!(ids, ["a", "d"]);
    }
}
