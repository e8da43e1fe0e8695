//! The three output formats: `stream-json` (the protocol), `json` (Zero's snake_case NDJSON
//! ending in `done`) and `text` (the answer on stdout, diagnostics on stderr).
//!
//! A [`Renderer`] turns output events into lines: the typed structs of [`crate::wire`] and
//! [`crate::wire::json`], serialised with their keys sorted and their fields redacted, then
//! Go-escaped ([`agent_host::text::escape_json_tail`] with [`JsonEscapes::Go`]) so the bytes
//! equal Zero's. The lines go into agent-host [`Frames`]; [`agent_host::stdout::Stdout`] hands them to
//! agent-host's batching line writer. The text format is not lines: it writes the answer to
//! stdout as it streams.

use std::io::{self, Write};

pub use agent_host::output::Frames;
use agent_host::text::{cut_utf8, escape_json_tail, JsonEscapes};
use serde::Serialize;

use crate::cli::OutputFormat;
use crate::ids::valid_run_id;
use crate::redact::{redact_str, Redacted};
use crate::wire::json::JsonLine;
use crate::wire::{EventBody, Line, OutputEvent, SCHEMA_VERSION};

/// Serialises one stream-json line (without the newline): keys sorted, fields redacted,
/// Go-style escaping.
pub fn format_line(event: &OutputEvent) -> io::Result<String> {
    let mut out = Vec::new();
    let run_id = RunId::new(&event.run_id);
    let line = run_id.line(event.schema_version, &event.body)?;
    append_json(&line, &mut out)?;
    String::from_utf8(out).map_err(io::Error::other)
}

/// Appends one stream-json line for `body` of run `run_id` (without the newline) to `out`:
/// exactly [`format_line`]'s text.
pub fn write_line(run_id: &str, body: &EventBody, out: &mut Vec<u8>) -> io::Result<()> {
    let run_id = RunId::new(run_id);
    append_json(&run_id.line(SCHEMA_VERSION, body)?, out)
}

/// A run id with its validity and redacted form worked out once (a run writes thousands of
/// lines with the same id; the redacted form is for the delta fast path).
#[derive(Debug)]
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

    /// A line of this run; Zero refuses to write one for an invalid run id.
    fn line<'a>(&'a self, schema_version: u32, body: &'a EventBody) -> io::Result<Line<'a>> {
        if !self.valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "runId is required",
            ));
        }
        Ok(Line {
            run_id: &self.raw,
            schema_version,
            body,
        })
    }
}

/// Appends `line` redacted, with its keys sorted ([`Redacted`], the one place that happens),
/// serialised and Go-escaped to `out`; on error `out` is left as it was.
fn append_json<T: Serialize + ?Sized>(line: &T, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    // Straight into `out` (no second pass through serde_json as a raw value); on error the
    // writer has already cut `out` back to `start`.
    Redacted(line).write_json(out).map_err(io::Error::other)?;
    escape_json_tail(out, start, JsonEscapes::Go);
    Ok(())
}

/// Appends `line` serialised as it is and Go-escaped to `out`; on error `out` is left as it
/// was. Only for lines already redacted and in key order (the delta fast path).
fn append_raw<T: Serialize + ?Sized>(line: &T, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    if let Err(err) = serde_json::to_writer(&mut *out, line) {
        out.truncate(start);
        return Err(io::Error::other(err));
    }
    escape_json_tail(out, start, JsonEscapes::Go);
    Ok(())
}

/// Pushes `line` onto `frames` as one JSON line (Go-escaped).
fn push_json<T: Serialize + ?Sized>(frames: &mut Frames, line: &T) -> io::Result<()> {
    frames.push_with(|buf| append_json(line, buf))
}

/// A whole `text` or `reasoning` line, the fast path for nearly every line of a run: its
/// fields (envelope included) are declared in sorted order and its strings are redacted when
/// it is built, so it is written as it is, without [`Redacted`]'s JSON value. The test
/// `deltas_rendered_from_the_agent_event_equal_the_event_lines` holds it to the event path.
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

/// The `-o json` form of [`DeltaLine`]: `delta` (always present) and `type`, in key order,
/// redacted when built.
#[derive(Serialize)]
struct JsonDeltaLine<'a> {
    delta: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Which delta a [`Renderer::render_delta`] line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaKind {
    /// Answer text (`text`).
    Text,
    /// Reasoning (`reasoning`).
    Reasoning,
}

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

fn compact_status(value: &str) -> String {
    let compact = value.split_whitespace().collect::<Vec<_>>().join(" ");
    if compact.len() > 200 {
        return format!("{}...", cut_utf8(&compact, 200));
    }
    compact
}

/// Renders a run's events in one output format: `stream-json` and `json` as lines pushed
/// onto [`Frames`], `text` straight to stdout (and diagnostics to stderr). An error is a
/// crash (exit 1): stdout failed, or the run id is invalid.
pub struct Renderer {
    format: OutputFormat,
    run_id: RunId,
    /// Zero's permission mode name, for the `json` format's `run_start`.
    permission_mode: String,
    /// Where the text format writes (the line formats do not use it).
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    text: TextState,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("format", &self.format)
            .field("run_id", &self.run_id.raw)
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer for run `run_id`. `stdout` is where the text format writes; under the
    /// line formats the lines go onto the [`Frames`] given to each call instead.
    pub fn new(
        format: OutputFormat,
        run_id: impl Into<String>,
        stdout: Box<dyn Write + Send>,
        stderr: Box<dyn Write + Send>,
    ) -> Self {
        Self {
            format,
            run_id: RunId::new(&run_id.into()),
            permission_mode: String::new(),
            stdout,
            stderr,
            text: TextState::default(),
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

    /// Whether the format writes lines (`stream-json`, `json`) rather than text.
    pub fn writes_lines(&self) -> bool {
        self.format != OutputFormat::Text
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

    /// Renders one event.
    pub fn render(&mut self, body: &EventBody, frames: &mut Frames) -> io::Result<()> {
        match self.format {
            OutputFormat::StreamJson => {
                let line = self.run_id.line(SCHEMA_VERSION, body)?;
                push_json(frames, &line)
            }
            OutputFormat::Json => {
                push_json(frames, &JsonLine::from_event(body, &self.permission_mode))
            }
            OutputFormat::Text => self.write_text(body),
        }
    }

    /// Renders a non-empty text or reasoning delta straight from the agent's event: the
    /// line [`Renderer::render`] gives for the same delta, without building the event.
    pub fn render_delta(
        &mut self,
        kind: DeltaKind,
        delta: &str,
        frames: &mut Frames,
    ) -> io::Result<()> {
        let name = match kind {
            DeltaKind::Text => "text",
            DeltaKind::Reasoning => "reasoning",
        };
        match self.format {
            OutputFormat::StreamJson => {
                // Nearly every line of a run: its keys are already in order, no merge needed.
                if !self.run_id.valid {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "runId is required",
                    ));
                }
                let line = DeltaLine {
                    delta: &redact_str(delta),
                    run_id: &self.run_id.redacted,
                    schema_version: SCHEMA_VERSION,
                    kind: name,
                };
                frames.push_with(|buf| append_raw(&line, buf))
            }
            OutputFormat::Json => {
                let line = JsonDeltaLine {
                    delta: &redact_str(delta),
                    kind: name,
                };
                frames.push_with(|buf| append_raw(&line, buf))
            }
            OutputFormat::Text if kind == DeltaKind::Text => self.write_answer_text(delta),
            OutputFormat::Text => Ok(()),
        }
    }

    /// Renders one `-o json` line that is not an event (`--list-tools`).
    pub fn render_json(&mut self, line: &JsonLine<'_>, frames: &mut Frames) -> io::Result<()> {
        push_json(frames, line)
    }

    /// Writes a raw line to stdout: onto `frames` under the line formats, at once under
    /// `text`.
    pub fn stdout_line(&mut self, line: &str, frames: &mut Frames) -> io::Result<()> {
        if self.writes_lines() {
            frames.push_line(line.as_bytes());
            return Ok(());
        }
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

    /// A text delta under `text`: on a new line when it starts a new assistant message.
    fn write_answer_text(&mut self, delta: &str) -> io::Result<()> {
        if delta.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.text.new_message)
            && self.text.streamed
            && !self.text.at_line_start
        {
            self.write_answer("\n")?;
        }
        self.write_answer(delta)?;
        self.stdout.flush()
    }

    fn write_text(&mut self, body: &EventBody) -> io::Result<()> {
        match body {
            EventBody::Text(d) => self.write_answer_text(&d.delta),
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
                block: Some(Box::new(WireBlock {
                    action: text.into(),
                    code: text.into(),
                    path: text.into(),
                    reason: text.into(),
                    recoverable: true,
                    risk: risk(text),
                    tool_name: text.into(),
                })),
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

    /// An object's keys in the order they are written (whatever serde_json's map type).
    struct TopKeys(Vec<String>);

    impl<'de> serde::Deserialize<'de> for TopKeys {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Keys;
            impl<'de> serde::de::Visitor<'de> for Keys {
                type Value = TopKeys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<TopKeys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((key, serde::de::IgnoredAny)) = map.next_entry()? {
                        keys.push(key);
                    }
                    Ok(TopKeys(keys))
                }
            }
            deserializer.deserialize_map(Keys)
        }
    }

    /// A line reaches the redacting writer with its top-level keys already in byte order,
    /// so the writer has nothing to sort: the envelope is merged into the body's fields, and
    /// every body declares its fields in that order.
    #[test]
    fn lines_come_to_the_writer_in_key_order() {
        for body in every_body("plain") {
            let line = RunId::new("run_20260101000000_abcdef")
                .line(SCHEMA_VERSION, &body)
                .map(|line| serde_json::to_string(&line).expect("json"))
                .expect("valid");
            let TopKeys(keys) = serde_json::from_str(&line).expect("object");
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
            for key in ["runId", "schemaVersion", "type"] {
                assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
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

    fn renderer(format: OutputFormat, run_id: &str) -> (Renderer, Writes) {
        let out = Writes::default();
        let r = Renderer::new(format, run_id, Box::new(out.clone()), Box::new(io::sink()));
        (r, out)
    }

    #[test]
    fn lines_go_onto_the_frames_and_a_bad_run_id_adds_none() {
        let (mut r, out) = renderer(OutputFormat::StreamJson, "run_20260101000000_abcdef");
        let mut frames = Frames::new();
        for delta in ["a", "b", "c"] {
            r.render(
                &EventBody::Text(Delta {
                    delta: delta.into(),
                }),
                &mut frames,
            )
            .expect("render");
        }
        assert!(out.text().is_empty(), "line formats do not write stdout");
        assert_eq!(frames.lines(), 3);
        let text = String::from_utf8(frames.bytes().to_vec()).expect("utf8");
        assert!(text.ends_with("\"type\":\"text\"}\n"), "{text}");
        let (mut bad, _) = renderer(OutputFormat::StreamJson, "bad id");
        let mut frames = Frames::new();
        let delta = EventBody::Text(Delta { delta: "x".into() });
        assert!(bad.render(&delta, &mut frames).is_err());
        assert!(bad.render_delta(DeltaKind::Text, "x", &mut frames).is_err());
        assert!(frames.is_empty());
    }

    /// The borrowed path for deltas gives exactly the line of the event path, in every format.
    #[test]
    fn deltas_rendered_from_the_agent_event_equal_the_event_lines() {
        for format in [
            OutputFormat::StreamJson,
            OutputFormat::Json,
            OutputFormat::Text,
        ] {
            for text in AWKWARD.iter().filter(|t| !t.is_empty()) {
                for kind in [DeltaKind::Text, DeltaKind::Reasoning] {
                    let body = match kind {
                        DeltaKind::Text => EventBody::Text(Delta {
                            delta: text.to_string(),
                        }),
                        DeltaKind::Reasoning => EventBody::Reasoning(Delta {
                            delta: text.to_string(),
                        }),
                    };
                    let (mut a, out_a) = renderer(format, "run_20260101000000_abcdef");
                    let (mut b, out_b) = renderer(format, "run_20260101000000_abcdef");
                    let (mut fa, mut fb) = (Frames::new(), Frames::new());
                    a.render(&body, &mut fa).expect("event path");
                    b.render_delta(kind, text, &mut fb).expect("delta path");
                    assert_eq!(fa.bytes(), fb.bytes(), "{format:?} {text:?}");
                    assert_eq!(out_a.text(), out_b.text(), "{format:?} {text:?}");
                }
            }
        }
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
        let mut frames = Frames::new();
        let (mut w, out) = renderer(OutputFormat::Text, "run_x");
        w.end_message(); // a model call with no text before the first
        for body in [text("I'll look at "), text("the workspace.")] {
            w.render(&body, &mut frames).expect("write");
        }
        w.end_message();
        w.end_message(); // a call with tools only
        for body in [
            text("This is the workspace."),
            final_line("This is the workspace."),
        ] {
            w.render(&body, &mut frames).expect("write");
        }
        assert_eq!(
            out.text(),
            "I'll look at the workspace.\nThis is the workspace.\n"
        );

        // A message that already ends its line gets no second newline.
        let (mut w, out) = renderer(OutputFormat::Text, "run_x");
        w.render(&text("Line one.\n"), &mut frames).expect("write");
        w.end_message();
        w.render_delta(DeltaKind::Text, "Two.", &mut frames)
            .expect("write");
        w.render(&final_line("Two."), &mut frames).expect("write");
        assert_eq!(out.text(), "Line one.\nTwo.\n");

        // Nothing streamed: the final answer is printed, once.
        let (mut w, out) = renderer(OutputFormat::Text, "run_x");
        w.end_message();
        w.render(&final_line("Only final."), &mut frames)
            .expect("write");
        assert_eq!(out.text(), "Only final.\n");
        assert!(frames.is_empty(), "the text format writes no lines");
    }
}
