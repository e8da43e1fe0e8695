//! `/rewind` on ACP. The protocol has no method for rewinding, so it is a command of the
//! prompt (as Claude Code's `/rewind`): a prompt whose first text block is `/rewind
//! [checkpoint] [--force]` calls no model. It puts every file changed at or after the
//! checkpoint (default the session's last; a checkpoint is named by the id of the call that
//! made it, the `toolCallId` the client saw) back as it was and cuts the transcript back to
//! before that call ([`agent_core::Agent::rewind`]), says what it did as an
//! `agent_message_chunk`, and ends the prompt `end_turn`. A file someone changed since the
//! agent's last change refuses the rewind (nothing changed; the message names the files)
//! unless `--force`. An unknown checkpoint or
//! flag is the prompt's `invalid_params`; a prompt running in the session, `invalid_request`.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock as AcpBlock, ContentChunk, PromptRequest,
    PromptResponse, SessionId, SessionUpdate, StopReason, TextContent, UnstructuredCommandInput,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use agent_core::rewind::RewindError;

use super::sessions::active;
use super::{internal, invalid_params, invalid_request, notify, Shared};

/// The command's name.
const NAME: &str = "/rewind";

/// `/rewind` as `available_commands_update` lists it (after the workspace's commands, in
/// every session: it shadows a workspace command of the same name).
pub(super) fn available() -> AvailableCommand {
    AvailableCommand::new(
        NAME.trim_start_matches('/'),
        "Put the files and the conversation back to a checkpoint (default: the last)",
    )
    .input(AvailableCommandInput::Unstructured(
        UnstructuredCommandInput::new("[checkpoint] [--force]"),
    ))
}

/// What `/rewind` asks for.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    checkpoint: Option<String>,
    force: bool,
}

/// The arguments of a `/rewind` line; `None` when the prompt is no `/rewind`.
fn args(req: &PromptRequest) -> Option<Result<Args, Error>> {
    let Some(AcpBlock::Text(first)) = req.prompt.first() else {
        return None;
    };
    let rest = first.text.trim().strip_prefix(NAME)?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let mut args = Args {
        checkpoint: None,
        force: false,
    };
    for word in rest.split_whitespace() {
        match word {
            "--force" => args.force = true,
            _ if word.starts_with('-') => {
                return Some(Err(invalid_params(format!(
                    "/rewind: unknown flag {word} (usage: /rewind [checkpoint] [--force])"
                ))))
            }
            _ if args.checkpoint.is_none() => args.checkpoint = Some(word.to_string()),
            _ => {
                return Some(Err(invalid_params(
                    "/rewind takes one checkpoint (usage: /rewind [checkpoint] [--force])",
                )))
            }
        }
    }
    Some(Ok(args))
}

fn rewind_error(err: RewindError) -> Error {
    match err {
        RewindError::Busy => invalid_request(format!("prompt is running: {err}")),
        RewindError::NotFound(_) => invalid_params(format!("/rewind: {err}")),
        RewindError::NoSession | RewindError::Session(_) => internal(err),
    }
}

/// Answers `req` when it is a `/rewind` command (`None`: it is not; the prompt goes on).
pub(super) async fn command(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: &PromptRequest,
) -> Option<Result<PromptResponse, Error>> {
    let args = match args(req)? {
        Ok(args) => args,
        Err(err) => return Some(Err(err)),
    };
    Some(run(s, cx, req, args).await)
}

async fn run(
    s: &Shared,
    cx: &ConnectionTo<Client>,
    req: &PromptRequest,
    args: Args,
) -> Result<PromptResponse, Error> {
    let id = req.session_id.0.to_string();
    let session = active(s, &id)?;
    if s.cancels().contains_key(&id) {
        return Err(invalid_request(format!(
            "a prompt is already running in session {id}"
        )));
    }
    let agent = session.agent();
    let checkpoints = agent.checkpoints().await.map_err(rewind_error)?;
    let target = match args.checkpoint {
        Some(checkpoint) => Some(checkpoint),
        None => checkpoints.last().map(|c| c.id.clone()),
    };
    let text = match target {
        None => "Nothing to rewind: no file was changed in this session.".to_string(),
        Some(target) => 'text: {
            if !args.force {
                let plan = agent.rewind_plan(&target).await.map_err(rewind_error)?;
                let conflicts: Vec<&str> = plan.conflicts().map(|f| f.path.as_str()).collect();
                if !conflicts.is_empty() {
                    break 'text format!(
                        "Nothing was changed: {} changed since the agent's last change. \
                         `/rewind {target} --force` overwrites them.",
                        conflicts.join(", ")
                    );
                }
            }
            let report = agent
                .rewind(&target, args.force)
                .await
                .map_err(rewind_error)?;
            let list = |paths: &[String]| match paths.is_empty() {
                true => "none".to_string(),
                false => paths.join(", "),
            };
            let mut text = format!(
                "Rewound to checkpoint {target}: restored {}; deleted {}.",
                list(&report.restored),
                list(&report.deleted)
            );
            for (path, why) in &report.skipped {
                text.push_str(&format!("\nSkipped {path}: {why}."));
            }
            text
        }
    };
    let chunk = ContentChunk::new(AcpBlock::Text(TextContent::new(text)));
    notify(
        s,
        cx,
        &SessionId::new(id.as_str()),
        SessionUpdate::AgentMessageChunk(chunk),
    );
    Ok(PromptResponse::new(StopReason::EndTurn))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(text: &str) -> PromptRequest {
        PromptRequest::new(
            SessionId::new("s"),
            vec![AcpBlock::Text(TextContent::new(text))],
        )
    }

    #[test]
    fn only_a_rewind_line_is_the_command() {
        assert!(args(&prompt("/rewinding")).is_none());
        assert!(args(&prompt("please /rewind")).is_none());
        let parsed = args(&prompt("  /rewind c7 --force ")).map(|r| r.ok());
        assert_eq!(
            parsed,
            Some(Some(Args {
                checkpoint: Some("c7".into()),
                force: true
            }))
        );
        assert!(matches!(args(&prompt("/rewind --all")), Some(Err(_))));
        assert!(matches!(args(&prompt("/rewind a b")), Some(Err(_))));
    }
}
