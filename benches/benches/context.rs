//! The cost of context accounting per model call (issue 20).
//!
//! After every call the agent records the provider's reported tokens and computes `used`
//! (that figure plus an estimate of the messages added since), and before every call it
//! computes `used` again for the auto-compact check. Without reported usage, `used` is the
//! running estimate of the transcript plus an estimate of the system prompt and tool specs.
//! These benches time exactly that work on a 200-message coding transcript, and the full
//! estimate a host pays when it asks for a transcript it has never seen.

use agent_core::context::{estimate_preamble_tokens, estimate_request_tokens, estimate_tokens};
use agent_core::{
    context::ContextTracker,
    message::{Role, ToolCall},
    provider::ToolSpec,
    ContentBlock, Message,
};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;

/// A coding session: a prompt, then rounds of assistant text + a tool call and its result.
fn transcript(messages: usize) -> Vec<Message> {
    let mut out = vec![Message::user_text(
        "Find why the parser rejects nested arrays and fix it; run the tests after.",
    )];
    let mut i = 0;
    while out.len() < messages {
        out.push(Message::new(
            Role::Assistant,
            vec![
                ContentBlock::text("Let me look at the parser's array handling next."),
                ContentBlock::ToolCall(ToolCall {
                    id: format!("call_{i}"),
                    name: "read_file".into(),
                    args: json!({"path": format!("src/parser/mod_{i}.rs"), "offset": 1, "limit": 200}),
                }),
            ],
        ));
        out.push(Message::new(
            Role::Tool,
            vec![ContentBlock::ToolResult {
                call_id: format!("call_{i}"),
                is_error: false,
                content: vec![ContentBlock::text(
                    "     1\tfn parse_array(&mut self) -> Result<Value, Error> {\n".repeat(40),
                )],
            }],
        ));
        i += 1;
    }
    out.truncate(messages);
    out
}

/// Eight tool specs the size of the built-in tools'.
fn specs() -> Vec<ToolSpec> {
    (0..8)
        .map(|i| ToolSpec {
            name: format!("tool_{i}"),
            description: "Reads a text file from the workspace and returns its lines numbered \
                          from 1. Use offset and limit to page through long files."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to read, relative to the workspace root."},
                    "offset": {"type": ["integer", "null"], "description": "First line to show (1-based)."},
                    "limit": {"type": ["integer", "null"], "description": "Most lines to show."}
                },
                "required": ["path", "offset", "limit"],
                "additionalProperties": false
            }),
        })
        .collect()
}

fn bench_context(c: &mut Criterion) {
    let mut group = c.benchmark_group("context");
    let messages = transcript(200);
    let system = "You are a coding agent. ".repeat(100);
    let specs = specs();
    let bytes: usize = serde_json::to_string(&messages).map_or(0, |s| s.len());
    eprintln!(
        "transcript: {} messages, {} KiB as JSON, estimated {} tokens",
        messages.len(),
        bytes / 1024,
        estimate_request_tokens(Some(&system), &specs, &messages)
    );

    // One call's accounting with usage reported: record the call, then `used` after it
    // (the ContextUsage event) and before the next call (the threshold check), with the
    // call's assistant message and tool result added in between.
    group.bench_function("per_call/reported", |b| {
        let mut tracker = ContextTracker::new();
        b.iter(|| {
            tracker.record_call(Some(120_000), messages.len() - 2);
            let after = tracker.used(black_box(&messages[..messages.len() - 1]), || 0);
            let before_next = tracker.used(black_box(&messages), || 0);
            black_box((after, before_next))
        })
    });

    // The same without reported usage: the running estimate grows by the two new
    // messages, and the system prompt and tool specs are estimated each time. Each
    // iteration starts from a tracker that has counted the first 198 messages (a copy:
    // the tracker holds no heap data).
    let mut warm = ContextTracker::new();
    let _ = warm.used(&messages[..messages.len() - 2], || 0);
    group.bench_function("per_call/estimated", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut tracker| {
                tracker.record_call(None, messages.len() - 1);
                let after = tracker.used(black_box(&messages[..messages.len() - 1]), || {
                    estimate_preamble_tokens(Some(&system), &specs)
                });
                let before_next = tracker.used(black_box(&messages), || {
                    estimate_preamble_tokens(Some(&system), &specs)
                });
                black_box((after, before_next))
            },
            BatchSize::SmallInput,
        )
    });

    // A whole estimate from scratch (a resumed session, or a host asking once).
    group.bench_function("estimate/200_messages", |b| {
        b.iter(|| black_box(estimate_tokens(black_box(&messages))))
    });
    group.bench_function("estimate/preamble_8_tools", |b| {
        b.iter(|| black_box(estimate_preamble_tokens(Some(&system), black_box(&specs))))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench_context
}
criterion_main!(benches);
