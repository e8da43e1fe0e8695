//! The session host with the process capabilities: sub-agent sessions from `Task` calls,
//! `session_start` / `session_end` hooks, per-session MCP servers and closing.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    async_trait,
    hooks::{HookContext, Hooks, SessionEnd, SessionEndReason, SessionSource, StartDecision},
    AgentEvent,
};
use agent_host::capabilities::Capabilities;
use agent_host::cli::CapabilityArgs;
use agent_host::session::{
    AgentFactory, CreateOptions, FileStore, ManagerError, ResumeOptions, Session, SessionManager,
    StartError, SubagentStatus, TurnInfo, TurnObserver, TurnOutcome,
};
use agent_mcp::{McpServerConfig, ServerState};
use agent_providers::{ProviderConfig, ProviderId};
use serde_json::json;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(30);

/// Sends every event and the outcome of a turn to a channel.
struct Collect(mpsc::UnboundedSender<Result<AgentEvent, TurnOutcome>>);

impl TurnObserver for Collect {
    fn started(&mut self, _session: &Session, _turn: &TurnInfo) {}
    fn event(&mut self, _session: &Session, _turn: &TurnInfo, event: &AgentEvent) {
        let _ = self.0.send(Ok(event.clone()));
    }
    fn finished(&mut self, _session: &Session, _turn: &TurnInfo, outcome: &TurnOutcome) {
        let _ = self.0.send(Err(outcome.clone()));
    }
}

/// Runs one prompt; returns its events and outcome.
async fn run(session: &Arc<Session>, prompt: &str) -> (Vec<AgentEvent>, TurnOutcome) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    session
        .start_prompt(prompt, None, Box::new(Collect(tx)))
        .expect("turn starts");
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("turn ends in time")
            .expect("observer alive");
        match next {
            Ok(event) => events.push(event),
            Err(outcome) => return (events, outcome),
        }
    }
}

fn script(dir: &Path, turns: serde_json::Value) -> ProviderConfig {
    let path = dir.join("script.json");
    std::fs::write(
        &path,
        json!({"model": "scripted-test", "turns": turns}).to_string(),
    )
    .expect("script");
    let mut config = ProviderConfig::new(ProviderId::Scripted);
    config.script = Some(path);
    config
}

fn manager(dir: &Path, config: ProviderConfig, caps: Capabilities) -> SessionManager {
    let (tx, _rx) = mpsc::unbounded_channel();
    // Interactions are not answered here: every test runs in yolo mode.
    std::mem::forget(_rx);
    SessionManager::new(
        AgentFactory::new(config).capabilities(caps),
        FileStore::new(dir.join("data")),
        tx,
    )
}

fn workspace(dir: &Path) -> String {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    ws.display().to_string()
}

fn yolo(ws: &str) -> CreateOptions {
    CreateOptions {
        workspace_path: ws.to_string(),
        mode: Some(agent_host::session::SessionMode::Yolo),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_call_makes_a_sub_agent_session_with_its_transcript_status_and_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    std::fs::write(Path::new(&ws).join("notes.txt"), "the word is hello\n").expect("notes");
    let task = json!({"name": "explorer", "description": "read the notes",
                      "prompt": "What do the notes say?"})
    .to_string();
    // The scripted model plays the parent's call, then the child's two, then the parent's
    // answer (the child shares the parent's provider).
    let config = script(
        dir.path(),
        json!([
            {"steps": [{"tool_call": {"id": "t1", "name": "Task", "args": [task]}},
                       {"usage": {"input": 10, "output": 2}}]},
            {"steps": [{"tool_call": {"id": "k1", "name": "read_file",
                                      "args": ["{\"path\":\"notes.txt\"}"]}},
                       {"usage": {"input": 5, "output": 1}}]},
            {"steps": [{"text": "The notes say hello."}, {"usage": {"input": 6, "output": 3}}]},
            {"steps": [{"text": "The explorer says hello."}, {"usage": {"input": 20, "output": 4}}]}
        ]),
    );
    let caps = Capabilities::load(&CapabilityArgs::default(), Path::new(&ws)).expect("caps");
    let manager = manager(dir.path(), config, caps);
    let parent = manager.create(yolo(&ws)).await.expect("session");
    let (events, outcome) = run(&parent, "ask the explorer").await;
    assert_eq!(
        outcome.final_text.as_deref(),
        Some("The explorer says hello.")
    );
    let task_id = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SubagentStarted { task_id, .. } => Some(task_id.clone()),
            _ => None,
        })
        .expect("a sub-agent started");

    // The child is a session of its own, found by id, listed by its parent.
    let child = manager.get(&task_id).expect("the sub-agent's session");
    assert!(child.is_subagent());
    assert_eq!(parent.subagents().len(), 1);
    let meta = child.meta();
    assert_eq!(meta.parent_session_id.as_deref(), Some(parent.id()));
    assert_eq!(meta.title, "explorer: read the notes");
    let sub = meta.subagent.clone().expect("sub-agent facts");
    assert_eq!(sub.status, SubagentStatus::Completed);
    assert_eq!(sub.call_id, "t1");
    assert_eq!(sub.final_text.as_deref(), Some("The notes say hello."));
    assert_eq!(meta.usage.total_tokens(), 15, "the child's two calls");
    assert!(child.active_turn().is_none());
    // Parent usage includes the child's.
    assert_eq!(outcome.usage.total_tokens(), 12 + 15 + 24);
    assert_eq!(parent.meta().usage.total_tokens(), 12 + 15 + 24);
    // Its transcript is what it recorded.
    let texts: Vec<String> = child
        .messages()
        .iter()
        .map(|m| agent_host::text::text_of(&m.content))
        .collect();
    assert!(
        texts.iter().any(|t| t == "The notes say hello."),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains("What do the notes say?")));
    // The parent's call knows its child.
    assert_eq!(
        parent.tool_call("t1").and_then(|c| c.subagent),
        Some(task_id.clone())
    );
    // It takes no prompts; it is not a root session in the list, but its parent lists it.
    let (tx, _rx) = mpsc::unbounded_channel();
    assert!(matches!(
        child.start_prompt("hi", None, Box::new(Collect(tx))),
        Err(StartError::Subagent { .. })
    ));
    let listed = manager.list().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].session_id, parent.id());
    let subs = manager.subagents(parent.id()).await.expect("subagents");
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].session_id, task_id);

    // After a restart: stored, listed under its parent, and loadable as a session.
    manager.shutdown(WAIT).await;
    let config = script(dir.path(), json!([]));
    let caps = Capabilities::load(&CapabilityArgs::default(), Path::new(&ws)).expect("caps");
    let again = self::manager(dir.path(), config, caps);
    let subs = again.subagents(parent.id()).await.expect("subagents");
    assert_eq!(subs.len(), 1);
    assert_eq!(
        subs[0].subagent.as_ref().map(|s| s.status),
        Some(SubagentStatus::Completed)
    );
    let (loaded, _) = again.resume(&task_id).await.expect("resumes");
    assert!(loaded
        .messages()
        .iter()
        .any(|m| agent_host::text::text_of(&m.content) == "The notes say hello."));
}

/// Counts session hooks.
#[derive(Default)]
struct Counting {
    seen: Mutex<Vec<String>>,
}

#[async_trait]
impl Hooks for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    async fn session_start(&self, _ctx: &HookContext, source: SessionSource) -> StartDecision {
        self.seen
            .lock()
            .expect("lock")
            .push(format!("start:{source:?}"));
        StartDecision::Keep
    }
    async fn session_end(&self, _ctx: &HookContext, end: &SessionEnd) {
        self.seen
            .lock()
            .expect("lock")
            .push(format!("end:{:?}", end.reason));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_hooks_run_at_create_resume_close_and_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let hooks = Arc::new(Counting::default());
    let mut caps = Capabilities::load(&CapabilityArgs::default(), Path::new(&ws)).expect("caps");
    caps.hooks.push(hooks.clone());
    let manager = manager(dir.path(), script(dir.path(), json!([])), caps.clone());
    let a = manager.create(yolo(&ws)).await.expect("a");
    let b = manager.create(yolo(&ws)).await.expect("b");
    manager.close(a.id(), WAIT).await.expect("a was active");
    assert!(manager.get(a.id()).is_none());
    assert!(a.is_closed());
    let (tx, _rx) = mpsc::unbounded_channel();
    assert!(matches!(
        a.start_prompt("hi", None, Box::new(Collect(tx))),
        Err(StartError::Closed(_))
    ));
    let (again, loaded) = manager.resume(a.id()).await.expect("resumes");
    assert!(loaded);
    manager.shutdown(WAIT).await;
    drop((again, b));
    let seen = hooks.seen.lock().expect("lock").clone();
    assert_eq!(
        seen.iter().filter(|s| *s == "start:Startup").count(),
        2,
        "{seen:?}"
    );
    assert_eq!(seen.iter().filter(|s| *s == "start:Resume").count(), 1);
    assert_eq!(
        seen.iter()
            .filter(|s| **s == format!("end:{:?}", SessionEndReason::Other))
            .count(),
        1,
        "{seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|s| **s == format!("end:{:?}", SessionEndReason::Exit))
            .count(),
        2,
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mcp_servers_connect_per_session_and_failures_are_reported_not_fatal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let caps = Capabilities::load(&CapabilityArgs::default(), Path::new(&ws)).expect("caps");
    let manager = manager(
        dir.path(),
        script(dir.path(), json!([{"steps": [{"text": "still works"}]}])),
        caps,
    );
    // No servers: nothing connects.
    let plain = manager.create(yolo(&ws)).await.expect("plain");
    assert!(plain.mcp().is_empty());
    // A server that does not exist is skipped with its reason; the session works.
    let mut options = yolo(&ws);
    options.mcp_servers = vec![McpServerConfig::stdio(
        "ghost",
        dir.path().join("no-such-server").display().to_string(),
    )];
    let session = manager.create(options).await.expect("session");
    let status = session.mcp().status();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].name, "ghost");
    assert!(
        matches!(&status[0].state, ServerState::Failed { reason } if !reason.is_empty()),
        "{status:?}"
    );
    let (_, outcome) = run(&session, "go").await;
    assert_eq!(outcome.final_text.as_deref(), Some("still works"));
    // Two servers with one name: an error, and nothing is created.
    let mut options = yolo(&ws);
    options.mcp_servers = vec![
        McpServerConfig::stdio("twin", "true"),
        McpServerConfig::stdio("twin", "true"),
    ];
    let before = manager.list().await.expect("list").len();
    let err = manager.create(options).await.expect_err("duplicate names");
    assert!(matches!(err, ManagerError::Factory(_)), "{err}");
    assert!(err.to_string().contains("twin"), "{err}");
    assert_eq!(manager.list().await.expect("list").len(), before);
    // Resume options apply when a session is loaded now.
    manager.close(plain.id(), WAIT).await.expect("closed");
    let (resumed, loaded) = manager
        .resume_with(
            plain.id(),
            ResumeOptions {
                mcp_servers: vec![McpServerConfig::stdio("late", "/nonexistent/late")],
            },
        )
        .await
        .expect("resumed");
    assert!(loaded);
    assert_eq!(resumed.mcp().status()[0].name, "late");
    manager.shutdown(WAIT).await;
}
