//! The three output formats: `stream-json` (the protocol), `json` (Zero's snake_case NDJSON
//! ending in `done`) and `text` (the answer on stdout, diagnostics on stderr).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::OutputFormat;
use crate::ids::valid_run_id;
use crate::redact::{go_escape, go_escape_tail, redact_str, redact_value};
use crate::session::cut_utf8;
use crate::wire::{EventBody, OutputEvent, SCHEMA_VERSION};

/// Serialises one stream-json line (without the newline): round-trip through a JSON value,
/// redaction, sorted keys, Go-style escaping.
pub fn format_line(event: &OutputEvent) -> io::Result<String> {
    let mut out = Vec::new();
    let run_id = RunId::new(&event.run_id);
    write_versioned(event.schema_version, &run_id, &event.body, &mut out)?;
    String::from_utf8(out).map_err(io::Error::other)
}

/// The envelope of a line, borrowing the run id and the body.
#[derive(Serialize)]
struct LineRef<'a> {
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(rename = "runId")]
    run_id: &'a str,
    #[serde(flatten)]
    body: &'a EventBody,
}

/// A `text` or `reasoning` line, its fields declared in sorted key order so it serialises
/// directly, without the round trip through a JSON value.
#[derive(Serialize)]
struct DeltaLine<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    delta: &'a str,
    #[serde(rename = "runId")]
    run_id: &'a str,
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Appends one stream-json line for `body` of run `run_id` (without the newline) to `out`:
/// redacted, keys sorted, Go-style escaping — exactly [`format_line`]'s text.
///
/// `text` and `reasoning` lines, nearly every line of a run, take a direct path: their only
/// free-form field is redacted as a string (their key names are fixed and not sensitive)
/// and the struct is serialised straight into `out`. Every other line goes through a JSON
/// value, [`redact_value`] and the same Go-escaping serialiser.
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
    let start = out.len();
    let mut ser = serde_json::Serializer::new(&mut *out);
    match body {
        EventBody::Text(d) | EventBody::Reasoning(d) => {
            let delta = redact_str(&d.delta);
            DeltaLine {
                delta: &delta,
                run_id: &run_id.redacted,
                schema_version,
                kind: body.type_name(),
            }
            .serialize(&mut ser)
        }
        _ => {
            let value = serde_json::to_value(LineRef {
                schema_version,
                run_id: &run_id.raw,
                body,
            })
            .map_err(io::Error::other)?;
            redact_value(value).serialize(&mut ser)
        }
    }
    .map_err(io::Error::other)?;
    go_escape_tail(out, start);
    Ok(())
}

/// The queue buffer kept between flushes; a larger one (after a burst of big lines) is
/// shrunk back so a long run holds no more than this.
const MAX_KEPT_BUFFER: usize = 64 * 1024;

/// Writes a run's events in one output format. The first write error is returned; callers
/// treat it as a crash (exit 1).
pub struct Writer {
    format: OutputFormat,
    run_id: RunId,
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    /// Zero's permission mode name, for the `json` format's `run_start`.
    permission_mode: String,
    streamed: String,
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
            streamed: String::new(),
            pending: Vec::new(),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id.raw
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

    fn json_line(&mut self, value: Value) -> io::Result<()> {
        let line = serde_json::to_string(&redact_value(value)).map_err(io::Error::other)?;
        self.stdout_line(&go_escape(&line))
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
                let start = self.pending.len();
                let result = write_versioned(SCHEMA_VERSION, &self.run_id, body, &mut self.pending);
                match result {
                    Ok(()) => {
                        self.pending.push(b'\n');
                        Ok(())
                    }
                    Err(err) => {
                        self.pending.truncate(start);
                        Err(err)
                    }
                }
            }
            OutputFormat::Json => self.write_json(body),
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

    /// The line as first specified: a JSON value, redacted, serialised, Go-escaped.
    fn reference_line(event: &OutputEvent) -> String {
        let value = serde_json::to_value(event).expect("value");
        go_escape(&serde_json::to_string(&redact_value(value)).expect("json"))
    }

    #[test]
    fn direct_lines_equal_the_value_round_trip() {
        use crate::wire::{Delta, FinalEvent, ToolCallEvent};
        let awkward = [
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
        ];
        for text in awkward {
            for body in [
                EventBody::Text(Delta { delta: text.into() }),
                EventBody::Reasoning(Delta { delta: text.into() }),
                EventBody::Final(FinalEvent {
                    text: text.into(),
                    meta: None,
                }),
                EventBody::ToolCall(ToolCallEvent {
                    id: "c1".into(),
                    name: "bash".into(),
                    args: Some(
                        serde_json::json!({"command": text, "api_key": "x", "b": 1, "a": [text]}),
                    ),
                    side_effect: "execute".into(),
                }),
            ] {
                let event = OutputEvent::new("run_20260101000000_abcdef", body);
                assert_eq!(
                    format_line(&event).expect("valid"),
                    reference_line(&event),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn queued_lines_reach_stdout_on_flush_in_one_write() {
        #[derive(Clone, Default)]
        struct Writes(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);
        impl Write for Writes {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.lock().expect("lock").push(buf.to_vec());
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let out = Writes::default();
        let mut w = Writer::new(
            OutputFormat::StreamJson,
            "run_20260101000000_abcdef",
            Box::new(out.clone()),
            Box::new(io::sink()),
            "auto",
        );
        for delta in ["a", "b", "c"] {
            w.queue(&EventBody::Text(crate::wire::Delta {
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
            .queue(&EventBody::Text(crate::wire::Delta { delta: "x".into() }))
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
}
