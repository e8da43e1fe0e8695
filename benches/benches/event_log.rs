//! The ZCode event log with persistence (issue 23): the cost per event of appending to a
//! session's log — serialising a `session/event`, numbering it, writing its batch to the
//! session's `events.jsonl` and showing it — beside the same log without storage (what the log
//! cost before it was persisted), the file append alone, a turn's closing fsync, and a replay
//! read back from disk.
//!
//! - `persisted/batch-N`: `EventLog<SessionEvent>` over agent-host's `EventJournal` on a
//!   `FileStore`: N text-delta events appended, one flush (a turn flushes once per batch of
//!   events that were waiting), timed until the last one is stored and shown. Retention is the
//!   default (20 000 events, trimmed at 30 000), so its amortised trimming is included.
//! - `in-memory/batch-N`: the same log without storage (shown at the flush).
//! - `file-append/batch-N`: `FileStore::append_events` of N serialised events (buffered).
//! - `file-append-fsync/batch-16`: the same, `Durability::Sync` (a turn's last batch).
//! - `replay-disk/1000`: 1000 events after a seq older than the in-memory window, from a
//!   20 000-event log.

use std::sync::Arc;
use std::time::Duration;

use adapter_acp::zcode::eventlog::EventLog;
use adapter_acp::zcode::wire::{EventBody, ModelStreamingPayload, SessionEvent};
use agent_host::session::{
    Durability, EventJournal, FileStore, JournalOptions, SessionStorage, StoredEvent,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const WAIT: Duration = Duration::from_secs(30);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A text-delta event as the ZCode front end emits it (uuid-sized ids, ~300 bytes).
fn event(seq: u64) -> SessionEvent {
    SessionEvent {
        event_id: "evt_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into(),
        session_id: "sess_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into(),
        turn_id: Some("turn_0b8f4c1e-5d7a-4f2b-9c3e-1a2b3c4d5e6f".into()),
        seq,
        timestamp: 1_767_225_600_000,
        body: EventBody::ModelStreaming(ModelStreamingPayload::TextDelta {
            delta: " token".into(),
        }),
    }
}

fn stored(seqs: std::ops::RangeInclusive<u64>) -> Vec<StoredEvent> {
    seqs.map(|seq| StoredEvent::serialise(seq, &event(seq)).expect("json"))
        .collect()
}

fn bench_event_log(c: &mut Criterion) {
    let rt = runtime();
    // The journal's writer tasks run on this runtime (the server's code runs inside one).
    let _runtime = rt.enter();
    let mut group = c.benchmark_group("event_log");
    for batch in [1u64, 16, 256] {
        group.throughput(Throughput::Elements(batch));

        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
        let journal = EventJournal::fresh(store, "sess_bench", JournalOptions::default());
        journal.attach(Box::new(|_: &StoredEvent| {}), None);
        let log = EventLog::<SessionEvent>::over(journal);
        rt.block_on(log.subscribe(None, |_| ())).expect("subscribe");
        group.bench_function(format!("persisted/batch-{batch}"), |b| {
            b.iter(|| {
                let mut last = 0;
                for _ in 0..batch {
                    last = log.append_held(event);
                }
                log.flush();
                assert!(rt.block_on(log.wait_shown(last, WAIT)), "stored in time");
            })
        });

        let memory = EventLog::<SessionEvent>::new(|_: &StoredEvent| {});
        rt.block_on(memory.subscribe(None, |_| ()))
            .expect("subscribe");
        group.bench_function(format!("in-memory/batch-{batch}"), |b| {
            b.iter(|| {
                for _ in 0..batch {
                    memory.append_held(event);
                }
                memory.flush();
            })
        });

        let files = FileStore::new(dir.path());
        let mut next = 1u64;
        group.bench_function(format!("file-append/batch-{batch}"), |b| {
            b.iter_batched(
                || {
                    let events = stored(next..=next + batch - 1);
                    next += batch;
                    events
                },
                |events| {
                    rt.block_on(files.append_events("sess_files", &events, Durability::Buffered))
                        .expect("append")
                },
                BatchSize::SmallInput,
            )
        });
    }

    group.throughput(Throughput::Elements(16));
    group.sample_size(20);
    let dir = tempfile::tempdir().expect("tempdir");
    let files = FileStore::new(dir.path());
    let mut next = 1u64;
    group.bench_function("file-append-fsync/batch-16", |b| {
        b.iter_batched(
            || {
                let events = stored(next..=next + 15);
                next += 16;
                events
            },
            |events| {
                rt.block_on(files.append_events("sess_sync", &events, Durability::Sync))
                    .expect("append")
            },
            BatchSize::SmallInput,
        )
    });

    // A 20 000-event log; the window holds the newest 256.
    let store: Arc<dyn SessionStorage> = Arc::new(FileStore::new(dir.path()));
    for chunk in 0..20u64 {
        let first = chunk * 1000 + 1;
        rt.block_on(store.append_events(
            "sess_replay",
            &stored(first..=first + 999),
            Durability::Buffered,
        ))
        .expect("append");
    }
    let journal = rt
        .block_on(EventJournal::open(
            store,
            "sess_replay",
            JournalOptions::default(),
        ))
        .expect("open");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("replay-disk/1000", |b| {
        b.iter(|| {
            let replay = rt.block_on(journal.replay(9_000, 1000)).expect("replay");
            assert_eq!(replay.events.len(), 1000);
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench_event_log
}
criterion_main!(benches);
