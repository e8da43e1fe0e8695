//! agent-host's session storage on PostgreSQL beside the files (issue 21): what a turn pays
//! to append a transcript record and a batch of events, and what a node pays to resume a
//! session (metadata, transcript, the event log's bounds and its newest events).
//!
//! The Postgres rows need `AGENT_SDK_PG_URL` (a superuser URL: `scripts/pg-test.sh start`);
//! without it only the files are measured. Both sit on the same machine's disk: the database
//! is reached over loopback TCP, so its figures are round trips plus the server's work.

use std::sync::Arc;

use agent_core::{session::SessionRecord, Message};
use agent_host::session::{Durability, FileStore, SessionMeta, SessionStorage, StoredEvent};
use agent_store_postgres::PgStore;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Events per appended batch (a turn flushes the events that were waiting, typically a few).
const BATCH: u64 = 8;
/// Records in the transcript that is resumed.
const RESUME_RECORDS: usize = 100;
/// Events in the log that is resumed; its newest window is read back.
const RESUME_EVENTS: u64 = 2_000;
const WINDOW: usize = 256;

fn meta(id: &str) -> SessionMeta {
    serde_json::from_value(serde_json::json!({
        "sessionId": id,
        "workspacePath": "/tmp/ws",
        "workspaceKey": "/tmp/ws",
        "providerId": "scripted",
        "model": "demo",
        "title": "bench",
        "createdAt": 1,
        "updatedAt": 1,
    }))
    .expect("meta")
}

fn record(i: usize) -> SessionRecord {
    SessionRecord::Message {
        message: Message::assistant_text(format!(
            "Answer {i}: a short answer of a few words, as a model gives them."
        )),
    }
}

fn events(from: u64, n: u64) -> Vec<StoredEvent> {
    (from..from + n)
        .map(|seq| {
            StoredEvent::new(
                seq,
                format!(
                    r#"{{"eventId":"evt_{seq}","sessionId":"sess_bench","seq":{seq},"timestamp":1,"type":"model.streaming","payload":{{"kind":"text_delta","delta":"a few words of text"}}}}"#
                ),
            )
            .expect("event")
        })
        .collect()
}

async fn fill(store: &dyn SessionStorage, id: &str) {
    store.save_meta(&meta(id)).await.expect("meta");
    for i in 0..RESUME_RECORDS {
        store.append(id, &record(i)).await.expect("record");
    }
    let mut seq = 1;
    while seq <= RESUME_EVENTS {
        store
            .append_events(id, &events(seq, 100), Durability::Buffered)
            .await
            .expect("events");
        seq += 100;
    }
    store.sync_events(id).await.expect("sync");
}

/// What a node reads to resume a session.
async fn resume(store: &dyn SessionStorage, id: &str) {
    let meta = store.load_meta(id).await.expect("meta");
    let records = store.load(&meta.session_id).await.expect("transcript");
    let bounds = store.event_bounds(id).await.expect("bounds");
    let window = store
        .read_events(id, bounds.last.saturating_sub(WINDOW as u64), WINDOW)
        .await
        .expect("events");
    assert_eq!(records.len(), RESUME_RECORDS);
    assert_eq!(window.len(), WINDOW);
}

fn bench_backend(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    store: Arc<dyn SessionStorage>,
) {
    let mut group = c.benchmark_group("session_store");
    group.sample_size(20);

    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("append-record", name), |b| {
        b.iter(|| {
            i += 1;
            rt.block_on(store.append("sess_append", &record(i)))
                .expect("append")
        })
    });

    group.throughput(Throughput::Elements(BATCH));
    for (label, durability) in [
        ("append-events-8/buffered", Durability::Buffered),
        ("append-events-8/sync", Durability::Sync),
    ] {
        let id = format!("sess_events_{}", label.replace(['/', '-'], "_"));
        let mut next = 1u64;
        group.bench_function(BenchmarkId::new(label, name), |b| {
            b.iter(|| {
                let batch = events(next, BATCH);
                next += BATCH;
                rt.block_on(store.append_events(&id, &batch, durability))
                    .expect("append events")
            })
        });
    }

    group.throughput(Throughput::Elements(1));
    rt.block_on(fill(store.as_ref(), "sess_resume"));
    group.bench_function(BenchmarkId::new("resume", name), |b| {
        b.iter(|| rt.block_on(resume(store.as_ref(), "sess_resume")))
    });
    group.finish();
}

fn bench_session_store(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    bench_backend(c, &rt, "files", Arc::new(FileStore::new(dir.path())));

    let Ok(url) = std::env::var("AGENT_SDK_PG_URL") else {
        eprintln!("session_store: AGENT_SDK_PG_URL is not set; Postgres not measured");
        return;
    };
    let store = rt.block_on(async {
        let db = agent_store_postgres::testing::fresh_database(&url).await;
        PgStore::connect(&db).await.expect("connect")
    });
    bench_backend(c, &rt, "postgres", Arc::new(store));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench_session_store
}
criterion_main!(benches);
