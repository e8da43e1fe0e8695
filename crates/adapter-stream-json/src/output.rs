//! The three output formats: `stream-json` (the protocol), `json` (Zero's snake_case NDJSON
//! ending in `done`) and `text` (the answer on stdout, diagnostics on stderr).

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::cli::OutputFormat;
use crate::ids::valid_run_id;
use crate::redact::{go_escape, redact_value};
use crate::session::cut_utf8;
use crate::wire::{EventBody, OutputEvent};

/// Serialises one stream-json line (without the newline): round-trip through a JSON value,
/// redaction, sorted keys, Go-style escaping.
pub fn format_line(event: &OutputEvent) -> io::Result<String> {
    if !valid_run_id(&event.run_id) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "runId is required",
        ));
    }
    let value = serde_json::to_value(event).map_err(io::Error::other)?;
    let line = serde_json::to_string(&redact_value(value)).map_err(io::Error::other)?;
    Ok(go_escape(&line))
}

/// Writes a run's events in one output format. The first write error is returned; callers
/// treat it as a crash (exit 1).
pub struct Writer {
    format: OutputFormat,
    run_id: String,
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    /// Zero's permission mode name, for the `json` format's `run_start`.
    permission_mode: String,
    streamed: String,
}

fn compact_status(value: &str) -> String {
    let compact = value.split_whitespace().collect::<Vec<_>>().join(" ");
    if compact.len() > 200 {
        return format!("{}...", cut_utf8(&compact, 200));
    }
    compact
}

impl Writer {
    /// A writer for run `run_id`.
    pub fn new(
        format: OutputFormat,
        run_id: impl Into<String>,
        stdout: Box<dyn Write + Send>,
        stderr: Box<dyn Write + Send>,
        permission_mode: impl Into<String>,
    ) -> Self {
        Self {
            format,
            run_id: run_id.into(),
            stdout,
            stderr,
            permission_mode: permission_mode.into(),
            streamed: String::new(),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Writes a raw line to stdout.
    pub fn stdout_line(&mut self, line: &str) -> io::Result<()> {
        self.stdout.write_all(line.as_bytes())?;
        self.stdout.write_all(b"\n")?;
        self.stdout.flush()
    }

    /// Writes a raw line to stderr.
    pub fn stderr_line(&mut self, line: &str) -> io::Result<()> {
        self.stderr.write_all(line.as_bytes())?;
        self.stderr.write_all(b"\n")?;
        self.stderr.flush()
    }

    fn json_line(&mut self, value: Value) -> io::Result<()> {
        let line = serde_json::to_string(&redact_value(value)).map_err(io::Error::other)?;
        self.stdout_line(&go_escape(&line))
    }

    /// Writes one event.
    pub fn write(&mut self, body: &EventBody) -> io::Result<()> {
        match self.format {
            OutputFormat::StreamJson => {
                let line = format_line(&OutputEvent::new(self.run_id.clone(), body.clone()))?;
                self.stdout_line(&line)
            }
            OutputFormat::Json => self.write_json(body),
            OutputFormat::Text => self.write_text(body),
        }
    }

    fn write_json(&mut self, body: &EventBody) -> io::Result<()> {
        let value = match body {
            EventBody::RunStart(e) => json!({
                "type": "run_start", "cwd": e.cwd, "provider": e.provider, "model": e.model,
                "api_model": e.api_model, "permission_mode": self.permission_mode,
            }),
            EventBody::Reasoning(d) => json!({"type": "reasoning", "delta": d.delta}),
            EventBody::Text(d) => json!({"type": "text", "delta": d.delta}),
            EventBody::ToolCall(c) => {
                let arguments = match &c.args {
                    Some(Value::String(raw)) => raw.clone(),
                    Some(args) => args.to_string(),
                    None => String::new(),
                };
                json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments})
            }
            EventBody::Checkpoint(c) => json!({
                "type": "checkpoint", "sequence": c.checkpoint.sequence,
                "tool": c.checkpoint.tool, "files": c.checkpoint.files,
            }),
            EventBody::PermissionRequest(p)
            | EventBody::PermissionDecision(p)
            | EventBody::Permission(p) => {
                let mut v = json!({
                    "type": "permission", "tool_call_id": p.id, "name": p.name,
                    "action": p.action, "permission": p.permission,
                    "permission_granted": p.permission_granted,
                    "permission_mode": p.permission_mode, "autonomy": p.autonomy,
                    "side_effect": p.side_effect, "reason": p.reason,
                    "decision_reason": p.decision_reason, "risk": p.risk,
                });
                if let Some(block) = &p.block {
                    v["block"] = serde_json::to_value(block).unwrap_or(Value::Null);
                }
                v
            }
            EventBody::ToolResult(r) => {
                let mut v = json!({
                    "type": "tool_result", "tool_call_id": r.id, "name": r.name,
                    "status": r.status, "output": r.output,
                });
                if !r.meta.is_empty() {
                    v["meta"] = json!(r.meta);
                }
                if r.redacted == Some(true) {
                    v["redacted"] = json!(true);
                }
                if !r.changed_files.is_empty() {
                    v["changed_files"] = json!(r.changed_files);
                }
                v
            }
            EventBody::Usage(u) => json!({
                "type": "usage", "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens,
            }),
            EventBody::Final(f) => json!({"type": "final", "text": f.text}),
            EventBody::Warning(w) => json!({"type": "warning", "message": w.message}),
            EventBody::Error(e) => json!({"type": "error", "code": e.code, "message": e.message}),
            EventBody::RunEnd(r) => json!({"type": "done", "exit_code": r.exit_code}),
        };
        self.json_line(value)
    }

    fn write_text(&mut self, body: &EventBody) -> io::Result<()> {
        match body {
            EventBody::Text(d) => {
                self.streamed.push_str(&d.delta);
                self.stdout.write_all(d.delta.as_bytes())?;
                self.stdout.flush()
            }
            EventBody::Warning(w) => self.stderr_line(&format!("[zero] WARNING: {}", w.message)),
            EventBody::ToolCall(c) => self.stderr_line(&format!("[tool] {}", c.name)),
            EventBody::ToolResult(r) => {
                self.stderr_line(&format!("[result] {}", compact_status(&r.output)))
            }
            EventBody::PermissionRequest(p)
            | EventBody::PermissionDecision(p)
            | EventBody::Permission(p) => {
                if p.action == "allow" {
                    return Ok(());
                }
                self.stderr_line(&format!(
                    "[permission] {} {}: {}",
                    p.name, p.action, p.reason
                ))
            }
            EventBody::Final(f) => {
                if self.streamed.is_empty() && !f.text.is_empty() {
                    self.stdout.write_all(f.text.as_bytes())?;
                    self.streamed.push_str(&f.text);
                }
                if !self.streamed.is_empty() && !self.streamed.ends_with('\n') {
                    self.stdout.write_all(b"\n")?;
                }
                self.stdout.flush()
            }
            EventBody::Error(e) => match e.code.as_str() {
                "interrupted" => self.stderr_line("Interrupted."),
                "incomplete" => self.stderr_line(&format!(
                    "Run incomplete (not reported as success): {}",
                    e.message
                )),
                _ => self.stderr_line(&format!("[zero] {}", e.message)),
            },
            EventBody::RunStart(_)
            | EventBody::Reasoning(_)
            | EventBody::Checkpoint(_)
            | EventBody::Usage(_)
            | EventBody::RunEnd(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ErrorEvent, RunEnd, ToolResultEvent};

    #[test]
    fn lines_are_redacted_sorted_and_omit_empty_fields() {
        let event = OutputEvent::new(
            "run_20260101000000_abcdef",
            EventBody::ToolResult(ToolResultEvent {
                id: "c1".into(),
                status: "ok".into(),
                output: "key sk-abcdefghijklmnopqrstuv".into(),
                ..ToolResultEvent::default()
            }),
        );
        assert_eq!(
            format_line(&event).expect("valid"),
            r#"{"id":"c1","output":"key [REDACTED]","runId":"run_20260101000000_abcdef","schemaVersion":2,"status":"ok","truncated":false,"type":"tool_result"}"#
        );
        let event = OutputEvent::new(
            "run_x",
            EventBody::Error(ErrorEvent {
                code: "usage_error".into(),
                message: "m".into(),
                recoverable: false,
            }),
        );
        assert_eq!(
            format_line(&event).expect("valid"),
            r#"{"code":"usage_error","message":"m","recoverable":false,"runId":"run_x","schemaVersion":2,"type":"error"}"#
        );
        let bad = OutputEvent::new(
            "bad id",
            EventBody::RunEnd(RunEnd {
                status: "success".into(),
                exit_code: 0,
            }),
        );
        assert!(format_line(&bad).is_err());
    }
}
