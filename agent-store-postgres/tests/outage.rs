//! A database that goes away and comes back: every operation fails with
//! `StoreError::Unavailable` within the operation timeout (never a hang or a panic), and
//! works again once the server is back, on the same store.

use std::time::{Duration, Instant};

use agent_core::{
    session::{SessionRecord, SessionStore},
    Message,
};
use agent_host::session::{Durability, SessionStorage, StoreError, StoredEvent};
use agent_store_postgres::testing::fresh_database;
use agent_store_postgres::{ConnectError, PgStore};
use test_support::pg::PrivateServer;

const WAIT: Duration = Duration::from_secs(30);

fn record(text: &str) -> SessionRecord {
    SessionRecord::Message {
        message: Message::user_text(text),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_fails_each_operation_and_the_store_recovers() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let db = fresh_database(&server.url).await;
    let store = PgStore::builder(&db)
        .operation_timeout(Duration::from_secs(1))
        .connect()
        .await
        .expect("connect");
    store
        .append("sess_o", &record("before"))
        .await
        .expect("append");
    let event = |seq: u64| StoredEvent::new(seq, format!("{{\"seq\":{seq}}}")).expect("event");
    store
        .append_events("sess_o", &[event(1)], Durability::Sync)
        .await
        .expect("events");

    server.pause();
    let started = Instant::now();
    match store.load("sess_o").await {
        Err(agent_core::session::SessionError::Io { .. }) => {}
        other => panic!("expected an I/O error, got {other:?}"),
    }
    assert!(matches!(
        store
            .append_events("sess_o", &[event(2)], Durability::Buffered)
            .await,
        Err(StoreError::Unavailable { .. })
    ));
    assert!(matches!(
        store.event_bounds("sess_o").await,
        Err(StoreError::Unavailable { .. })
    ));
    match store.acquire_lease("sess_o").await {
        Err(StoreError::Unavailable { .. }) => {}
        other => panic!("expected unavailable, got {other:?}"),
    }
    // Bounded by the operation timeout (1 s each), with room for a slow machine.
    assert!(started.elapsed() < WAIT, "{:?}", started.elapsed());

    server.resume();
    // The pool reconnects on its own: the same store works again.
    let bounds = tokio::time::timeout(WAIT, async {
        loop {
            match store.event_bounds("sess_o").await {
                Ok(bounds) => return bounds,
                Err(StoreError::Unavailable { .. }) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(err) => panic!("unexpected: {err}"),
            }
        }
    })
    .await
    .expect("back");
    assert_eq!(bounds.last, 1, "nothing of the refused batch was stored");
    store
        .append("sess_o", &record("after"))
        .await
        .expect("append");
    assert_eq!(store.load("sess_o").await.expect("load").len(), 2);
    let lease = tokio::time::timeout(WAIT, async {
        loop {
            match store.acquire_lease("sess_o").await {
                Ok(lease) => return lease,
                // The presence lock comes back with backoff.
                Err(StoreError::Unavailable { .. }) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(err) => panic!("unexpected: {err}"),
            }
        }
    })
    .await
    .expect("a lease again");
    lease.release().await.expect("release");
}

#[tokio::test]
async fn connecting_to_nothing_fails_within_the_connect_timeout() {
    if test_support::pg::server_url().is_none() {
        return;
    }
    // A port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let started = Instant::now();
    let result = PgStore::builder(format!("postgres://postgres@127.0.0.1:{port}/postgres"))
        .connect_timeout(Duration::from_millis(500))
        .connect()
        .await;
    assert!(
        matches!(result, Err(ConnectError::Unreachable { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < WAIT);
    assert!(matches!(
        PgStore::connect("mysql://nope").await,
        Err(ConnectError::InvalidUrl(_))
    ));
}
