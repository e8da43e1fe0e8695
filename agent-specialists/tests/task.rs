//! The `Task` tools in the agent loop, with the real coding tools and scripted models:
//! foreground tasks here, background ones in `task/background.rs`, manifests in
//! `task/manifests.rs`.

#[path = "task/background.rs"]
mod background;
#[path = "task/manifests.rs"]
mod manifests;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    async_trait,
    event::ToolStatus,
    provider::{ProviderErrorKind, ProviderRequest, ProviderStream},
    session::{MemorySessionStore, SessionRecord, SessionStore},
    tool::ProgressStream,
    Agent, AgentEvent, ContentBlock, PermissionMode, Provider, Run, RunStatus, SideEffect, Tool,
    ToolContext, ToolError, ToolOutput, Usage,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_specialists::{SpecialistPaths, SpecialistRegistry, TaskTools};
use agent_tools::ToolSet;
use futures::StreamExt;
use serde_json::{json, Value};
use test_support::procs::{alive, wait_gone};

/// Every wait is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

async fn collect(run: Run) -> Vec<AgentEvent> {
    tokio::time::timeout(WAIT, run.collect_events())
        .await
        .expect("the run finished in time")
}

/// A provider that answers each request with the turn `reply` makes of it.
struct Router<F>(F);

impl<F> Provider for Router<F>
where
    F: Fn(&ProviderRequest) -> Turn + Send + Sync + 'static,
{
    fn id(&self) -> &str {
        "router"
    }
    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let turn = (self.0)(&request);
        ScriptedProvider::new([turn]).stream(request)
    }
}

/// True when `request` is a specialist child's (by its system prompt).
fn child_of(request: &ProviderRequest, name: &str) -> bool {
    request
        .system
        .as_deref()
        .is_some_and(|s| s.contains(&format!("Specialist: {name}\n")))
}

/// Model calls so far in this transcript (assistant messages).
fn step(request: &ProviderRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == agent_core::message::Role::Assistant)
        .count()
}

/// The text of every tool result in the transcript.
fn tool_texts(request: &ProviderRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(
                content
                    .iter()
                    .filter_map(|c| match c {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn task_ids(texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| l.strip_prefix("task_id: "))
        .map(|id| id.trim().to_string())
        .collect()
}

fn unwrap_child(events: &[AgentEvent]) -> Vec<AgentEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Subagent { event, .. } => Some((**event).clone()),
            _ => None,
        })
        .collect()
}

fn result_of<'a>(events: &'a [AgentEvent], call: &str) -> (&'a ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } if id == call => Some((
                status,
                content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}"))
}

fn last_cumulative(events: &[AgentEvent]) -> Usage {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            AgentEvent::Usage { cumulative, .. } => Some(*cumulative),
            _ => None,
        })
        .expect("a top-level usage event")
}

fn task_call(id: &str, name: &str, prompt: &str, background: bool) -> (String, String, String) {
    let args = json!({
        "name": name,
        "description": format!("{name} task"),
        "prompt": prompt,
        "run_in_background": background,
    });
    (id.to_string(), "Task".to_string(), args.to_string())
}

fn agent_with(
    provider: impl Provider,
    workspace: &Path,
    registry: SpecialistRegistry,
    configure: impl FnOnce(TaskTools) -> TaskTools,
) -> agent_core::AgentBuilder {
    Agent::builder(provider)
        .tools(ToolSet::defaults(workspace).into_tools())
        .tools(configure(TaskTools::new(registry)).build())
        .cwd(workspace)
}

#[tokio::test]
async fn the_explorer_reads_cannot_write_and_its_answer_is_the_task_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the secret word is hello\n").unwrap();
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        if child_of(request, "explorer") {
            return match step(request) {
                0 => Turn::new()
                    .tool_call("k1", "read_file", r#"{"path":"notes.txt"}"#)
                    .tool_call("k2", "write_file", r#"{"path":"pwned.txt","content":"x"}"#)
                    .usage(7, 2),
                _ => Turn::new().text("The notes say: hello.").usage(5, 1),
            };
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "explorer", "What do the notes say?", false);
                Turn::new().tool_call(id, name, args).usage(10, 3)
            }
            _ => Turn::new().text("The explorer found: hello.").usage(20, 4),
        }
    });
    let store = Arc::new(MemorySessionStore::new());
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| t)
        .session(store.clone(), "parent")
        .build();
    let events = collect(agent.prompt("Ask the explorer about the notes.")).await;

    // The parent finished; the child's answer is the Task result, headed by its task id.
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) })
            if t == "The explorer found: hello."
    ));
    let (status, text) = result_of(&events, "c1");
    assert_eq!(*status, ToolStatus::Ok);
    assert!(text.starts_with("task_id: specialist_"), "{text}");
    assert!(text.ends_with("\n\nThe notes say: hello."), "{text}");
    let task_id = task_ids(&[text])[0].clone();

    // The child read with read_file; write_file is not among its tools.
    let inner = unwrap_child(&events);
    let (read, read_text) = result_of(&inner, "k1");
    assert_eq!((*read, read_text.contains("hello")), (ToolStatus::Ok, true));
    let (write, write_text) = result_of(&inner, "k2");
    assert_eq!(*write, ToolStatus::Error);
    assert!(
        write_text.contains("unknown tool: write_file"),
        "{write_text}"
    );
    assert!(!dir.path().join("pwned.txt").exists());
    let requests = seen.lock().unwrap().clone();
    let child = requests
        .iter()
        .find(|r| child_of(r, "explorer"))
        .expect("a child request");
    let mut tools: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    tools.sort();
    // view_image only reads, so the read-only explorer has it too.
    assert_eq!(
        tools,
        ["glob", "grep", "list_dir", "read_file", "view_image"]
    );
    let system = child.system.as_deref().unwrap_or_default();
    assert!(system.contains("read-only codebase exploration specialist"));
    assert!(system.contains("Task description: explorer task"));
    assert!(child.messages[0].text().contains("What do the notes say?"));
    let parent_tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(parent_tools.contains(&"Task") && parent_tools.contains(&"TaskOutput"));

    // Usage: parent and child add up, and the child's is reported on its own.
    let total = last_cumulative(&events);
    assert_eq!(
        (total.input, total.output),
        (10 + 7 + 5 + 20, 3 + 2 + 1 + 4)
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::SubagentFinished { usage, task_id: id, .. }
            if (usage.input, usage.output) == (12, 3) && *id == task_id
    )));

    // The child's transcript is in the parent's store under its task id.
    let records = store.load(&task_id).await.expect("the child session");
    let messages = SessionRecord::replay(&records);
    assert_eq!(
        messages.last().map(|m| m.text()).as_deref(),
        Some("The notes say: hello.")
    );
}

#[tokio::test]
async fn a_failing_specialist_is_the_task_error_and_the_parent_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Router(|request: &ProviderRequest| {
        if child_of(request, "code-review") {
            return Turn::new()
                .tool_call("k1", "list_dir", r#"{"path":"."}"#)
                .error(ProviderErrorKind::Server, "the model is down");
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "code-review", "Review it.", false);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("The review failed; reporting that."),
        }
    });
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| t).build();
    let events = collect(agent.prompt("Review.")).await;
    let (status, text) = result_of(&events, "c1");
    assert_eq!(*status, ToolStatus::Error);
    assert!(
        text.contains("specialist code-review failed: the model is down"),
        "{text}"
    );
    assert!(text.contains("task_id: specialist_"), "{text}");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::SubagentFinished {
            status: RunStatus::Error,
            ..
        }
    )));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}

#[tokio::test]
async fn an_unknown_specialist_lists_the_available_ones() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Router(|request: &ProviderRequest| match step(request) {
        0 => {
            let (id, name, args) = task_call("c1", "validator", "Check it.", false);
            Turn::new().tool_call(id, name, args)
        }
        _ => Turn::new().text("ok"),
    });
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| t).build();
    let events = collect(agent.prompt("go")).await;
    let (status, text) = result_of(&events, "c1");
    assert_eq!(*status, ToolStatus::Error);
    assert!(
        text.contains("\"validator\" not found. Available: code-review, explorer, worker"),
        "{text}"
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::SubagentStarted { .. })));
}

/// A command that starts a background and a foreground `sleep` and prints the shell's and
/// both sleeps' pids.
const SLEEPER: &str = "sleep 300 & bg=$!; sleep 301 & fg=$!; echo \"PIDS $$ $bg $fg\"; wait";

#[tokio::test]
async fn aborting_the_parent_during_a_child_bash_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Router(|request: &ProviderRequest| {
        if child_of(request, "worker") {
            return match step(request) {
                0 => Turn::new().tool_call("k1", "bash", json!({"command": SLEEPER}).to_string()),
                _ => Turn::new().text("never"),
            };
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "worker", "Run the sleeper.", false);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("never either"),
        }
    });
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| t)
        .permission_mode(PermissionMode::Unsafe)
        .build();
    let mut run = agent.prompt("Run the sleeper through the worker.");
    let mut seen = Vec::new();
    let pids: Vec<i32> = tokio::time::timeout(WAIT, async {
        loop {
            let event = run.next().await.expect("the run goes on");
            let found = match event.innermost() {
                AgentEvent::ToolProgress {
                    stream: ProgressStream::Stdout,
                    text,
                    ..
                } => text
                    .lines()
                    .find_map(|l| l.strip_prefix("PIDS "))
                    .map(|line| {
                        line.split_whitespace()
                            .filter_map(|p| p.parse().ok())
                            .collect::<Vec<i32>>()
                    }),
                _ => None,
            };
            seen.push(event);
            if let Some(pids) = found {
                return pids;
            }
        }
    })
    .await
    .expect("the child's bash printed its pids");
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|p| alive(*p)));
    // The child's progress came wrapped, never as the parent's own.
    assert!(!seen
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolProgress { .. })));
    run.abort();
    let rest = collect(run).await;
    assert!(matches!(
        rest.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Aborted,
            ..
        })
    ));
    let survivors = wait_gone(&pids, WAIT).await;
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
}

#[tokio::test]
async fn nesting_needs_the_host_to_allow_it() {
    for (max_depth, has_task) in [(1, false), (2, true)] {
        let dir = tempfile::tempdir().unwrap();
        let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
        let log = seen.clone();
        let provider = Router(move |request: &ProviderRequest| {
            log.lock().unwrap().push(request.clone());
            if child_of(request, "worker") {
                return Turn::new().text("worked");
            }
            match step(request) {
                0 => {
                    let (id, name, args) = task_call("c1", "worker", "Work.", false);
                    Turn::new().tool_call(id, name, args)
                }
                _ => Turn::new().text("done"),
            }
        });
        let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| {
            t.max_depth(max_depth)
        })
        .build();
        collect(agent.prompt("go")).await;
        let requests = seen.lock().unwrap().clone();
        let child = requests.iter().find(|r| child_of(r, "worker")).unwrap();
        let names: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.contains(&"Task"), has_task, "{names:?}");
        assert!(
            names.contains(&"bash") && names.contains(&"write_file") && names.contains(&"plan")
        );
    }
}

#[tokio::test]
async fn a_child_stops_at_its_step_limit_and_the_task_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        if child_of(request, "explorer") {
            // Never answers: one more read every call.
            let id = format!("k{}", step(request));
            return Turn::new().tool_call(id, "read_file", r#"{"path":"a.txt"}"#);
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "explorer", "Read forever.", false);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("the child gave up"),
        }
    });
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| {
        t.max_steps(3)
    })
    .build();
    let events = collect(agent.prompt("go")).await;
    let requests = seen.lock().unwrap().clone();
    let child_calls = requests.iter().filter(|r| child_of(r, "explorer")).count();
    assert_eq!(child_calls, 3, "the child made more calls than its limit");
    let (status, text) = result_of(&events, "c1");
    assert_eq!(*status, ToolStatus::Error);
    assert!(
        text.contains("specialist explorer failed") && text.contains("step limit"),
        "{text}"
    );
    // The parent's own limit is untouched: it finished.
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) })
            if t == "the child gave up"
    ));
}
