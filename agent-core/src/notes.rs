//! Pinned notes: text that survives compaction verbatim.
//!
//! The host pins notes with [`crate::Agent::pin_note`]; the model pins them with the
//! `note` tool ([`note_tool`], added by [`crate::AgentBuilder::note_tool`]). Every compacted
//! transcript carries all pinned notes, word for word, after the summary (under
//! [`PINNED_NOTES_HEADING`]). Notes are recorded to the session as
//! [`crate::session::SessionRecord::Notes`] and restored on resume; [`crate::Agent::clear`] drops
//! them with the transcript.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::emit::Emitter;
use crate::inner::Inner;
use crate::message::ToolCall;
use crate::permission::SideEffect;
use crate::session::SessionRecord;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// Heading of the pinned-notes section of a compacted transcript's summary message.
pub const PINNED_NOTES_HEADING: &str = "## Pinned notes";

/// Name of the note tool.
pub const NOTE_TOOL: &str = "note";

const NOTE_DESCRIPTION: &str = "Pins a note that is kept word for word when the conversation \
is compacted (summarised to save context). Use it for what must not be lost or paraphrased: \
the user's constraints and preferences, decisions and their reasons, exact names, paths, \
commands or values you will need later. Keep each note short and self-contained.";

/// Arguments of the `note` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// The note, exactly as it should be kept.
    pub text: String,
}

/// The `note` tool: the model pins `{text}`. The tool itself only checks the text; when an
/// agent offers it ([`crate::AgentBuilder::note_tool`]), the loop adds the text of every
/// successful call to the agent's notes. It has no side effect and needs no approval.
pub fn note_tool() -> impl Tool {
    crate::tool_fn::tool_fn(
        NOTE_TOOL,
        NOTE_DESCRIPTION,
        |args: NoteArgs, _ctx: ToolContext| async move {
            if args.text.trim().is_empty() {
                return Err(ToolError::InvalidArguments(
                    "note: text is empty".to_string(),
                ));
            }
            Ok(ToolOutput::text(
                "Pinned. The note will be kept verbatim when the conversation is compacted.",
            ))
        },
    )
    .side_effect(SideEffect::None)
}

/// The pinned-notes section appended to a compaction summary ("" when there are none).
pub(crate) fn section(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut out =
        format!("\n\n{PINNED_NOTES_HEADING}\n\nPinned to survive compaction; reproduced verbatim.");
    for (i, note) in notes.iter().enumerate() {
        out.push_str(&format!("\n\n### Note {}\n\n{note}", i + 1));
    }
    out
}

/// Strips the pinned-notes section from a summary message's text.
pub(crate) fn strip_section(text: &str) -> &str {
    match text.find(&format!("\n\n{PINNED_NOTES_HEADING}\n\n")) {
        Some(at) => &text[..at],
        None => text,
    }
}

/// Pins the text of a successful `note` call and records the new list to the session.
pub(crate) async fn pin_from_call(inner: &Inner, em: &Emitter, call: &ToolCall) {
    let Some(text) = call
        .args
        .get("text")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.trim().is_empty())
    else {
        return;
    };
    let all = {
        let mut state = inner.state();
        state.ctx.notes.push(text.to_string());
        state.ctx.notes.clone()
    };
    crate::emit::record(inner, em, SessionRecord::Notes { notes: all }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_round_trips_through_strip() {
        assert_eq!(section(&[]), "");
        let notes = vec!["use tabs".to_string(), "line one\nline two".to_string()];
        let text = format!("## Summary\n\nstuff{}", section(&notes));
        assert!(text.contains("### Note 2\n\nline one\nline two"));
        assert_eq!(strip_section(&text), "## Summary\n\nstuff");
        assert_eq!(strip_section("plain"), "plain");
    }
}
