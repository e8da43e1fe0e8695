//! A sub-agent's run as the progress of the parent's call that runs it (a `Task` call, an
//! `Agent::as_tool` tool): ACP has no nested sessions, so the child's work is shown as the
//! content of that call's `tool_call_update`s — a short log (its tool calls, their outcome,
//! its messages) that each update replaces whole, kept to its last [`PROGRESS_MAX`] bytes.
//! The call's own `ToolResult` then ends it `completed` / `failed` with the child's answer.

use agent_core::{event::ToolStatus, AgentEvent, RunStatus};
use agent_mcp::McpManager;

use super::tools::describe;

/// The longest progress text sent (its tail is kept).
pub const PROGRESS_MAX: usize = 8 * 1024;

/// What has been seen of one child run.
#[derive(Debug, Clone, Default)]
pub(super) struct ChildProgress {
    /// `name: description` (and the model).
    header: String,
    /// Finished lines.
    log: String,
    /// The message the child is streaming.
    text: String,
}

impl ChildProgress {
    pub(super) fn new(
        name: &str,
        description: Option<&str>,
        model: &str,
        background: bool,
    ) -> Self {
        let what = description.filter(|d| !d.is_empty());
        let what = what.map(|d| format!(": {d}")).unwrap_or_default();
        let background = if background { ", background" } else { "" };
        Self {
            header: format!("{name}{what} ({model}{background})"),
            ..Self::default()
        }
    }

    /// Takes one of the child's events (the innermost, for a grandchild's); true when the
    /// progress changed enough to be sent. Streamed text is sent with the message it ends.
    pub(super) fn event(&mut self, event: &AgentEvent, mcp: Option<&McpManager>) -> bool {
        match event {
            AgentEvent::TextDelta { delta } => {
                self.text.push_str(delta);
                false
            }
            AgentEvent::AssistantMessage { .. } => self.end_message(),
            AgentEvent::ToolCall { name, args, .. } => {
                self.end_message();
                let (_, title) = describe(name, args, mcp);
                self.line(&format!("→ {title}"));
                true
            }
            AgentEvent::ToolResult {
                name,
                status,
                content,
                ..
            } => {
                let line = match status {
                    ToolStatus::Ok => format!("  ✓ {name}"),
                    _ => {
                        let text = agent_host::text::text_lines_of(content);
                        let first = text.lines().next().unwrap_or_default();
                        format!("  ✗ {name}: {first}")
                    }
                };
                self.line(&line);
                true
            }
            AgentEvent::SubagentStarted {
                name, description, ..
            } => {
                self.end_message();
                let what = description.as_deref().unwrap_or_default();
                self.line(&format!("→ sub-agent {name}: {what}"));
                true
            }
            _ => false,
        }
    }

    /// The child's run ended.
    pub(super) fn finished(
        &mut self,
        status: RunStatus,
        final_text: Option<&str>,
        error: Option<&str>,
    ) {
        self.end_message();
        let line = match status {
            RunStatus::Success => match final_text {
                Some(answer) if !self.log.contains(answer) => format!("✓ done: {answer}"),
                _ => "✓ done".to_string(),
            },
            RunStatus::Aborted => "✗ cancelled".to_string(),
            _ => format!("✗ failed: {}", error.unwrap_or("the sub-agent failed")),
        };
        self.line(&line);
    }

    fn end_message(&mut self) -> bool {
        let text = std::mem::take(&mut self.text);
        let text = text.trim();
        if text.is_empty() {
            return false;
        }
        self.line(text);
        true
    }

    fn line(&mut self, line: &str) {
        self.log.push_str(line);
        self.log.push('\n');
        // Keep the log bounded: only its tail is ever sent.
        if self.log.len() > 2 * PROGRESS_MAX {
            let cut = tail_start(&self.log, PROGRESS_MAX);
            self.log.drain(..cut);
        }
    }

    /// The text sent: the header, then the log's tail.
    pub(super) fn render(&self) -> String {
        let room = PROGRESS_MAX.saturating_sub(self.header.len() + 2);
        let log = &self.log[tail_start(&self.log, room)..];
        let mut out = String::with_capacity(self.header.len() + log.len() + 2);
        out.push_str(&self.header);
        out.push('\n');
        if log.len() < self.log.len() {
            out.push('…');
        }
        out.push_str(log);
        out
    }
}

/// Where the last `max` bytes of `text` start, on a character boundary.
fn tail_start(text: &str, max: usize) -> usize {
    agent_host::text::ceil_char_boundary(text, text.len().saturating_sub(max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{ContentBlock, Message};
    use serde_json::json;

    #[test]
    fn the_log_shows_calls_outcomes_and_messages() {
        let mut p = ChildProgress::new("explorer", Some("find the tests"), "m", false);
        assert!(!p.event(
            &AgentEvent::TextDelta {
                delta: "Looking.".into()
            },
            None
        ));
        assert!(p.event(
            &AgentEvent::AssistantMessage {
                message: Message::assistant_text("Looking.")
            },
            None
        ));
        assert!(p.event(
            &AgentEvent::ToolCall {
                id: "k".into(),
                name: "grep".into(),
                args: json!({"pattern": "fn test"}),
                raw_args: None,
                side_effect: None,
            },
            None
        ));
        assert!(p.event(
            &AgentEvent::ToolResult {
                id: "k".into(),
                name: "write_file".into(),
                status: ToolStatus::Error,
                content: vec![ContentBlock::text("Error: not allowed\nmore")],
                truncated: false,
                redacted: false,
                changed_files: vec![],
                duration_ms: 0,
            },
            None
        ));
        p.finished(RunStatus::Success, Some("Tests are in tests/."), None);
        assert_eq!(
            p.render(),
            "explorer: find the tests (m)\nLooking.\n→ Search \"fn test\"\n  ✗ write_file: \
             Error: not allowed\n✓ done: Tests are in tests/.\n"
        );
    }

    #[test]
    fn the_progress_is_bounded() {
        let mut p = ChildProgress::new("worker", None, "m", true);
        for i in 0..5_000 {
            p.finished(
                RunStatus::Error,
                None,
                Some(&format!("error number {i} ünïcode")),
            );
        }
        let text = p.render();
        assert!(text.len() <= PROGRESS_MAX + 4, "{}", text.len());
        assert!(text.starts_with("worker (m, background)\n…"));
        assert!(text.ends_with("error number 4999 ünïcode\n"));
    }
}
