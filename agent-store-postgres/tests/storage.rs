//! The store against a real PostgreSQL server: metadata, listing, transcripts, the event-log
//! contract, migrations, writer leases and racing writers.

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    session::{SessionRecord, SessionStore},
    Message,
};
use agent_host::session::storage::contract::{self, event, events, meta};
use agent_host::session::{
    Durability, EventBounds, SessionMeta, SessionStorage, StoreError, StoredEvent,
};
use agent_store_postgres::{migrate, PgStore};
use common::{fresh_database, fresh_store, server_url};

const WAIT: Duration = Duration::from_secs(20);

/// The storage contract every backend runs, then what PostgreSQL promises besides: an
/// unpaged listing comes most recently updated first.
#[tokio::test]
async fn metadata_round_trips_and_lists_by_page_and_filter() {
    let Some((_, store)) = fresh_store().await else {
        return;
    };
    contract::metadata(&store).await;
    let ids = |metas: Vec<SessionMeta>| -> Vec<String> {
        metas.into_iter().map(|m| m.session_id).collect()
    };
    let all = ids(store.list_meta().await.expect("list"));
    assert_eq!(all, ["sess_d", "sess_c", "sess_b", "sess_a", "sess_e"]);
}

#[tokio::test]
async fn listing_uses_an_index() {
    let Some((_, store)) = fresh_store().await else {
        return;
    };
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT session_id, meta FROM sessions WHERE meta IS NOT NULL \
         ORDER BY updated_at_ms DESC, session_id DESC LIMIT 50",
    )
    .fetch_all(store.pool())
    .await
    .expect("explain");
    let plan = plan.join("\n");
    assert!(plan.contains("sessions_updated"), "{plan}");
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT session_id, meta FROM sessions WHERE meta IS NOT NULL \
         AND workspace_key = 'k' ORDER BY updated_at_ms DESC, session_id DESC LIMIT 50",
    )
    .fetch_all(store.pool())
    .await
    .expect("explain");
    let plan = plan.join("\n");
    assert!(plan.contains("sessions_workspace_key"), "{plan}");
}

/// The storage contract every backend runs, then two nodes at once.
#[tokio::test]
async fn transcripts_append_in_order_and_unknown_sessions_are_not_found() {
    let Some((url, store)) = fresh_store().await else {
        return;
    };
    contract::transcripts(&store).await;

    // Two nodes appending to one transcript at once: every record stored once, numbered
    // without gaps.
    let other = PgStore::connect(&url).await.expect("second node");
    let (a, b) = (Arc::new(store.clone()), Arc::new(other));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let node = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            node.append(
                "sess_race",
                &SessionRecord::Message {
                    message: Message::user_text(format!("m{i}")),
                },
            )
            .await
        }));
    }
    for task in tasks {
        task.await.expect("join").expect("append");
    }
    assert_eq!(a.load("sess_race").await.expect("load").len(), 40);
    let idx: Vec<i64> = sqlx::query_scalar(
        "SELECT idx FROM session_records WHERE session_id = 'sess_race' ORDER BY idx",
    )
    .fetch_all(a.pool())
    .await
    .expect("idx");
    assert_eq!(idx, (1..=40).collect::<Vec<i64>>());
    assert_eq!(
        a.list().await.expect("ids"),
        ["sess_many", "sess_race", "sess_t"].map(String::from)
    );
}

/// Deleting a session removes its rows (records and events by cascade).
#[tokio::test]
async fn the_deletion_contract_holds() {
    let Some((_, store)) = fresh_store().await else {
        return;
    };
    contract::deletion(&store).await;
}

/// The storage contract every backend runs, then what PostgreSQL checks besides: an empty
/// log starts at 1, and a batch's own seqs are consecutive.
#[tokio::test]
async fn the_event_log_contract_holds() {
    let Some((_, store)) = fresh_store().await else {
        return;
    };
    contract::event_log(&store).await;
    assert!(matches!(
        store
            .append_events("sess_f", &events(2..=3), Durability::Buffered)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    store
        .append_events("sess_f", &events(1..=6), Durability::Buffered)
        .await
        .expect("append");
    let not_consecutive = vec![event(7), event(9)];
    assert!(matches!(
        store
            .append_events("sess_f", &not_consecutive, Durability::Buffered)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        store.event_bounds("sess_f").await.expect("bounds"),
        EventBounds { oldest: 1, last: 6 }
    );
}

/// Two nodes each read the last seq and append the next batch, again and again: the stored
/// log never has a gap or a duplicate, and every batch a node was told is stored is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_event_writers_never_leave_a_gap_or_a_duplicate() {
    let Some((url, a)) = fresh_store().await else {
        return;
    };
    let b = PgStore::connect(&url).await.expect("second node");
    let writer = |store: PgStore, tag: &'static str| async move {
        let mut stored = Vec::new();
        let mut conflicts = 0u32;
        while stored.len() < 30 {
            let last = store.event_bounds("sess_r").await.expect("bounds").last;
            let batch: Vec<StoredEvent> = (last + 1..=last + 3)
                .map(|seq| {
                    StoredEvent::new(seq, format!(r#"{{"by":"{tag}","seq":{seq}}}"#))
                        .expect("event")
                })
                .collect();
            match store
                .append_events("sess_r", &batch, Durability::Buffered)
                .await
            {
                Ok(()) => stored.extend(batch),
                Err(StoreError::Conflict { .. }) => conflicts += 1,
                Err(err) => panic!("append: {err}"),
            }
        }
        (stored, conflicts)
    };
    let (ra, rb) = tokio::time::timeout(
        WAIT * 3,
        futures_join(
            tokio::spawn(writer(a.clone(), "a")),
            tokio::spawn(writer(b, "b")),
        ),
    )
    .await
    .expect("writers finish");
    let (stored_a, _) = ra;
    let (stored_b, _) = rb;
    let log = a.read_events("sess_r", 0, usize::MAX).await.expect("read");
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(stored_a.len() + stored_b.len(), 60);
    assert_eq!(seqs, (1..=60).collect::<Vec<u64>>());
    for e in stored_a.iter().chain(&stored_b) {
        assert_eq!(&log[usize::try_from(e.seq - 1).expect("index")], e);
    }
}

async fn futures_join<A, B>(
    a: tokio::task::JoinHandle<A>,
    b: tokio::task::JoinHandle<B>,
) -> (A, B) {
    let (a, b) = tokio::join!(a, b);
    (a.expect("join"), b.expect("join"))
}

#[tokio::test]
async fn migrations_apply_once_when_nodes_start_together_and_are_versioned() {
    let Some(url) = server_url() else {
        return;
    };
    let db = fresh_database(&url).await;
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { PgStore::connect(&db).await })
        })
        .collect();
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.expect("join").expect("connect"));
    }
    let versions: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM agent_sdk._sqlx_migrations ORDER BY version")
            .fetch_all(stores[0].pool())
            .await
            .expect("versions");
    let expected: Vec<(i64, bool)> = migrate::MIGRATIONS
        .iter()
        .map(|(version, _, _)| (*version, true))
        .collect();
    assert_eq!(versions, expected);
    assert_eq!(migrate::latest_version(), 1);
    // Nothing of ours lands in `public`; another schema is another store.
    let public: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .fetch_one(stores[0].pool())
    .await
    .expect("count");
    assert_eq!(public, 0);
    let other = PgStore::builder(&db)
        .schema("tenant_two")
        .connect()
        .await
        .expect("second schema");
    stores[0]
        .save_meta(&meta("sess_s", "/w", 1))
        .await
        .expect("save");
    assert!(matches!(
        other.load_meta("sess_s").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        PgStore::builder(&db)
            .schema("bad-name; drop")
            .connect()
            .await,
        Err(agent_store_postgres::ConnectError::InvalidUrl(_))
    ));
}

#[tokio::test]
async fn one_writer_per_session_and_a_dead_holder_is_taken_over_at_once() {
    let Some((url, a)) = fresh_store().await else {
        return;
    };
    let b = PgStore::builder(&url)
        .node_name("node-b")
        .connect()
        .await
        .expect("node b");
    let a_lease = a.acquire_lease("sess_l").await.expect("a takes it");
    match b.acquire_lease("sess_l").await {
        Err(StoreError::Busy { holder, .. }) => assert_eq!(holder, a.node_name()),
        other => panic!("expected busy, got {other:?}"),
    }
    // Other sessions are free.
    let other = b.acquire_lease("sess_other").await.expect("other session");
    other.release().await.expect("release");
    a_lease.release().await.expect("release");
    let b_lease = b.acquire_lease("sess_l").await.expect("b takes it");
    assert!(!b_lease.is_lost());

    // Node b dies without giving the lease back: its presence lock goes with its
    // connection, and node a takes the lease over without waiting for the expiry.
    let b_presence: i32 =
        sqlx::query_scalar("SELECT holder_key FROM session_leases WHERE session_id = 'sess_l'")
            .fetch_one(a.pool())
            .await
            .expect("holder key");
    std::mem::forget(b_lease);
    b.close().await;
    drop(b);
    let taken = tokio::time::timeout(WAIT, async {
        loop {
            match a.acquire_lease("sess_l").await {
                Ok(lease) => return lease,
                // The server notices the closed connection a moment later.
                Err(StoreError::Busy { .. }) => tokio::task::yield_now().await,
                Err(err) => panic!("acquire: {err}"),
            }
        }
    })
    .await
    .expect("taken over without waiting for the expiry (30 s)");
    let holder_key: i32 =
        sqlx::query_scalar("SELECT holder_key FROM session_leases WHERE session_id = 'sess_l'")
            .fetch_one(a.pool())
            .await
            .expect("holder key");
    assert_ne!(holder_key, b_presence);
    taken.release().await.expect("release");
}

#[tokio::test]
async fn a_lease_that_is_not_renewed_expires_and_its_holder_learns_it_was_lost() {
    let Some((url, a)) = fresh_store().await else {
        return;
    };
    let b = PgStore::builder(&url)
        .lease_ttl(Duration::from_millis(600))
        .connect()
        .await
        .expect("node b");
    // A hung holder: alive (its presence lock is held), but not renewing. Node a's
    // presence key is the one in this database that is not b's.
    let probe = b.acquire_lease("sess_probe").await.expect("probe");
    let b_key: i32 =
        sqlx::query_scalar("SELECT holder_key FROM session_leases WHERE session_id = 'sess_probe'")
            .fetch_one(a.pool())
            .await
            .expect("b's key");
    probe.release().await.expect("release");
    let a_key: i32 = tokio::time::timeout(WAIT, async {
        loop {
            let key: Option<i32> = sqlx::query_scalar(
                "SELECT objid::int8::int4 FROM pg_locks WHERE locktype = 'advisory' \
                 AND objsubid = 2 AND classid = 1095193412 AND granted AND objid::int8 <> $1 \
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 LIMIT 1",
            )
            .bind(i64::from(b_key))
            .fetch_optional(a.pool())
            .await
            .expect("locks");
            if let Some(key) = key {
                return key;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("a presence lock");
    sqlx::query(
        "INSERT INTO session_leases (session_id, token, holder, holder_key, expires_at) \
         VALUES ('sess_x', gen_random_uuid(), 'hung-node', $1, clock_timestamp() + interval '700 milliseconds')",
    )
    .bind(a_key)
    .execute(a.pool())
    .await
    .expect("forge a lease");
    match b.acquire_lease("sess_x").await {
        Err(StoreError::Busy { holder, .. }) => assert_eq!(holder, "hung-node"),
        other => panic!("expected busy, got {other:?}"),
    }
    let lease = tokio::time::timeout(WAIT, async {
        loop {
            match b.acquire_lease("sess_x").await {
                Ok(lease) => return lease,
                Err(StoreError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(err) => panic!("acquire: {err}"),
            }
        }
    })
    .await
    .expect("the expired lease is taken");
    // Now b's lease is taken over behind its back: b's renewal finds it gone.
    sqlx::query("UPDATE session_leases SET token = gen_random_uuid() WHERE session_id = 'sess_x'")
        .execute(a.pool())
        .await
        .expect("steal");
    tokio::time::timeout(WAIT, lease.lost())
        .await
        .expect("the holder learns the lease was lost");
    assert!(lease.is_lost());
}

/// A claim tells whether another node changed the session since this node last read or
/// wrote it (its transcript, event log or metadata), and one node never holds two claims on
/// one session.
#[tokio::test]
async fn a_claim_says_whether_another_node_changed_the_session() {
    let Some((url, a)) = fresh_store().await else {
        return;
    };
    let b = PgStore::connect(&url).await.expect("node b");
    let record = SessionRecord::Message {
        message: Message::user_text("hi"),
    };
    a.save_meta(&meta("sess_c", "/w", 1)).await.expect("save");
    a.append("sess_c", &record).await.expect("append");
    // b loads it as a resume does.
    b.load_meta("sess_c").await.expect("meta");
    b.load("sess_c").await.expect("load");
    b.event_bounds("sess_c").await.expect("bounds");
    let claim = b
        .claim_writer("sess_c")
        .await
        .expect("claim")
        .expect("a claim");
    assert!(!claim.stale(), "nothing changed since b loaded it");
    assert!(matches!(
        b.claim_writer("sess_c").await,
        Err(StoreError::Busy { .. })
    ));
    assert!(matches!(
        a.claim_writer("sess_c").await,
        Err(StoreError::Busy { .. })
    ));
    drop(claim);
    // b's own writes keep it current.
    let claim = claim_when_free(&b, "sess_c").await;
    assert!(!claim.stale());
    b.append("sess_c", &record).await.expect("append");
    b.append_events("sess_c", &events(1..=2), Durability::Buffered)
        .await
        .expect("events");
    b.save_meta(&meta("sess_c", "/w", 2)).await.expect("save");
    drop(claim);
    for change in 0..3 {
        let claim = claim_when_free(&b, "sess_c").await;
        assert!(!claim.stale(), "b wrote all of it");
        drop(claim);
        // Now a changes one part behind b's back.
        match change {
            0 => a.append("sess_c", &record).await.expect("append"),
            1 => {
                let last = a.event_bounds("sess_c").await.expect("bounds").last;
                a.append_events("sess_c", &events(last + 1..=last + 1), Durability::Buffered)
                    .await
                    .expect("events")
            }
            _ => a.save_meta(&meta("sess_c", "/w", 99)).await.expect("save"),
        }
        assert!(
            b.changed_elsewhere("sess_c").await.expect("check"),
            "change {change} is seen without a claim"
        );
        let claim = claim_when_free(&b, "sess_c").await;
        assert!(claim.stale(), "change {change} is seen");
        drop(claim);
        // b loads it again (as the session host's reload does).
        b.load_meta("sess_c").await.expect("meta");
        b.load("sess_c").await.expect("load");
        b.event_bounds("sess_c").await.expect("bounds");
        assert!(!b.changed_elsewhere("sess_c").await.expect("check"));
    }
}

/// A claim given back (dropped: released in the background) is taken by the next claim on
/// this node or another without a busy error: `claim_writer` waits for a lease being given
/// back.
#[tokio::test]
async fn a_claim_just_given_back_is_taken_without_busy() {
    let Some((url, a)) = fresh_store().await else {
        return;
    };
    let b = PgStore::connect(&url).await.expect("node b");
    for round in 0..5 {
        let claim = a
            .claim_writer("sess_h")
            .await
            .expect("a claims")
            .expect("a claim");
        drop(claim);
        let claim = a.claim_writer("sess_h").await;
        assert!(
            matches!(claim, Ok(Some(_))),
            "round {round}: {:?}",
            claim.err()
        );
        drop(claim);
        let claim = b.claim_writer("sess_h").await;
        assert!(
            matches!(claim, Ok(Some(_))),
            "round {round}: {:?}",
            claim.err()
        );
    }
}

/// Claims `id` on `store`, waiting (bounded) while a dropped claim is given back in the
/// background.
async fn claim_when_free(store: &PgStore, id: &str) -> Box<dyn agent_host::session::WriterClaim> {
    tokio::time::timeout(WAIT, async {
        loop {
            match store.claim_writer(id).await {
                Ok(claim) => return claim.expect("a claim"),
                Err(StoreError::Busy { .. }) => tokio::task::yield_now().await,
                Err(err) => panic!("claim: {err}"),
            }
        }
    })
    .await
    .expect("claimed again")
}
