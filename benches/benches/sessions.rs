//! Session-store appends: adapter-stream-json's on-disk Zero sessions (one JSON line per
//! event, fsynced, metadata rewritten) and agent-core's `MemorySessionStore`.
//!
//! The on-disk figure is dominated by the filesystem's fsync latency, so it varies a lot
//! between machines and with other load on the disk.

use adapter_stream_json::session::{CreateInput, ZeroSessions as ZeroStore};
use agent_core::{
    session::{MemorySessionStore, SessionRecord, SessionStore},
    Message,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

fn bench_sessions(c: &mut Criterion) {
    let mut group = c.benchmark_group("sessions");
    group.throughput(Throughput::Elements(1));

    let dir = tempfile::tempdir().expect("tempdir");
    let store = ZeroStore::new(dir.path());
    let meta = store
        .create(CreateInput {
            title: "bench".into(),
            cwd: "/tmp".into(),
            model_id: "gpt-test".into(),
            provider: "openai-compatible".into(),
            ..CreateInput::default()
        })
        .expect("create");
    let payload = json!({"role": "assistant", "content": "A short answer of a few words."});
    group.sample_size(10);
    group.bench_function("stream-json/append-fsync", |b| {
        b.iter(|| {
            store
                .append(&meta.session_id, "message", Some(payload.clone()))
                .expect("append")
        })
    });
    group.bench_function("stream-json/create", |b| {
        b.iter(|| store.create(CreateInput::default()).expect("create"))
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let memory = MemorySessionStore::new();
    let record = SessionRecord::Message {
        message: Message::assistant_text("A short answer of a few words."),
    };
    group.sample_size(20);
    group.bench_function("memory/append", |b| {
        b.iter(|| rt.block_on(memory.append("s", &record)).expect("append"))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench_sessions
}
criterion_main!(benches);
