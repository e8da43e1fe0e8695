//! The session's FIFO turn queue and the one-session host: a standalone session over a
//! [`MemoryStorage`], its queue held until `begin` ran the `session_start` hooks, queued
//! turns started in order (each after the previous one's `finished`), the busy contract,
//! aborting the current turn, dropping queued ones, and `clear` / `set_model` through the
//! session.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    async_trait,
    event::{RequestScope, RunKind},
    hooks::{HookContext, Hooks, SessionEnd, SessionEndReason, SessionSource, StartDecision},
    provider::OutputSchema,
    structured::OutputSpec,
    Agent, AgentEvent,
};
use agent_host::session::{
    Durability, EventBounds, MemoryStorage, Session, SessionStorage, StartError, StoreError,
    StoredEvent, TurnInfo, TurnObserver, TurnOutcome,
};
use agent_host::turn::TurnState;
use agent_mcp::McpManager;
use agent_providers::scripted::{ScriptedProvider, Turn};
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(30);

/// What the observers of a session's turns saw, in order, shared by all of them.
type Log = Arc<watch::Sender<Vec<String>>>;

fn new_log() -> Log {
    Arc::new(watch::channel(Vec::new()).0)
}

fn entries(log: &Log) -> Vec<String> {
    log.borrow().clone()
}

fn push(log: &Log, entry: String) {
    log.send_modify(|entries| entries.push(entry));
}

/// Waits (bounded) until `entry` is logged.
async fn logged(log: &Log, entry: &str) {
    let mut rx = log.subscribe();
    let seen = tokio::time::timeout(WAIT, rx.wait_for(|e| e.iter().any(|e| e == entry))).await;
    assert!(seen.is_ok(), "{entry:?} was not logged: {:?}", entries(log));
}

/// Logs a turn's start, its `RunFinished` (with the session's `busy()` then), its end, and
/// whether it was dropped without a call.
struct Logged {
    name: &'static str,
    log: Log,
    called: bool,
}

impl Logged {
    fn boxed(name: &'static str, log: &Log) -> Box<dyn TurnObserver> {
        Box::new(Self {
            name,
            log: log.clone(),
            called: false,
        })
    }

    fn push(&self, entry: String) {
        push(&self.log, entry);
    }
}

impl TurnObserver for Logged {
    fn started(&mut self, session: &Session, turn: &TurnInfo) {
        self.called = true;
        let kind = match turn.kind {
            RunKind::Prompt => "prompt",
            RunKind::Compact => "compact",
        };
        self.push(format!(
            "{} started {kind} busy={}",
            self.name,
            session.busy()
        ));
    }

    fn observe(&mut self, session: &Session, _: &TurnInfo, _: &TurnState, event: &AgentEvent) {
        match event {
            AgentEvent::RunFinished { .. } => self.push(format!(
                "{} run_finished busy={}",
                self.name,
                session.busy()
            )),
            AgentEvent::RequestStarted {
                scope: RequestScope::Agent,
                ..
            } => self.push(format!("{} request", self.name)),
            _ => {}
        }
    }

    fn finished(&mut self, session: &Session, _turn: &TurnInfo, outcome: &TurnOutcome) {
        assert!(session.active_turn().is_none(), "finished after the turn");
        self.push(format!("{} finished {:?}", self.name, outcome.status));
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if !self.called {
            self.push(format!("{} dropped", self.name));
        }
    }
}

/// Counts `session_start` hooks and sees how many prompts ran before them.
struct Starting {
    log: Log,
}

#[async_trait]
impl Hooks for Starting {
    fn name(&self) -> &str {
        "starting"
    }
    async fn session_start(&self, _ctx: &HookContext, source: SessionSource) -> StartDecision {
        let seen = entries(&self.log).len();
        push(&self.log, format!("session_start {source:?} after {seen}"));
        StartDecision::Keep
    }
}

fn session(turns: Vec<Turn>, log: &Log) -> Arc<Session> {
    let agent = Agent::builder(ScriptedProvider::new(turns))
        .hook(Starting { log: log.clone() })
        .compact_keep_tail(1)
        .build();
    Session::standalone(
        agent,
        "/work/ws",
        Arc::new(MemoryStorage::new()),
        McpManager::empty(),
    )
}

async fn idle(session: &Session) {
    assert!(session.wait_idle(WAIT).await, "the queue drains in time");
}

#[tokio::test]
async fn queued_turns_wait_for_begin_then_run_first_in_first_out() {
    let log = new_log();
    let session = session(
        vec![
            Turn::new().text("one"),
            Turn::new().text("two"),
            Turn::new().text("the summary"),
        ],
        &log,
    );
    assert!(!session.busy(), "nothing queued yet");
    session
        .enqueue_prompt("first", None, Logged::boxed("p1", &log))
        .expect("queued");
    session
        .enqueue_prompt("second", None, Logged::boxed("p2", &log))
        .expect("queued");
    session
        .enqueue_compact(Logged::boxed("c3", &log))
        .expect("queued");
    // Held until `begin`: nothing started, the session counts as busy.
    assert_eq!(session.queued(), 3);
    assert!(session.busy());
    assert!(session.active_turn().is_none());
    assert!(entries(&log).is_empty(), "{:?}", entries(&log));
    assert!(!session.wait_idle(Duration::from_millis(1)).await);

    let reports = session.begin(SessionSource::Startup).await;
    assert!(reports.is_empty() || reports.iter().all(|r| r.hook == "starting"));
    idle(&session).await;
    assert_eq!(
        entries(&log),
        [
            "session_start Startup after 0",
            "p1 started prompt busy=true",
            "p1 request",
            "p1 run_finished busy=true",
            "p1 finished Success",
            "p2 started prompt busy=true",
            "p2 request",
            "p2 run_finished busy=true",
            "p2 finished Success",
            "c3 started compact busy=true",
            "c3 request",
            "c3 run_finished busy=false",
            "c3 finished Success",
        ]
    );
    assert_eq!(session.queued(), 0);
    assert!(!session.busy());
    assert_eq!(session.meta().turn_count, 2, "compactions are no prompts");
}

#[tokio::test]
async fn a_free_session_starts_a_queued_turn_at_once_and_busy_ends_with_run_finished() {
    let log = new_log();
    let session = session(vec![Turn::new().text("hi")], &log);
    session.begin(SessionSource::Startup).await;
    let queued = session
        .enqueue_prompt("go", None, Logged::boxed("p1", &log))
        .expect("started");
    assert!(!queued.is_queued(), "it started at once");
    assert!(queued.turn_id().starts_with("turn_"));
    idle(&session).await;
    assert_eq!(
        entries(&log)[1..],
        [
            "p1 started prompt busy=true",
            "p1 request",
            "p1 run_finished busy=false",
            "p1 finished Success",
        ]
    );
    assert!(!queued.abort(), "the turn is over");
}

#[tokio::test]
async fn abort_current_stops_only_the_running_turn_and_busy_turns_false_at_once() {
    let log = new_log();
    let session = session(
        vec![
            Turn::new().delay(Duration::from_secs(600)).text("never"),
            Turn::new().text("queued too"),
        ],
        &log,
    );
    session.begin(SessionSource::Startup).await;
    let first = session
        .enqueue_prompt("stall", None, Logged::boxed("p1", &log))
        .expect("started");
    session
        .enqueue_prompt("after", None, Logged::boxed("p2", &log))
        .expect("queued");
    assert!(session.busy());
    assert_eq!(session.queued(), 1);
    assert_eq!(
        session.active_turn().map(|t| t.turn_id),
        Some(first.turn_id().to_string())
    );
    // The stalling model call is under way (the first turn of the script is used).
    logged(&log, "p1 request").await;
    assert!(session.abort_current());
    // Not busy from the abort on, while the aborted run winds down and p2 waits.
    assert!(!session.busy());
    assert!(session.wait_idle(WAIT).await, "{:?}", entries(&log));
    assert_eq!(
        entries(&log)[1..],
        [
            "p1 started prompt busy=true",
            "p1 request",
            "p1 run_finished busy=true",
            "p1 finished Aborted",
            "p2 started prompt busy=true",
            "p2 request",
            "p2 run_finished busy=false",
            "p2 finished Success",
        ]
    );
    assert!(!session.abort_current(), "nothing runs or waits");
}

#[tokio::test]
async fn a_queued_turn_aborted_before_it_starts_starts_aborted() {
    let log = new_log();
    let session = session(vec![Turn::new().text("unused")], &log);
    let queued = session
        .enqueue_prompt("go", None, Logged::boxed("p1", &log))
        .expect("queued");
    assert!(queued.is_queued());
    assert!(queued.abort());
    assert!(!session.busy(), "an aborted head is not busy");
    session.begin(SessionSource::Startup).await;
    idle(&session).await;
    assert_eq!(
        entries(&log)[1..],
        [
            "p1 started prompt busy=false",
            "p1 run_finished busy=false",
            "p1 finished Aborted",
        ]
    );
}

#[tokio::test]
async fn dropped_queued_turns_never_start_and_their_observers_get_no_call() {
    let log = new_log();
    let session = session(vec![Turn::new().text("unused")], &log);
    for name in ["p1", "p2"] {
        session
            .enqueue_prompt(name, None, Logged::boxed(name, &log))
            .expect("queued");
    }
    // The Busy mode refuses while turns wait.
    let refused = session.start_prompt("jump", None, Logged::boxed("p3", &log));
    assert!(matches!(refused, Err(StartError::Busy(_))), "{refused:?}");
    assert_eq!(session.drop_queued(), 2);
    assert!(!session.busy());
    assert!(session.wait_idle(WAIT).await);
    session.begin(SessionSource::Startup).await;
    idle(&session).await;
    let log = entries(&log);
    assert_eq!(log.iter().filter(|e| e.ends_with("dropped")).count(), 3);
    assert!(!log.iter().any(|e| e.contains("started")), "{log:?}");
    assert!(session.agent().messages().is_empty());
}

#[tokio::test]
async fn clear_and_set_model_go_through_the_session() {
    let log = new_log();
    let session = session(vec![Turn::new().text("hi")], &log);
    session.begin(SessionSource::Startup).await;
    session
        .enqueue_prompt("go", None, Logged::boxed("p1", &log))
        .expect("started");
    idle(&session).await;
    assert_eq!(session.messages().len(), 2);
    let revision = session.view().revision;
    session.clear().await.expect("cleared");
    assert!(session.messages().is_empty());
    assert!(session.view().revision > revision);
    session.set_model("other-model".into()).await.expect("set");
    assert_eq!(session.agent().state().model, "other-model");
    assert_eq!(session.meta().model, "other-model");
    let stored = session
        .storage()
        .load_meta(session.id())
        .await
        .expect("stored in memory");
    assert_eq!(stored.model, "other-model");
    assert_eq!(session.meta().turn_count, 1);
    assert_eq!(session.view().meta.last_error, None);
}

#[tokio::test]
async fn a_closed_standalone_session_takes_no_more_turns() {
    let log = new_log();
    let session = session(vec![], &log);
    session.begin(SessionSource::Startup).await;
    session
        .close(agent_core::hooks::SessionEndReason::Exit)
        .await;
    let refused = session.enqueue_prompt("late", None, Logged::boxed("p1", &log));
    assert!(matches!(refused, Err(StartError::Closed(_))), "{refused:?}");
    assert_eq!(
        entries(&log),
        ["session_start Startup after 0", "p1 dropped"]
    );
}

fn event(seq: u64) -> StoredEvent {
    StoredEvent::new(seq, format!("{{\"n\":{seq}}}")).expect("json")
}

#[tokio::test]
async fn memory_storage_keeps_the_event_log_contract() {
    let store = MemoryStorage::new();
    assert_eq!(
        store.event_bounds("s").await.expect("bounds"),
        EventBounds::EMPTY
    );
    store
        .append_events("s", &[event(1), event(2), event(3)], Durability::Buffered)
        .await
        .expect("appended");
    let conflict = store
        .append_events("s", &[event(5)], Durability::Sync)
        .await;
    assert!(
        matches!(conflict, Err(StoreError::Conflict { .. })),
        "{conflict:?}"
    );
    let after = store.read_events("s", 1, 10).await.expect("read");
    assert_eq!(after, [event(2), event(3)]);
    assert_eq!(
        store.read_events("s", 0, 1).await.expect("read"),
        [event(1)]
    );
    let trimmed = store.trim_events("s", 10).await.expect("trimmed");
    assert_eq!(
        trimmed,
        EventBounds { oldest: 3, last: 3 },
        "the last one stays"
    );
    store
        .append_events("s", &[event(4)], Durability::Buffered)
        .await
        .expect("appended after a trim");
    assert_eq!(
        store.event_bounds("s").await.expect("bounds"),
        EventBounds { oldest: 3, last: 4 }
    );
    assert!(matches!(
        store.load_meta("nope").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.list_meta().await.expect("list").is_empty());
}

/// Records what the `session_end` hooks were told, and stalls `session_start` when asked.
struct Ending {
    log: Log,
    stall_start: bool,
}

#[async_trait]
impl Hooks for Ending {
    fn name(&self) -> &str {
        "ending"
    }
    async fn session_start(&self, _ctx: &HookContext, _source: SessionSource) -> StartDecision {
        push(&self.log, "session_start entered".into());
        if self.stall_start {
            std::future::pending::<()>().await;
        }
        StartDecision::Keep
    }
    async fn session_end(&self, _ctx: &HookContext, end: &SessionEnd) {
        push(
            &self.log,
            format!("session_end {:?} turns={:?}", end.last_status, end.turns),
        );
    }
}

fn ending_session(provider: ScriptedProvider, log: &Log, stall_start: bool) -> Arc<Session> {
    let hook = Ending {
        log: log.clone(),
        stall_start,
    };
    let agent = Agent::builder(provider).hook(hook).build();
    Session::standalone(
        agent,
        "/work/ws",
        Arc::new(MemoryStorage::new()),
        McpManager::empty(),
    )
}

#[tokio::test]
async fn a_dropped_begin_lets_the_queue_go() {
    let log = new_log();
    let session = ending_session(ScriptedProvider::new([Turn::new().text("hi")]), &log, true);
    session
        .enqueue_prompt("go", None, Logged::boxed("p1", &log))
        .expect("queued");
    // The host stops waiting for a `session_start` hook that never ends.
    tokio::select! {
        _ = session.begin(SessionSource::Startup) => panic!("the hook never ends"),
        _ = logged(&log, "session_start entered") => {}
    }
    idle(&session).await;
    assert_eq!(
        entries(&log)[1..],
        [
            "p1 started prompt busy=true",
            "p1 request",
            "p1 run_finished busy=false",
            "p1 finished Success",
        ]
    );
}

#[tokio::test]
async fn a_structured_turn_asks_for_the_schema_and_session_end_counts_the_last_run_s_model_calls() {
    let log = new_log();
    let provider =
        ScriptedProvider::new([Turn::new().text("plain"), Turn::new().text("{\"a\":1}")]);
    let session = ending_session(provider.clone(), &log, false);
    session.begin(SessionSource::Startup).await;
    session
        .enqueue_prompt("first", None, Logged::boxed("p1", &log))
        .expect("started");
    let schema = OutputSchema {
        name: "answer".into(),
        schema: serde_json::json!({"type": "object"}),
        strict: false,
    };
    let spec = OutputSpec::new(schema, |answer| match answer.starts_with('{') {
        true => Ok(()),
        false => Err("not an object".into()),
    });
    session
        .enqueue_structured("second", spec, Logged::boxed("p2", &log))
        .expect("queued");
    idle(&session).await;
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].output_schema.is_none());
    assert_eq!(
        requests[1].output_schema.as_ref().map(|s| s.name.as_str()),
        Some("answer")
    );
    assert_eq!(session.meta().turn_count, 2);
    session.close(SessionEndReason::Exit).await;
    // The last run made one model call; the session took two prompts.
    assert_eq!(
        entries(&log).last().map(String::as_str),
        Some("session_end Some(Success) turns=Some(1)")
    );
}
