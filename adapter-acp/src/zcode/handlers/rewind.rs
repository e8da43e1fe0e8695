//! `session/rewind`: the session's files and transcript back to a checkpoint
//! ([`agent_core::Agent::rewind`]), a `rewind.triggered` event, and the snapshot after it.

use std::time::Duration;

use agent_core::message::{ContentBlock, Message, Role};
use agent_core::rewind::{CheckpointSummary, RewindError};

use super::{ok, Reply, RpcError, Server};
use crate::zcode::mapping::emit;
use crate::zcode::snapshot;
use crate::zcode::wire::{
    codes, EventBody, RewindParams, RewindResult, RewindTarget, RewindTriggeredPayload, SkippedFile,
};

/// How long the handler waits for its event to be stored and shown.
const EVENT_WAIT: Duration = Duration::from_secs(5);

fn rewind_error(err: RewindError) -> RpcError {
    match err {
        RewindError::Busy => RpcError::running(err.to_string()),
        RewindError::NotFound(_) => RpcError::invalid_params("target", err.to_string()),
        RewindError::NoSession | RewindError::Session(_) => RpcError::internal(err),
    }
}

/// Why a rewind changed nothing: files someone changed since the agent's last change
/// (-32600, the paths in `data.conflicts`).
fn refused(checkpoint: &str, conflicts: Vec<String>) -> RpcError {
    let message = format!(
        "rewind refused: {} file(s) changed since the agent's last change: {}. Nothing was \
         changed; rewind with force to overwrite them.",
        conflicts.len(),
        conflicts.join(", ")
    );
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Refused<'a> {
        checkpoint_id: &'a str,
        conflicts: Vec<String>,
    }
    RpcError::new(codes::INVALID_REQUEST, message).with_data(Refused {
        checkpoint_id: checkpoint,
        conflicts,
    })
}

/// The first standing checkpoint made by a call of `messages` (in order).
fn first_checkpoint_in(messages: &[Message], checkpoints: &[CheckpointSummary]) -> Option<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call.id.as_str()),
            _ => None,
        })
        .find(|id| checkpoints.iter().any(|c| c.id == *id))
        .map(str::to_string)
}

/// The checkpoint `target` names in `checkpoints` (standing, oldest first).
fn checkpoint_of(
    target: RewindTarget,
    messages: &[Message],
    checkpoints: &[CheckpointSummary],
) -> Result<String, RpcError> {
    let none = |path: &str, what: String| RpcError::invalid_params(path, what);
    match target {
        RewindTarget::LatestCheckpoint => {
            checkpoints.last().map(|c| c.id.clone()).ok_or_else(|| {
                none(
                    "target",
                    "the session has no checkpoint to rewind to".into(),
                )
            })
        }
        RewindTarget::Checkpoint { checkpoint_id } => {
            match checkpoints.iter().any(|c| c.id == checkpoint_id) {
                true => Ok(checkpoint_id),
                false => Err(none(
                    "target.checkpointId",
                    format!("unknown checkpoint {checkpoint_id}"),
                )),
            }
        }
        RewindTarget::Turn { turn_index } => {
            let starts: Vec<usize> = (0..messages.len())
                .filter(|&i| messages[i].role == Role::User && !messages[i].synthetic)
                .collect();
            let Some(&start) = starts.get(turn_index) else {
                return Err(none(
                    "target.turnIndex",
                    format!("out of range: the session has {} turns", starts.len()),
                ));
            };
            let end = starts
                .get(turn_index + 1)
                .copied()
                .unwrap_or(messages.len());
            first_checkpoint_in(&messages[start..end], checkpoints).ok_or_else(|| {
                none(
                    "target.turnIndex",
                    format!("turn {turn_index} changed no file"),
                )
            })
        }
        RewindTarget::Message { message_id } => {
            let Some(index) = snapshot::message_index(messages, &message_id) else {
                return Err(none(
                    "target.messageId",
                    format!("unknown message {message_id}"),
                ));
            };
            first_checkpoint_in(&messages[index..], checkpoints).ok_or_else(|| {
                none(
                    "target.messageId",
                    format!("no file changed at or after message {message_id}"),
                )
            })
        }
    }
}

impl Server {
    pub(super) async fn rewind(&self, p: RewindParams) -> Reply {
        let (session, log) = self.active(&p.session_id)?;
        if let Some(active) = session.active_turn() {
            return Err(RpcError::running(format!(
                "prompt is running: cannot rewind session {} during turn {}",
                session.id(),
                active.turn_id
            )));
        }
        let revision = session.view().revision;
        if let Some(expected) = p.expected_revision.filter(|&e| e != revision) {
            return Err(RpcError::invalid_params(
                "expectedRevision",
                format!("the session is at revision {revision}, not {expected}"),
            ));
        }
        let agent = session.agent();
        let checkpoints = agent.checkpoints().await.map_err(rewind_error)?;
        let target = p.target.unwrap_or(RewindTarget::LatestCheckpoint);
        let checkpoint = checkpoint_of(target, &session.messages(), &checkpoints)?;
        if !p.force {
            let plan = agent.rewind_plan(&checkpoint).await.map_err(rewind_error)?;
            let conflicts: Vec<String> = plan.conflicts().map(|f| f.path.clone()).collect();
            if !conflicts.is_empty() {
                return Err(refused(&checkpoint, conflicts));
            }
        }
        let report = agent
            .rewind(&checkpoint, p.force)
            .await
            .map_err(rewind_error)?;
        let payload = RewindTriggeredPayload {
            checkpoint_id: report.checkpoint,
            restored: report.restored,
            deleted: report.deleted,
            skipped: (report.skipped.into_iter())
                .map(|(path, reason)| SkippedFile { path, reason })
                .collect(),
            kept_messages: report.kept_messages,
        };
        let seq = emit(
            &log,
            session.id(),
            None,
            EventBody::RewindTriggered(payload.clone()),
        );
        // The event is pushed (once stored) before the reply, whose snapshot counts it.
        log.wait_shown(seq, EVENT_WAIT).await;
        let response = format!(
            "Rewound to checkpoint {}: {} file(s) restored, {} deleted.",
            payload.checkpoint_id,
            payload.restored.len(),
            payload.deleted.len()
        );
        ok(RewindResult {
            response,
            rewind: payload,
            snapshot: Box::new(self.snapshot(&session, &log, None)),
        })
    }
}
