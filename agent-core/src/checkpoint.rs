//! The loop's side of file checkpoints: before a call of a tool that writes files (`write`
//! side effect: the file tools, `apply_patch`), the files its [`crate::Tool::call_target`]
//! names are read; once it ran, their new state is hashed, and both go to the session as one
//! [`SessionRecord::Checkpoint`] ([`crate::rewind`] restores them). Taken only for an agent
//! recording to a store that keeps its records ([`SessionStore::keeps_records`]). A shell
//! command's writes are not checkpointed: the sandbox cannot tell which files it wrote, so
//! they are not restorable (a rewind reports such a file as changed since).

use std::path::Path;

use crate::emit::{record, Emitter};
use crate::inner::Inner;
use crate::message::ToolCall;
use crate::rewind::{content_hash, Checkpoint, FileBefore, FileCheckpoint};
use crate::session::SessionRecord;
use crate::tool::{SideEffect, Tool};

/// Largest file whose content a checkpoint keeps (Zero's default, 5 MiB).
pub const MAX_CHECKPOINT_BYTES: u64 = 5 * 1024 * 1024;

/// The before-state of one call's files, waiting for the call to end.
pub(crate) struct Pending {
    files: Vec<(String, FileBefore)>,
}

/// Whether `inner` keeps checkpoints at all.
fn enabled(inner: &Inner) -> bool {
    inner
        .session
        .as_ref()
        .is_some_and(|(store, _)| store.keeps_records())
}

/// Reads the before-state of the files `call` of `tool` will write; `None` when it writes
/// none (or checkpoints are not kept).
pub(crate) async fn before(inner: &Inner, tool: &dyn Tool, call: &ToolCall) -> Option<Pending> {
    if tool.side_effect() != SideEffect::Write || !enabled(inner) {
        return None;
    }
    let paths = tool.call_target(&call.args).paths;
    if paths.is_empty() {
        return None;
    }
    let cwd = inner.cwd.clone();
    let read = move || {
        paths
            .into_iter()
            .map(|path| {
                let abs = crate::permission::target::absolute(&cwd, Path::new(&path));
                let before = read_before(&abs);
                (path, before)
            })
            .collect()
    };
    let files = tokio::task::spawn_blocking(read).await.ok()?;
    Some(Pending { files })
}

fn read_before(abs: &Path) -> FileBefore {
    match std::fs::metadata(abs) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => FileBefore::Absent,
        Err(err) => FileBefore::Skipped {
            reason: format!("unreadable: {err}"),
        },
        Ok(meta) if !meta.is_file() => FileBefore::Skipped {
            reason: "not a regular file".into(),
        },
        Ok(meta) if meta.len() > MAX_CHECKPOINT_BYTES => FileBefore::Skipped {
            reason: format!("larger than {} MiB", MAX_CHECKPOINT_BYTES / (1024 * 1024)),
        },
        Ok(meta) => match std::fs::read(abs) {
            Ok(data) => FileBefore::Content {
                data: data.into(),
                mode: mode(&meta),
            },
            Err(err) => FileBefore::Skipped {
                reason: format!("unreadable: {err}"),
            },
        },
    }
}

#[cfg(unix)]
fn mode(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode(_: &std::fs::Metadata) -> Option<u32> {
    None
}

/// Records the checkpoint of `call` (its files' after-state hashed now that it ran).
pub(crate) async fn record_after(inner: &Inner, em: &Emitter, call: &ToolCall, pending: Pending) {
    let cwd = inner.cwd.clone();
    let files = pending.files;
    let hash = move || {
        files
            .into_iter()
            .map(|(path, before)| {
                let abs = crate::permission::target::absolute(&cwd, Path::new(&path));
                let after = std::fs::read(&abs).ok().map(|data| content_hash(&data));
                FileCheckpoint {
                    path,
                    before,
                    after,
                }
            })
            .collect()
    };
    let Ok(files) = tokio::task::spawn_blocking(hash).await else {
        return;
    };
    let checkpoint = Checkpoint {
        id: call.id.clone(),
        tool: call.name.clone(),
        files,
    };
    record(
        inner,
        em,
        SessionRecord::Checkpoint {
            checkpoint: Box::new(checkpoint),
        },
    )
    .await;
}
