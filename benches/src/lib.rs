//! Criterion benchmarks of the agent SDK's hot paths (event mapping and serialisation per
//! adapter, SSE decoding per provider, the end-to-end loop, session appends), and the helpers
//! they share: event workloads, recorded and synthetic SSE bodies, byte-counting sinks and a
//! counting allocator for per-event heap figures.
//!
//! The benches live in `benches/benches/*.rs`; `benches/process.sh` measures whole
//! processes. See `benches/README.md` for the figures and how to rerun them.

#![warn(missing_docs)]

pub mod e2e;
pub mod pipelines;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use agent_core::{
    event::{PermissionInfo, RequestScope, RunKind, StopReason, ToolStatus},
    permission::{Permission, PermissionAction, PermissionMode, Risk, RiskCategory, SideEffect},
    AgentEvent, ContentBlock, Message, RunStatus, Usage,
};
use agent_providers::replay::StreamFormat;
use bytes::Bytes;

/// Where the recorded SSE bodies are: `$AGENT_SDK_SSE_FIXTURES`, else `shared/fixtures/sse`
/// beside the repository (`benches/` is at the repository root, so two levels up).
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENT_SDK_SSE_FIXTURES") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/sse")
}

/// Reads one recorded body, e.g. `llama-server-smollm2/smollm2.openai.stream.plain.sse`.
/// `None` (with a note on stderr) when the fixtures are not there.
pub fn fixture(relative: &str) -> Option<Vec<u8>> {
    let path = fixtures_dir().join(relative);
    match std::fs::read(&path) {
        Ok(data) => Some(data),
        Err(err) => {
            eprintln!("skipping {}: {err}", path.display());
            None
        }
    }
}

/// Splits an SSE body into its events (each with its trailing blank line).
pub fn sse_events(body: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    text.split_inclusive("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| e.as_bytes().to_vec())
        .collect()
}

fn is_text_event(format: StreamFormat, event: &[u8]) -> bool {
    let text = String::from_utf8_lossy(event);
    match format {
        StreamFormat::OpenAiChat => {
            text.contains("\"delta\":{\"content\":\"") && !text.contains("finish_reason\":\"")
        }
        StreamFormat::Anthropic => text.contains("\"text_delta\""),
        StreamFormat::OpenAiResponses => text.contains("response.output_text.delta"),
    }
}

/// A synthetic stream of at least `target_bytes`: the recorded stream's head, its text-delta
/// events repeated, and its tail, so the decoder sees a long but valid answer.
pub fn synthetic_stream(format: StreamFormat, recorded: &[u8], target_bytes: usize) -> Vec<u8> {
    let events = sse_events(recorded);
    let first = events.iter().position(|e| is_text_event(format, e));
    let last = events.iter().rposition(|e| is_text_event(format, e));
    let (Some(first), Some(last)) = (first, last) else {
        return recorded.to_vec();
    };
    let mut out: Vec<u8> = events[..first].concat();
    let body = events[first..=last]
        .iter()
        .filter(|e| is_text_event(format, e))
        .cloned()
        .collect::<Vec<_>>()
        .concat();
    while out.len() < target_bytes {
        out.extend_from_slice(&body);
    }
    for event in &events[last + 1..] {
        out.extend_from_slice(event);
    }
    out
}

/// An OpenAI Responses stream (no recorded one exists): created, a message item, `deltas`
/// text deltas, done events and `response.completed` with usage, in the API's shapes.
pub fn responses_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut ev = |name: &str, data: serde_json::Value| {
        let mut data = data;
        data["type"] = serde_json::Value::String(name.to_string());
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    use serde_json::json;
    ev(
        "response.created",
        json!({"sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    );
    ev(
        "response.output_item.added",
        json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "status": "in_progress"}}),
    );
    ev(
        "response.content_part.added",
        json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": ""}}),
    );
    let words = [
        "Hello", ",", " I", "'m", " here", " to", " help", " with", " your", " code", ".",
    ];
    for (i, word) in words.iter().cycle().take(deltas).enumerate() {
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": word, "sequence_number": i + 3, "logprobs": []}),
        );
    }
    ev(
        "response.output_item.done",
        json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "…"}]}}),
    );
    ev(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed",
        "usage": {"input_tokens": 500, "output_tokens": 80, "total_tokens": 580}}}),
    );
    out.into_bytes()
}

/// Cuts a body into chunks of `size` bytes, as socket reads would deliver it.
pub fn chunked(body: &[u8], size: usize) -> Vec<Bytes> {
    body.chunks(size.max(1))
        .map(Bytes::copy_from_slice)
        .collect()
}

/// The events of one plain answer: the run's framing around `n` text deltas of `delta`.
pub fn text_run(n: usize, delta: &str) -> Vec<AgentEvent> {
    let mut events = vec![
        AgentEvent::RunStarted {
            kind: RunKind::Prompt,
        },
        AgentEvent::UserMessage {
            message: Message::user_text("Say something long."),
        },
    ];
    events.extend(turn_head(1));
    events.extend((0..n).map(|_| AgentEvent::TextDelta {
        delta: delta.to_string(),
    }));
    events.push(usage());
    events.push(AgentEvent::AssistantMessage {
        message: Message::assistant_text(delta.repeat(n.min(1000))),
    });
    events.push(AgentEvent::TurnEnded {
        step: 1,
        stop: StopReason::End,
        error: None,
    });
    events.push(AgentEvent::RunFinished {
        status: RunStatus::Success,
        final_text: Some("done".into()),
    });
    events
}

fn turn_head(step: u32) -> [AgentEvent; 3] {
    [
        AgentEvent::TurnStarted { step },
        AgentEvent::RequestStarted {
            scope: RequestScope::Agent,
            provider: "openai".into(),
            model: "gpt-test".into(),
            attempt: 1,
            max_attempts: 3,
        },
        AgentEvent::AssistantStarted,
    ]
}

fn usage() -> AgentEvent {
    let turn = Usage {
        input: 1200,
        output: 80,
        cache_read: 300,
        ..Usage::default()
    };
    AgentEvent::Usage {
        turn,
        cumulative: turn,
    }
}

/// The events of a tool-using run: `turns` model calls, each with 20 text deltas, one
/// streamed `read_file` call, usage, the call's permission request and decision (ask mode,
/// approved) and a 2 KiB result, then a final answer.
pub fn mixed_run(turns: u32) -> Vec<AgentEvent> {
    let mut events = vec![
        AgentEvent::RunStarted {
            kind: RunKind::Prompt,
        },
        AgentEvent::UserMessage {
            message: Message::user_text("Read the files and summarise them."),
        },
    ];
    let output = "fn main() { println!(\"hello\"); }\n".repeat(64);
    for step in 1..=turns {
        let id = format!("call_{step}");
        events.extend(turn_head(step));
        events.extend((0..20).map(|_| AgentEvent::TextDelta {
            delta: " reading".into(),
        }));
        events.push(AgentEvent::ToolUseStarted {
            id: id.clone(),
            name: "read_file".into(),
        });
        for part in ["{\"path\":", "\"src/main", ".rs\"}"] {
            events.push(AgentEvent::ToolUseArgsDelta {
                id: id.clone(),
                delta: part.into(),
            });
        }
        events.push(AgentEvent::ToolUseEnded { id: id.clone() });
        events.push(usage());
        events.push(AgentEvent::AssistantMessage {
            message: Message::assistant_text(" reading".repeat(20)),
        });
        events.push(AgentEvent::ToolCall {
            id: id.clone(),
            name: "read_file".into(),
            args: serde_json::json!({"path": "src/main.rs"}),
            raw_args: None,
            side_effect: Some(SideEffect::Read),
        });
        events.push(AgentEvent::TurnEnded {
            step,
            stop: StopReason::ToolUse,
            error: None,
        });
        let info = Box::new(PermissionInfo {
            id: id.clone(),
            name: "read_file".into(),
            args: serde_json::json!({"path": "src/main.rs"}),
            mode: PermissionMode::Ask,
            permission: Permission::Prompt,
            side_effect: SideEffect::Read,
            reason: Some("ask mode: read_file needs approval".into()),
            risk: Risk::from_categories([RiskCategory::Read]),
            block: None,
            rule: None,
        });
        events.push(AgentEvent::PermissionRequested(info.clone()));
        events.push(AgentEvent::PermissionDecided {
            info,
            action: PermissionAction::Allow,
            granted: true,
            always: false,
        });
        events.push(AgentEvent::ToolExecutionStarted {
            id: id.clone(),
            name: "read_file".into(),
        });
        events.push(AgentEvent::ToolResult {
            id,
            name: "read_file".into(),
            status: ToolStatus::Ok,
            content: vec![ContentBlock::text(output.clone())],
            truncated: false,
            redacted: false,
            changed_files: vec![],
            duration_ms: 1,
        });
    }
    events.push(AgentEvent::RunFinished {
        status: RunStatus::Success,
        final_text: Some("summary".into()),
    });
    events
}

/// A `Write` that discards bytes and counts them (shared, so a boxed clone can be handed to
/// a writer and read afterwards).
#[derive(Debug, Clone, Default)]
pub struct CountingSink(Arc<AtomicU64>);

impl CountingSink {
    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Resets the count.
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl tokio::io::AsyncWrite for CountingSink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The system allocator, counting allocations and live bytes. A bench opts in with
/// `#[global_allocator] static A: CountingAlloc = CountingAlloc::new();`.
#[derive(Debug, Default)]
pub struct CountingAlloc {
    allocs: AtomicUsize,
    live: AtomicUsize,
    peak: AtomicUsize,
}

/// A reading of a [`CountingAlloc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocStats {
    /// Allocations (including reallocations) since the allocator started.
    pub allocs: usize,
    /// Bytes currently allocated.
    pub live: usize,
    /// Highest `live` since the last [`CountingAlloc::reset_peak`].
    pub peak: usize,
}

impl CountingAlloc {
    /// A fresh allocator.
    pub const fn new() -> Self {
        Self {
            allocs: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// The current figures.
    pub fn stats(&self) -> AllocStats {
        AllocStats {
            allocs: self.allocs.load(Ordering::Relaxed),
            live: self.live.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
        }
    }

    /// Starts a new peak measurement at the current live size.
    pub fn reset_peak(&self) {
        self.peak
            .store(self.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    fn grew(&self, by: usize) {
        let live = self.live.fetch_add(by, Ordering::Relaxed) + by;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// plain atomics and never allocate.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocs.fetch_add(1, Ordering::Relaxed);
        self.grew(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.live.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.allocs.fetch_add(1, Ordering::Relaxed);
        if new_size >= layout.size() {
            self.grew(new_size - layout.size());
        } else {
            self.live
                .fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_streams_keep_head_and_tail() {
        let recorded =
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let big = synthetic_stream(StreamFormat::OpenAiChat, recorded, 1000);
        let text = String::from_utf8(big).expect("utf8");
        assert!(text.len() >= 1000);
        assert!(text.starts_with("data: {\"choices\":[{\"delta\":{\"role\""));
        assert!(text.ends_with("data: [DONE]\n\n"));
        assert!(text.matches("\"Hi\"").count() > 10);
    }

    #[test]
    fn runs_end_with_run_finished() {
        assert!(text_run(3, "x").last().is_some_and(AgentEvent::is_terminal));
        let mixed = mixed_run(2);
        assert!(mixed.last().is_some_and(AgentEvent::is_terminal));
        assert_eq!(
            mixed
                .iter()
                .filter(|e| matches!(e, AgentEvent::ToolResult { .. }))
                .count(),
            2
        );
        assert_eq!(
            mixed
                .iter()
                .filter(|e| matches!(e, AgentEvent::PermissionDecided { granted: true, .. }))
                .count(),
            2
        );
    }
}
