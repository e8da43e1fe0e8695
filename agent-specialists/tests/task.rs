//! The `Task` tools in the agent loop, with the real coding tools and scripted models.

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
    assert_eq!(tools, ["glob", "grep", "list_dir", "read_file"]);
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
async fn two_background_tasks_are_read_with_task_output() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Router(|request: &ProviderRequest| {
        if child_of(request, "explorer") {
            let prompt = request.messages[0].text();
            let (answer, usage) = match prompt.contains("alpha") {
                true => ("alpha result", (3, 1)),
                false => ("beta result", (5, 1)),
            };
            return Turn::new().text(answer).usage(usage.0, usage.1);
        }
        match step(request) {
            0 => {
                let (a, name, args_a) = task_call("c1", "explorer", "Look at alpha.", true);
                let (b, _, args_b) = task_call("c2", "explorer", "Look at beta.", true);
                Turn::new()
                    .tool_call(a, name.clone(), args_a)
                    .tool_call(b, name, args_b)
                    .usage(10, 1)
            }
            1 => {
                let ids = task_ids(&tool_texts(request));
                assert_eq!(ids.len(), 2, "two task ids in {:?}", tool_texts(request));
                let mut turn = Turn::new();
                for (i, id) in ids.iter().enumerate() {
                    turn = turn.tool_call(
                        format!("o{}", i + 1),
                        "TaskOutput",
                        json!({"task_id": id, "block": true, "timeout": 30000}).to_string(),
                    );
                }
                turn.usage(10, 1)
            }
            _ => Turn::new().text("Both done.").usage(10, 1),
        }
    });
    let agent = agent_with(provider, dir.path(), SpecialistRegistry::builtin(), |t| t).build();
    let events = collect(agent.prompt("Explore alpha and beta in the background.")).await;

    for call in ["c1", "c2"] {
        let (status, text) = result_of(&events, call);
        assert_eq!(*status, ToolStatus::Ok);
        assert!(
            text.starts_with("Task launched in background.\ntask_id: specialist_"),
            "{text}"
        );
    }
    let (_, first) = result_of(&events, "o1");
    let (_, second) = result_of(&events, "o2");
    assert!(
        first.contains("status: completed") && first.contains("output:\nalpha result"),
        "{first}"
    );
    assert!(
        second.contains("status: completed") && second.contains("output:\nbeta result"),
        "{second}"
    );
    let started = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::SubagentStarted {
                    background: true,
                    ..
                }
            )
        })
        .count();
    let finished = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::SubagentFinished {
                    status: RunStatus::Success,
                    ..
                }
            )
        })
        .count();
    assert_eq!((started, finished), (2, 2));
    // Background children's usage is in the parent's total too.
    let total = last_cumulative(&events);
    assert_eq!((total.input, total.output), (10 + 3 + 5 + 10 + 10, 5));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) }) if t == "Both done."
    ));
}

/// A read tool that blocks until its call is cancelled.
struct Hang;

#[async_trait]
impl Tool for Hang {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> &str {
        "Waits forever."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.cancel.cancelled().await;
        Err(ToolError::Cancelled("stopped".into()))
    }
}

#[tokio::test]
async fn background_tasks_are_bounded_stoppable_and_stopped_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Router(|request: &ProviderRequest| {
        if child_of(request, "explorer") {
            return match step(request) {
                0 => Turn::new().tool_call("k1", "hang", "{}"),
                _ => Turn::new().text("stopped early"),
            };
        }
        match step(request) {
            // One task runs, so a second is refused; a third starts after a TaskStop.
            0 => {
                let (id, name, args) = task_call("c1", "explorer", "Wait one.", true);
                Turn::new().tool_call(id, name, args)
            }
            1 => {
                let (id, name, args) = task_call("c2", "explorer", "Wait two.", true);
                Turn::new().tool_call(id, name, args)
            }
            2 => {
                let id = task_ids(&tool_texts(request))[0].clone();
                Turn::new().tool_call("s1", "TaskStop", json!({"task_id": id}).to_string())
            }
            3 => {
                let (id, name, args) = task_call("c3", "explorer", "Wait three.", true);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("leaving one running"),
        }
    });
    let (task_tools, tasks) = TaskTools::new(SpecialistRegistry::builtin())
        .max_background(1)
        .build_with_tasks();
    let agent = Agent::builder(provider)
        .tools(ToolSet::defaults(dir.path()).into_tools())
        .tool(Hang)
        .tools(task_tools)
        .cwd(dir.path())
        .build();
    let events = collect(agent.prompt("go")).await;
    // The host's handle sees both tasks, ended.
    let kept = tasks.list();
    assert_eq!(kept.len(), 2);
    assert_eq!(tasks.running(), 0);
    assert!(kept
        .iter()
        .all(|c| c.outcome().map(|o| o.status) == Some(RunStatus::Aborted)));
    assert_eq!(tasks.stop(kept[0].task_id()), Some(false));
    assert_eq!(tasks.stop("specialist_nope"), None);
    assert_eq!(*result_of(&events, "c1").0, ToolStatus::Ok);
    let (refused, text) = result_of(&events, "c2");
    assert_eq!(*refused, ToolStatus::Error);
    assert!(text.contains("the limit is 1"), "{text}");
    let (stopped, text) = result_of(&events, "s1");
    assert_eq!(*stopped, ToolStatus::Ok);
    assert!(text.ends_with("status: killed"), "{text}");
    assert_eq!(*result_of(&events, "c3").0, ToolStatus::Ok);
    // Both children ended aborted: the first by TaskStop, the last with the run, before
    // its RunFinished.
    let ends: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e,
                AgentEvent::SubagentFinished {
                    status: RunStatus::Aborted,
                    ..
                }
            )
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[1], events.len() - 2);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}

#[tokio::test]
async fn a_project_manifest_overrides_the_builtin_and_the_user_one() {
    let ws = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    std::fs::write(
        user.path().join("explorer.md"),
        "---\nname: explorer\ndescription: User explorer.\n---\nUser prompt.\n",
    )
    .unwrap();
    std::fs::write(
        user.path().join("docs.md"),
        "---\nname: docs\ndescription: Writes docs.\ntools: [edit]\n---\nWrite docs.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("explorer.md"),
        "---\nname: explorer\ndescription: Project explorer.\ntools:\n  - read-only\n  - plan\n---\n\nProject explorer prompt: look in src/ first.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("strict-review.md"),
        "---\nname: strict-review\nextends: code-review\nreasoningEffort: high\n---\nBe strict about tests.\n",
    )
    .unwrap();
    let paths = SpecialistPaths {
        user: Some(user.path().to_path_buf()),
        project: Some(project_dir.clone()),
    };
    let registry = SpecialistRegistry::load(&paths);
    assert!(registry.errors().is_empty(), "{:?}", registry.errors());
    assert_eq!(
        registry.names(),
        ["code-review", "docs", "explorer", "strict-review", "worker"]
    );
    let explorer = registry.get("explorer").unwrap();
    assert_eq!(explorer.location, agent_specialists::Location::Project);
    assert_eq!(explorer.description, "Project explorer.");
    assert_eq!(
        registry.get("docs").unwrap().location,
        agent_specialists::Location::User
    );
    let strict = registry.get("strict-review").unwrap();
    assert_eq!(
        strict.description,
        registry.get("code-review").unwrap().description
    );
    assert!(strict
        .system_prompt
        .starts_with("You are a code review specialist"));
    assert!(strict.system_prompt.ends_with("\n\nBe strict about tests."));
    assert_eq!(strict.reasoning, Some(agent_core::ReasoningLevel::High));

    // Through Task, the child runs the project's prompt and tools.
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        if child_of(request, "explorer") {
            return Turn::new().text("project explorer here");
        }
        match step(request) {
            0 => {
                let (id, name, args) = task_call("c1", "explorer", "Who are you?", false);
                Turn::new().tool_call(id, name, args)
            }
            _ => Turn::new().text("done"),
        }
    });
    let agent = agent_with(provider, ws.path(), registry, |t| t).build();
    let events = collect(agent.prompt("go")).await;
    assert!(result_of(&events, "c1")
        .1
        .ends_with("project explorer here"));
    let requests = seen.lock().unwrap().clone();
    let child = requests.iter().find(|r| child_of(r, "explorer")).unwrap();
    assert!(child
        .system
        .as_deref()
        .unwrap()
        .contains("Project explorer prompt: look in src/ first."));
    let mut tools: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    tools.sort();
    assert_eq!(tools, ["glob", "grep", "list_dir", "plan", "read_file"]);
    // The Task description lists the project's specialists.
    let task = requests[0].tools.iter().find(|t| t.name == "Task").unwrap();
    assert!(task.description.contains("- explorer: Project explorer."));
    assert!(task.description.contains("- docs: Writes docs."));
}

#[tokio::test]
async fn a_malformed_manifest_is_an_error_naming_its_file_and_line() {
    let ws = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    let bad = project_dir.join("bad.md");
    std::fs::write(
        &bad,
        "---\nname: bad\ndescription: Broken.\ntools:\n  - read-only\n  - Task\n---\nprompt\n",
    )
    .unwrap();
    let syntax = project_dir.join("syntax.md");
    std::fs::write(
        &syntax,
        "---\nname: syntax\nthis line has no colon\n---\nprompt\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("cycle.md"),
        "---\nname: cycle\nextends: cycle\n---\n",
    )
    .unwrap();
    std::fs::write(project_dir.join("notes.txt"), "not a manifest").unwrap();
    std::fs::write(
        project_dir.join("good.md"),
        "---\nname: good\ndescription: Fine.\n---\nFine prompt.\n",
    )
    .unwrap();
    let registry = SpecialistRegistry::load(&SpecialistPaths {
        user: None,
        project: Some(project_dir.clone()),
    });
    let mut errors: Vec<String> = registry.errors().iter().map(|e| e.to_string()).collect();
    errors.sort();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("{}:6: ", bad.display()))
            && errors[0].contains("cannot be given \"Task\""),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("cycle.md:3: ") && errors[1].contains("cycle"),
        "{errors:?}"
    );
    assert!(
        errors[2].starts_with(&format!("{}:3: ", syntax.display()))
            && errors[2].contains("expected `key: value`"),
        "{errors:?}"
    );
    assert_eq!(
        registry.names(),
        ["code-review", "explorer", "good", "worker"]
    );
    // Zero skips a bad manifest with a warning but fails on a broken `extends`.
    let fatal = registry.fatal_error().expect("the cycle is fatal to Zero");
    assert_eq!(fatal.kind, agent_specialists::ManifestErrorKind::Extends);
    assert!(fatal.path.ends_with("cycle.md"));
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

#[test]
fn the_user_directory_follows_xdg_config_home() {
    let ws = Path::new("/ws");
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let paths =
        SpecialistPaths::resolve(ws, env(&[("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")]));
    assert_eq!(
        paths.user.as_deref(),
        Some(Path::new("/cfg/zero/specialists"))
    );
    assert_eq!(
        paths.project.as_deref(),
        Some(Path::new("/ws/.zero/specialists"))
    );
    let paths = SpecialistPaths::resolve(ws, env(&[("HOME", "/home/u")]));
    assert_eq!(
        paths.user.as_deref(),
        Some(Path::new("/home/u/.config/zero/specialists"))
    );
    let paths = SpecialistPaths::resolve(ws, env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")]));
    assert_eq!(paths.user, None);
}

#[tokio::test]
async fn a_child_runs_the_manifests_model_and_reasoning_or_inherits_the_parents() {
    let ws = tempfile::tempdir().unwrap();
    let project_dir = ws.path().join(".zero").join("specialists");
    std::fs::create_dir_all(&project_dir).unwrap();
    std::fs::write(
        project_dir.join("pinned.md"),
        "---\nname: pinned\ndescription: Own model and effort.\nmodel: child-model\nreasoningEffort: low\n---\nPinned.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("plain.md"),
        "---\nname: plain\ndescription: Inherits both.\n---\nPlain.\n",
    )
    .unwrap();
    std::fs::write(
        project_dir.join("model-only.md"),
        "---\nname: model-only\ndescription: Own model only.\nmodel: other-model\n---\nModel only.\n",
    )
    .unwrap();
    let registry = SpecialistRegistry::load(&SpecialistPaths {
        user: None,
        project: Some(project_dir),
    });
    assert!(registry.errors().is_empty(), "{:?}", registry.errors());
    let seen: Arc<Mutex<Vec<ProviderRequest>>> = Arc::default();
    let log = seen.clone();
    let provider = Router(move |request: &ProviderRequest| {
        log.lock().unwrap().push(request.clone());
        for name in ["pinned", "plain", "model-only"] {
            if child_of(request, name) {
                return Turn::new().text(format!("{name} answered"));
            }
        }
        match step(request) {
            0 => {
                let mut turn = Turn::new();
                for (id, name) in [("c1", "pinned"), ("c2", "plain"), ("c3", "model-only")] {
                    let (id, tool, args) = task_call(id, name, "Answer.", false);
                    turn = turn.tool_call(id, tool, args);
                }
                turn
            }
            _ => Turn::new().text("done"),
        }
    });
    let agent = agent_with(provider, ws.path(), registry, |t| t)
        .model("parent-model")
        .reasoning(agent_core::ReasoningLevel::High)
        .build();
    let events = collect(agent.prompt("go")).await;
    for call in ["c1", "c2", "c3"] {
        assert_eq!(*result_of(&events, call).0, ToolStatus::Ok, "{call}");
    }
    let requests = seen.lock().unwrap().clone();
    let of = |name: &str| {
        let r = requests
            .iter()
            .find(|r| child_of(r, name))
            .unwrap_or_else(|| panic!("no request of {name}"));
        (r.model.clone(), r.reasoning)
    };
    use agent_core::ReasoningLevel::{High, Low, Medium};
    assert_eq!(requests[0].model, "parent-model");
    assert_eq!(requests[0].reasoning, High);
    assert_eq!(of("pinned"), ("child-model".to_string(), Low));
    assert_eq!(of("plain"), ("parent-model".to_string(), High));
    // Zero's rule: an own model without an effort does not inherit the parent's effort.
    assert_eq!(of("model-only"), ("other-model".to_string(), Medium));
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
