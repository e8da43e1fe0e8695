//! The end-to-end loop: 100k text deltas from the scripted provider through `Agent::prompt`
//!
//! - `drain`: into nothing (the agent loop alone: provider stream, assembler, event channel);
//! - `stream-json`: through `adapter_stream_json::run_exec` (processor, redaction, writer,
//!   session recording) into a counting stdout;
//! - `rpc`: through `adapter_rpc::serve` (dispatcher, worker, processor, writer task) into a
//!   counting stdout;
//!
//! beside the serialise-only baseline of each front end's text frames (the same number of
//! lines through plain `serde_json::to_writer`). The target: each front end ≥ 50% of
//! its baseline's throughput.
//!
//! Before the timed runs the bench prints, per pipeline, allocations per text delta and the
//! peak heap above the answer text itself for 10k and 100k deltas (flat = no per-event heap
//! growth), using a counting global allocator.

use adapter_rpc::wire::{Event, Frame};
use adapter_stream_json::wire::{Delta, EventBody, OutputEvent};
use benches::e2e::{provider, run_once, runtime, Pipeline, DELTA};
use benches::{CountingAlloc, CountingSink};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

const DELTAS: usize = 100_000;

/// Serialise-only: `n` text frames of each front end with plain serde_json.
fn serialise_frames(pipeline: Pipeline, n: usize, sink: &mut CountingSink) {
    use std::io::Write;
    let mut buf = Vec::with_capacity(256);
    let zero = OutputEvent::new(
        "run_20260101000000_abcdef",
        EventBody::Text(Delta {
            delta: DELTA.into(),
        }),
    );
    let rpc = Frame::Event(Event::TextDelta {
        delta: DELTA.into(),
    });
    for _ in 0..n {
        buf.clear();
        match pipeline {
            Pipeline::Rpc => serde_json::to_writer(&mut buf, &rpc),
            _ => serde_json::to_writer(&mut buf, &zero),
        }
        .expect("serialisable");
        buf.push(b'\n');
        sink.write_all(&buf).expect("sink");
    }
}

fn heap_report(rt: &tokio::runtime::Runtime, data: &std::path::Path) {
    for pipeline in [Pipeline::Drain, Pipeline::StreamJson, Pipeline::Rpc] {
        let mut line = format!("heap/{pipeline:?}:");
        for n in [10_000, DELTAS] {
            let provider_bytes = {
                let before = ALLOC.stats().live;
                let p = provider(n);
                let after = ALLOC.stats().live;
                drop(p);
                after.saturating_sub(before)
            };
            let before = ALLOC.stats();
            ALLOC.reset_peak();
            run_once(rt, pipeline, n, data);
            let after = ALLOC.stats();
            // The answer text is kept (transcript, final text): n * DELTA bytes, possibly
            // twice while the message is built; the script itself is provider_bytes.
            let answer = n * DELTA.len();
            let above = after
                .peak
                .saturating_sub(before.live + provider_bytes + 2 * answer);
            line.push_str(&format!(
                "  n={n}: {:.2} allocs/delta, peak {} KiB above script+2×answer",
                (after.allocs - before.allocs) as f64 / n as f64,
                above / 1024
            ));
        }
        eprintln!("{line}");
    }
}

fn bench_loop(c: &mut Criterion) {
    let rt = runtime();
    let data = tempfile::tempdir().expect("tempdir");
    heap_report(&rt, data.path());

    let mut group = c.benchmark_group("agent_loop");
    group.sample_size(10);
    for pipeline in [Pipeline::Drain, Pipeline::StreamJson, Pipeline::Rpc] {
        let (_, bytes) = run_once(&rt, pipeline, DELTAS, data.path());
        group.throughput(match pipeline {
            Pipeline::Drain => Throughput::Elements(DELTAS as u64),
            _ => Throughput::ElementsAndBytes {
                elements: DELTAS as u64,
                bytes,
            },
        });
        group.bench_function(format!("{pipeline:?}/100k-deltas"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_once(&rt, pipeline, DELTAS, data.path()).0)
                    .sum()
            })
        });
        if !matches!(pipeline, Pipeline::Drain) {
            let mut sink = CountingSink::default();
            serialise_frames(pipeline, DELTAS, &mut sink);
            group.throughput(Throughput::ElementsAndBytes {
                elements: DELTAS as u64,
                bytes: sink.bytes(),
            });
            group.bench_function(format!("{pipeline:?}/serialise-only-100k"), |b| {
                b.iter(|| serialise_frames(pipeline, DELTAS, &mut sink))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench_loop
}
criterion_main!(benches);
