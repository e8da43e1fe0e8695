//! SSE decoding per provider (MB/s of response body): recorded streams from real servers
//! (`shared/fixtures/sse`) and synthetic ~1 MiB streams built from them, fed in 4 KiB
//! chunks through `agent_providers::replay::decode_stream` (the live SSE parser, decoder and
//! driver, no HTTP). OpenAI Responses has no recording, so its stream is synthetic.

use agent_providers::replay::{decode_stream, StreamFormat};
use benches::{chunked, fixture, responses_stream, synthetic_stream};
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use futures::StreamExt;

const CHUNK: usize = 4096;
const LARGE: usize = 1 << 20;

/// Decodes `chunks` to the end; returns the number of events (and panics on a decode error,
/// which would make the figure meaningless).
async fn decode(format: StreamFormat, chunks: Vec<Bytes>) -> usize {
    let mut stream = decode_stream(format, futures::stream::iter(chunks));
    let mut n = 0;
    while let Some(item) = stream.next().await {
        if let Err(err) = item {
            panic!("decode error: {err:?}");
        }
        n += 1;
    }
    n
}

fn bench_sse(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut cases: Vec<(String, StreamFormat, Vec<u8>)> = Vec::new();
    for (dir, label) in [
        ("llama-server-smollm2", "llama"),
        ("litellm-over-llama-server", "litellm"),
    ] {
        for (api, format) in [
            ("openai", StreamFormat::OpenAiChat),
            ("anthropic", StreamFormat::Anthropic),
        ] {
            for case in ["plain", "tools-any-prefill", "tools-required-prefill"] {
                let path = format!("{dir}/smollm2.{api}.stream.{case}.sse");
                if !std::path::Path::new(&benches::fixtures_dir().join(&path)).exists() {
                    continue;
                }
                if let Some(body) = fixture(&path) {
                    if case == "plain" {
                        let big = synthetic_stream(format, &body, LARGE);
                        cases.push((format!("{api}/{label}-plain-x1MiB"), format, big));
                    }
                    cases.push((format!("{api}/{label}-{case}"), format, body));
                }
            }
        }
    }
    cases.push((
        "openai-responses/synthetic-1MiB".into(),
        StreamFormat::OpenAiResponses,
        {
            let per_delta = responses_stream(2).len() - responses_stream(1).len();
            responses_stream(LARGE / per_delta.max(1))
        },
    ));
    cases.push((
        "openai-responses/synthetic-plain".into(),
        StreamFormat::OpenAiResponses,
        responses_stream(40),
    ));

    let mut group = c.benchmark_group("sse");
    for (name, format, body) in &cases {
        let chunks = chunked(body, CHUNK);
        // Fail early (outside the measurement) if a body does not decode.
        let events = rt.block_on(decode(*format, chunks.clone()));
        assert!(events > 0, "{name}: no events");
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name.as_str(), |b| {
            b.iter_batched(
                || chunks.clone(),
                |chunks| rt.block_on(decode(*format, chunks)),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_sse
}
criterion_main!(benches);
