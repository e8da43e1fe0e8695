//! Background tasks: read with `task_output`, bounded, stoppable, stopped with the run.

use super::*;

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
