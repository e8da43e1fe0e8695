//! The three output formats: `stream-json` (the protocol), `json` (Zero's snake_case NDJSON
//! ending in `done`) and `text` (the answer on stdout, diagnostics on stderr).
//!
//! Lines are the typed structs of [`crate::wire`] and [`crate::wire::json`], serialised with
//! their keys sorted and their fields redacted, then Go-escaped
//! ([`agent_host::text::escape_json_tail`] with [`JsonEscapes::Go`]) so the
//! bytes equal Zero's.

use std::io::{self, Write};

use serde::Serialize;

use crate::cli::OutputFormat;
use crate::ids::valid_run_id;
use agent_host::text::{cut_utf8, escape_json_tail, JsonEscapes};

use crate::redact::redact_str;
use crate::wire::json::JsonLine;
use crate::wire::{EventBody, OutputEvent, SCHEMA_VERSION};

/// Serialises one stream-json line (without the newline): keys sorted, fields redacted,
/// Go-style escaping.
pub fn format_line(event: &OutputEvent) -> io::Result<String> {
    let mut out = Vec::new();
    let run_id = RunId::new(&event.run_id);
    write_versioned(event.schema_version, &run_id, &event.body, &mut out)?;
    String::from_utf8(out).map_err(io::Error::other)
}

/// Appends one stream-json line for `body` of run `run_id` (without the newline) to `out`:
/// exactly [`format_line`]'s text.
pub fn write_line(run_id: &str, body: &EventBody, out: &mut Vec<u8>) -> io::Result<()> {
    write_versioned(SCHEMA_VERSION, &RunId::new(run_id), body, out)
}

/// A run id with its validity and redacted form worked out once (a writer writes thousands
/// of lines with the same id).
struct RunId {
    raw: String,
    valid: bool,
    redacted: String,
}

impl RunId {
    fn new(raw: &str) -> Self {
        Self {
            raw: raw.to_string(),
            valid: valid_run_id(raw),
            redacted: redact_str(raw).into_owned(),
        }
    }
}

/// Appends `line` serialised and Go-escaped to `out`; on error `out` is left as it was.
fn append_json<T: Serialize + ?Sized>(line: &T, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    if let Err(err) = serde_json::to_writer(&mut *out, line) {
        out.truncate(start);
        return Err(io::Error::other(err));
    }
    escape_json_tail(out, start, JsonEscapes::Go);
    Ok(())
}

fn write_versioned(
    schema_version: u32,
    run_id: &RunId,
    body: &EventBody,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    if !run_id.valid {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "runId is required",
        ));
    }
    append_json(&body.with_envelope(&run_id.redacted, schema_version), out)
}

/// The queue buffer kept between flushes; a larger one (after a burst of big lines) is
/// shrunk back so a long run holds no more than this.
const MAX_KEPT_BUFFER: usize = 64 * 1024;

/// What the text format has written to stdout so far.
#[derive(Debug, Default)]
struct TextState {
    /// Some answer text was written.
    streamed: bool,
    /// The last byte written was a newline.
    at_line_start: bool,
    /// A model call ended since the last text: the next text starts a new message.
    new_message: bool,
}

/// Writes a run's events in one output format. The first write error is returned; callers
/// treat it as a crash (exit 1).
pub struct Writer {
    format: OutputFormat,
    run_id: RunId,
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    /// Zero's permission mode name, for the `json` format's `run_start`.
    permission_mode: String,
    text: TextState,
    /// stream-json lines queued by [`Writer::queue`], not yet written to stdout.
    pending: Vec<u8>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Every path flushes before it ends; this only guards against a forgotten flush.
        let _ = self.flush();
    }
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
            run_id: RunId::new(&run_id.into()),
            stdout,
            stderr,
            permission_mode: permission_mode.into(),
            text: TextState::default(),
            pending: Vec::new(),
        }
    }

    /// The output format.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id.raw
    }

    /// Sets Zero's permission mode name, reported by the `json` format's `run_start`.
    pub fn set_permission_mode(&mut self, mode: impl Into<String>) {
        self.permission_mode = mode.into();
    }

    /// A model call ended: under `text`, answer text that follows belongs to a new assistant
    /// message and starts on a new line.
    pub fn end_message(&mut self) {
        self.text.new_message = true;
    }

    /// Writes a raw line to stdout (after any queued lines).
    pub fn stdout_line(&mut self, line: &str) -> io::Result<()> {
        self.write_pending()?;
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

    /// Writes one `-o json` line (keys sorted, redacted, Go-escaped) and flushes it.
    pub fn write_json_line(&mut self, line: &JsonLine<'_>) -> io::Result<()> {
        let mut out = Vec::new();
        append_json(line, &mut out)?;
        out.push(b'\n');
        self.write_pending()?;
        self.stdout.write_all(&out)?;
        self.stdout.flush()
    }

    /// Writes one event and flushes it (with any queued before it) to stdout.
    pub fn write(&mut self, body: &EventBody) -> io::Result<()> {
        self.queue(body)?;
        self.flush()
    }

    /// Queues one event: under `stream-json` its line is kept in memory until
    /// [`Writer::flush`] (or the next [`Writer::write`]), so a burst of events costs one
    /// write to stdout; the other formats write at once. A caller queues every event that is
    /// ready and flushes when none is, so no line waits for a later event.
    pub fn queue(&mut self, body: &EventBody) -> io::Result<()> {
        match self.format {
            OutputFormat::StreamJson => {
                write_versioned(SCHEMA_VERSION, &self.run_id, body, &mut self.pending)?;
                self.pending.push(b'\n');
                Ok(())
            }
            OutputFormat::Json => {
                let line = JsonLine::from_event(body, &self.permission_mode);
                let mut out = Vec::new();
                append_json(&line, &mut out)?;
                out.push(b'\n');
                self.write_pending()?;
                self.stdout.write_all(&out)?;
                self.stdout.flush()
            }
            OutputFormat::Text => self.write_text(body),
        }
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.pending.len()
    }

    /// Writes the queued lines to stdout in one write, and flushes stdout.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_pending()?;
        self.stdout.flush()
    }

    fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let result = self.stdout.write_all(&self.pending);
        self.pending.clear();
        if self.pending.capacity() > MAX_KEPT_BUFFER {
            self.pending.shrink_to(MAX_KEPT_BUFFER);
        }
        result
    }

    /// Answer text on stdout, as it streams.
    fn write_answer(&mut self, text: &str) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.stdout.write_all(text.as_bytes())?;
        self.text.streamed = true;
        self.text.at_line_start = text.ends_with('\n');
        Ok(())
    }

    fn write_text(&mut self, body: &EventBody) -> io::Result<()> {
        match body {
            EventBody::Text(d) => {
                if std::mem::take(&mut self.text.new_message)
                    && self.text.streamed
                    && !self.text.at_line_start
                {
                    self.write_answer("\n")?;
                }
                self.write_answer(&d.delta)?;
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
                if !self.text.streamed {
                    self.write_answer(&f.text)?;
                }
                if self.text.streamed && !self.text.at_line_start {
                    self.write_answer("\n")?;
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
    use crate::redact::redact_value;
    use crate::wire::{
        CheckpointEvent, CheckpointInfo, Delta, Display, ErrorEvent, FinalEvent, PermissionEvent,
        RunEnd, RunStart, ToolCallEvent, ToolResultEvent, UsageEvent, WarningEvent, WireBlock,
        WireRisk,
    };
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    /// A line as first specified: a JSON value, redacted, serialised, Go-escaped.
    fn reference<T: Serialize>(line: &T) -> String {
        let value = serde_json::to_value(line).expect("value");
        let mut out = serde_json::to_vec(&redact_value(value)).expect("json");
        escape_json_tail(&mut out, 0, JsonEscapes::Go);
        String::from_utf8(out).expect("utf-8")
    }

    fn risk(text: &str) -> WireRisk {
        WireRisk {
            categories: vec![text.into(), "network".into()],
            level: text.into(),
            reason: text.into(),
        }
    }

    fn permission(text: &str) -> Box<PermissionEvent> {
        Box::new(PermissionEvent {
            action: text.into(),
            autonomy: text.into(),
            block: Some(WireBlock {
                action: text.into(),
                code: text.into(),
                path: text.into(),
                reason: text.into(),
                recoverable: true,
                risk: risk(text),
                tool_name: text.into(),
            }),
            decision_reason: text.into(),
            grant: Some(json!({"toolName": text, "token": "t0ken-value", "scope": [text]})),
            grant_matched: true,
            id: text.into(),
            name: text.into(),
            permission: text.into(),
            permission_granted: true,
            permission_mode: text.into(),
            reason: text.into(),
            risk: risk(text),
            session_id: text.into(),
            side_effect: text.into(),
        })
    }

    /// Every event, every field filled (strings with `text`).
    fn every_body(text: &str) -> Vec<EventBody> {
        vec![
            EventBody::RunStart(RunStart {
                api_model: text.into(),
                cwd: text.into(),
                model: text.into(),
                provider: text.into(),
                session_id: text.into(),
            }),
            EventBody::Reasoning(Delta { delta: text.into() }),
            EventBody::Text(Delta { delta: text.into() }),
            EventBody::ToolCall(ToolCallEvent {
                args: Some(json!({
                    "command": text, "api_key": "x", "b": 1, "a": [text],
                    "nested": {"accessToken": {"deep": text}, "promptTokens": 3}
                })),
                id: text.into(),
                name: text.into(),
                side_effect: text.into(),
            }),
            EventBody::ToolCall(ToolCallEvent {
                args: Some(serde_json::Value::String(text.into())),
                ..ToolCallEvent::default()
            }),
            EventBody::Checkpoint(CheckpointEvent {
                checkpoint: CheckpointInfo {
                    files: vec![text.into(), text.into()],
                    sequence: 7,
                    tool: text.into(),
                },
            }),
            EventBody::PermissionRequest(permission(text)),
            EventBody::PermissionDecision(permission(text)),
            EventBody::Permission(permission(text)),
            EventBody::ToolResult(ToolResultEvent {
                changed_files: vec![text.into()],
                display: Some(Display {
                    kind: text.into(),
                    summary: text.into(),
                }),
                id: text.into(),
                meta: [
                    ("sandbox_backend".to_string(), text.to_string()),
                    ("api_key".to_string(), "value".to_string()),
                ]
                .into(),
                name: text.into(),
                output: text.into(),
                redacted: Some(true),
                status: text.into(),
                truncated: true,
            }),
            EventBody::Usage(UsageEvent {
                completion_tokens: 1,
                prompt_tokens: 2,
                total_tokens: 3,
            }),
            EventBody::Final(FinalEvent {
                meta: Some(json!({"status": text, "password": 1, "z": [text]})),
                text: text.into(),
            }),
            EventBody::Warning(WarningEvent {
                message: text.into(),
            }),
            EventBody::Error(ErrorEvent {
                code: text.into(),
                message: text.into(),
                recoverable: true,
            }),
            EventBody::RunEnd(RunEnd {
                exit_code: 130,
                status: text.into(),
            }),
        ]
    }

    const AWKWARD: [&str; 11] = [
        "",
        "plain",
        "a <b> & c",
        "line\u{2028}sep\u{2029}end",
        "quote \" back \\ tab \t nl \n ctl \u{1}",
        "key sk-abcdefghijklmnopqrstuv here",
        "Authorization: Bearer abcdefghijklmnopqrstuvwx",
        "API_KEY=abcdefghijklmnop123",
        "the api is fine, bearer of news",
        "ünïcödé 😀 \u{2027}\u{202a}",
        "Zebra and aardvark",
    ];

    #[test]
    fn every_line_has_sorted_keys_redaction_and_go_escapes() {
        for text in AWKWARD {
            for body in every_body(text) {
                let event = OutputEvent::new("run_20260101000000_abcdef", body);
                assert_eq!(
                    format_line(&event).expect("valid"),
                    reference(&event),
                    "{text:?}"
                );
                let json = JsonLine::from_event(&event.body, text);
                let mut line = Vec::new();
                append_json(&json, &mut line).expect("serialise");
                assert_eq!(
                    String::from_utf8(line).expect("utf-8"),
                    reference(&json),
                    "{text:?}"
                );
            }
        }
    }

    /// Every string field of every line is redacted: a secret in each one leaves no trace.
    #[test]
    fn no_field_escapes_redaction() {
        let secret = "sk-abcdefghijklmnopqrstuv0123456789";
        for body in every_body(secret) {
            let line = format_line(&OutputEvent::new("run_x", body.clone())).expect("valid");
            assert!(!line.contains("abcdefghijklmnop"), "{line}");
            assert!(!line.contains("t0ken-value"), "{line}");
            let json = JsonLine::from_event(&body, secret);
            let mut out = Vec::new();
            append_json(&json, &mut out).expect("serialise");
            let line = String::from_utf8(out).expect("utf-8");
            assert!(!line.contains("abcdefghijklmnop"), "{line}");
        }
    }

    #[derive(Clone, Default)]
    struct Writes(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Writes {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("lock").concat()).expect("utf-8")
        }
    }

    #[test]
    fn queued_lines_reach_stdout_on_flush_in_one_write() {
        let out = Writes::default();
        let mut w = Writer::new(
            OutputFormat::StreamJson,
            "run_20260101000000_abcdef",
            Box::new(out.clone()),
            Box::new(io::sink()),
            "auto",
        );
        for delta in ["a", "b", "c"] {
            w.queue(&EventBody::Text(Delta {
                delta: delta.into(),
            }))
            .expect("queue");
        }
        assert!(
            out.0.lock().expect("lock").is_empty(),
            "nothing before flush"
        );
        w.flush().expect("flush");
        let writes = out.0.lock().expect("lock").clone();
        assert_eq!(writes.len(), 1, "one write for the burst");
        let text = String::from_utf8(writes[0].clone()).expect("utf8");
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("\"type\":\"text\"}\n"), "{text}");
        // A bad run id is an error and leaves nothing half-queued.
        let mut bad = Writer::new(
            OutputFormat::StreamJson,
            "bad id",
            Box::new(out.clone()),
            Box::new(io::sink()),
            "auto",
        );
        assert!(bad
            .queue(&EventBody::Text(Delta { delta: "x".into() }))
            .is_err());
        assert_eq!(bad.queued_bytes(), 0);
    }

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

    fn text_writer() -> (Writer, Writes) {
        let out = Writes::default();
        let w = Writer::new(
            OutputFormat::Text,
            "run_x",
            Box::new(out.clone()),
            Box::new(io::sink()),
            "auto",
        );
        (w, out)
    }

    fn text(delta: &str) -> EventBody {
        EventBody::Text(Delta {
            delta: delta.into(),
        })
    }

    fn final_line(answer: &str) -> EventBody {
        EventBody::Final(FinalEvent {
            meta: None,
            text: answer.into(),
        })
    }

    /// Text of two assistant messages is separated by a newline; one message's deltas are not.
    #[test]
    fn text_of_separate_messages_starts_on_a_new_line() {
        let (mut w, out) = text_writer();
        w.end_message(); // a model call with no text before the first
        for body in [text("I'll look at "), text("the workspace.")] {
            w.write(&body).expect("write");
        }
        w.end_message();
        w.end_message(); // a call with tools only
        for body in [
            text("This is the workspace."),
            final_line("This is the workspace."),
        ] {
            w.write(&body).expect("write");
        }
        assert_eq!(
            out.text(),
            "I'll look at the workspace.\nThis is the workspace.\n"
        );

        // A message that already ends its line gets no second newline.
        let (mut w, out) = text_writer();
        w.write(&text("Line one.\n")).expect("write");
        w.end_message();
        w.write(&text("Two.")).expect("write");
        w.write(&final_line("Two.")).expect("write");
        assert_eq!(out.text(), "Line one.\nTwo.\n");

        // Nothing streamed: the final answer is printed, once.
        let (mut w, out) = text_writer();
        w.end_message();
        w.write(&final_line("Only final.")).expect("write");
        assert_eq!(out.text(), "Only final.\n");
    }
}
