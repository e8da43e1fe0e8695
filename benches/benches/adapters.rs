//! Each adapter's event mapping + serialisation of a run, beside a serialise-only baseline of
//! the very same output frames (plain `serde_json::to_writer`, no mapping, no redaction).
//!
//! Workloads: `text` (1000 short text deltas framed as one answer) and `mixed` (10 tool turns:
//! text deltas, a streamed tool call, usage, the call's permission request and decision, a
//! 2 KiB tool result). Throughput is per input
//! `AgentEvent` and per output byte.

use benches::pipelines::{rpc_frames, rpc_pipeline, serialise, zero_frames, zero_pipeline};
use benches::{mixed_run, text_run, CountingSink};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

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
