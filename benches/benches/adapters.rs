//! Each adapter's event mapping + serialisation of a run, beside a serialise-only baseline of
//! the very same output frames (plain `serde_json::to_writer`, no mapping, no redaction).
//!
//! Workloads: `text` (1000 short text deltas framed as one answer) and `mixed` (10 tool turns:
//! text deltas, a streamed tool call, a 2 KiB tool result). Throughput is per input
//! `AgentEvent` and per output byte.

use std::io::Write;

use adapter_rpc::framing::to_line;
use adapter_rpc::processor::{EventProcessor as RpcProcessor, SharedMeter, UsageMeter};
use adapter_rpc::wire::Frame;
use adapter_stream_json::cli::OutputFormat;
use adapter_stream_json::output::Writer;
use adapter_stream_json::processor::{EventProcessor as ZeroProcessor, ProcessorConfig};
use adapter_stream_json::wire::{EventBody, OutputEvent};
use agent_core::AgentEvent;
use benches::{mixed_run, text_run, CountingSink};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const RUN_ID: &str = "run_20260101000000_abcdef";

/// stream-json: processor → `Writer` (stream-json format) → sink.
fn zero_pipeline(events: Vec<AgentEvent>, sink: &CountingSink) {
    let mut processor = ZeroProcessor::new(ProcessorConfig::default(), None);
    let mut writer = Writer::new(
        OutputFormat::StreamJson,
        RUN_ID,
        Box::new(sink.clone()),
        Box::new(std::io::sink()),
        "auto",
    );
    for event in events {
        let bodies = match event {
            AgentEvent::RunFinished { status, final_text } => {
                processor.finish(status, final_text, false).events
            }
            event => processor.on_event(event),
        };
        for body in bodies {
            writer.write(&body).expect("sink never fails");
        }
    }
}

/// The stream-json frames of `events`, for the baseline.
fn zero_frames(events: &[AgentEvent]) -> Vec<OutputEvent> {
    let mut processor = ZeroProcessor::new(ProcessorConfig::default(), None);
    let mut out = Vec::new();
    for event in events.iter().cloned() {
        let bodies: Vec<EventBody> = match event {
            AgentEvent::RunFinished { status, final_text } => {
                processor.finish(status, final_text, false).events
            }
            event => processor.on_event(event),
        };
        out.extend(bodies.into_iter().map(|b| OutputEvent::new(RUN_ID, b)));
    }
    out
}

/// zut RPC: processor → line serialiser → sink.
fn rpc_pipeline(events: Vec<AgentEvent>, sink: &mut CountingSink) {
    let mut processor = RpcProcessor::new(SharedMeter::new(UsageMeter::new("openai")));
    for event in events {
        if let Some(event) = processor.process(event) {
            let line = to_line(&Frame::Event(event)).expect("serialisable");
            sink.write_all(&line).expect("sink never fails");
        }
    }
}

fn rpc_frames(events: &[AgentEvent]) -> Vec<Frame> {
    let mut processor = RpcProcessor::new(SharedMeter::new(UsageMeter::new("openai")));
    events
        .iter()
        .cloned()
        .filter_map(|e| processor.process(e))
        .map(Frame::Event)
        .collect()
}

/// Serialise-only: each frame with plain serde_json into one reused buffer, then the sink.
fn serialise<T: serde::Serialize>(frames: &[T], buf: &mut Vec<u8>, sink: &mut CountingSink) {
    for frame in frames {
        buf.clear();
        serde_json::to_writer(&mut *buf, frame).expect("serialisable");
        buf.push(b'\n');
        sink.write_all(buf).expect("sink never fails");
    }
}

fn bench_adapters(c: &mut Criterion) {
    for (name, events) in [("text", text_run(1000, " token")), ("mixed", mixed_run(10))] {
        let n = events.len() as u64;
        let mut group = c.benchmark_group(format!("adapters/{name}"));

        // stream-json
        let sink = CountingSink::default();
        zero_pipeline(events.clone(), &sink);
        let bytes = sink.bytes();
        group.throughput(Throughput::ElementsAndBytes { elements: n, bytes });
        group.bench_function("stream-json/map+serialise", |b| {
            b.iter_batched(
                || events.clone(),
                |events| zero_pipeline(events, &sink),
                BatchSize::LargeInput,
            )
        });
        let frames = zero_frames(&events);
        let mut buf = Vec::new();
        let mut base = CountingSink::default();
        serialise(&frames, &mut buf, &mut base);
        group.throughput(Throughput::ElementsAndBytes {
            elements: n,
            bytes: base.bytes(),
        });
        group.bench_function("stream-json/serialise-only", |b| {
            b.iter(|| serialise(&frames, &mut buf, &mut base))
        });

        // zut RPC
        let mut sink = CountingSink::default();
        rpc_pipeline(events.clone(), &mut sink);
        group.throughput(Throughput::ElementsAndBytes {
            elements: n,
            bytes: sink.bytes(),
        });
        group.bench_function("rpc/map+serialise", |b| {
            b.iter_batched(
                || events.clone(),
                |events| rpc_pipeline(events, &mut sink),
                BatchSize::LargeInput,
            )
        });
        let frames = rpc_frames(&events);
        let mut base = CountingSink::default();
        serialise(&frames, &mut buf, &mut base);
        group.throughput(Throughput::ElementsAndBytes {
            elements: n,
            bytes: base.bytes(),
        });
        group.bench_function("rpc/serialise-only", |b| {
            b.iter(|| serialise(&frames, &mut buf, &mut base))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_adapters
}
criterion_main!(benches);
