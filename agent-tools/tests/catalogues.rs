//! The catalogues: each program's tool names and argument shapes over the one
//! implementation of each tool; calls under an earlier (SDK) name still reach the tool.

use std::time::Duration;

use agent_core::{Agent, AgentEvent, RunStatus, Tool, ToolContext, ToolError, ToolOutput};
use agent_providers::scripted::{ScriptedProvider, Turn};
use agent_tools::{Answers, Catalogue, Question, QuestionChannel, ToolSet, NO_USER_TO_ASK};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

fn build(catalogue: Catalogue) -> (tempfile::TempDir, ToolSet) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").expect("write");
    let tools = ToolSet::builder(dir.path()).catalogue(catalogue).build();
    (dir, tools)
}

async fn call(tools: &ToolSet, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = tools.get(name).unwrap_or_else(|| panic!("no tool {name}"));
    tokio::time::timeout(WAIT, tool.call(args, ToolContext::new(tools.workspace())))
        .await
        .expect("in time")
}

fn properties(tool: &dyn Tool) -> Vec<String> {
    let mut names: Vec<String> = tool.parameters()["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn each_catalogue_has_its_programs_names() {
    let (_dir, zero) = build(Catalogue::Zero);
    let expected_zero = [
        "read_file",
        "view_image",
        "list_directory",
        "glob",
        "grep",
        "ask_user",
        "write_file",
        "edit_file",
        "apply_patch",
        "update_plan",
        "exec_command",
        "write_stdin",
        "bash",
        "web_fetch",
    ];
    assert_eq!(zero.names(), expected_zero);
    let (_dir, zut) = build(Catalogue::Zut);
    // zut's web capability comes with a search backend (tests/web_tools.rs).
    assert_eq!(
        zut.names(),
        ["read", "write", "edit", "bash", "grep", "plan"]
    );
    let (_dir, sdk) = build(Catalogue::Sdk);
    assert!(sdk.names().contains(&"list_dir"));
    assert!(
        !sdk.names().contains(&"ask_user"),
        "no channel, no ask_user"
    );

    let shape = |set: &ToolSet, name: &str| properties(set.get(name).expect("tool").as_ref());
    assert_eq!(shape(&zero, "update_plan"), ["plan"]);
    assert_eq!(
        zero.get("update_plan").expect("tool").parameters()["properties"]["plan"]["items"]
            ["required"],
        json!(["content"])
    );
    assert_eq!(shape(&zero, "glob"), ["cwd", "pattern"]);
    assert_eq!(shape(&zut, "edit"), ["edits", "path"]);
    assert_eq!(shape(&zut, "bash"), ["command", "timeout"]);
    assert_eq!(
        zut.get("read").expect("read").description(),
        "Read a file. Images (png/jpg/gif/webp) return inline."
    );
}

#[tokio::test]
async fn arguments_and_results_take_the_programs_shape() {
    let (dir, zut) = build(Catalogue::Zut);
    let out = call(
        &zut,
        "edit",
        json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}, {"oldText": "three", "newText": "3"}]}),
    )
    .await
    .expect("edited");
    assert_eq!(out.changed_files, ["a.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
        "1\ntwo\n3\n"
    );
    // All or none: the second edit does not match, so the file is unchanged.
    let err = call(
        &zut,
        "edit",
        json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}, {"oldText": "nope", "newText": "x"}]}),
    )
    .await
    .expect_err("the second edit misses");
    assert!(err.to_string().contains("(edit 2) was not found"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).expect("read"),
        "1\ntwo\n3\n"
    );
    let out = call(&zut, "bash", json!({"command": "echo hi", "timeout": 5}))
        .await
        .expect("ran");
    assert!(out.text_content().contains("hi"), "{}", out.text_content());
    let err = call(&zut, "bash", json!({"command": "echo hi", "timeout": 0}))
        .await
        .expect_err("bad timeout");
    assert!(
        err.to_string()
            .contains("timeout must be between 1 and 600 seconds"),
        "{err}"
    );

    let (_dir, zero) = build(Catalogue::Zero);
    let out = call(
        &zero,
        "update_plan",
        json!({"plan": [{"content": "read", "status": "done"}, {"content": "write", "status": "in_progress"}]}),
    )
    .await
    .expect("planned");
    assert_eq!(
        out.text_content(),
        "Current Plan:\n1. [completed] read\n2. [in_progress] write"
    );
    let plan = out.plan.expect("the checklist is still set");
    assert_eq!(plan.plan.len(), 2);
    let out = call(&zero, "list_directory", json!({"path": "."}))
        .await
        .expect("listed");
    assert!(out.text_content().contains("a.txt"));
    let out = call(
        &zero,
        "ask_user",
        json!({"questions": [{"question": "Which?"}]}),
    )
    .await
    .expect("answered");
    assert_eq!(out.text_content(), NO_USER_TO_ASK);
}

struct Yes;

#[agent_core::async_trait]
impl QuestionChannel for Yes {
    async fn ask(&self, questions: Vec<Question>, _ctx: &ToolContext) -> Answers {
        Answers::Answered(
            questions
                .iter()
                .map(|q| format!("yes to {}", q.question))
                .collect(),
        )
    }
}

#[tokio::test]
async fn ask_user_asks_through_the_hosts_channel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = ToolSet::builder(dir.path())
        .questions(std::sync::Arc::new(Yes))
        .build();
    let out = call(
        &tools,
        "ask_user",
        json!({"questions": [{"question": "Proceed?", "options": ["yes", "no"]}]}),
    )
    .await
    .expect("answered");
    assert_eq!(
        out.text_content(),
        "1. [question] Proceed?\n[answer] yes to Proceed?"
    );
}

#[tokio::test]
async fn a_call_under_the_sdk_name_still_reaches_the_renamed_tool() {
    let (_dir, zero) = build(Catalogue::Zero);
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "list_dir", r#"{"path":"."}"#),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider).tools(zero.into_tools()).build();
    let events = tokio::time::timeout(WAIT, agent.prompt("list").collect_events())
        .await
        .expect("in time");
    let result = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult { id, content, .. } if id == "c1" => Some(content.clone()),
            _ => None,
        })
        .expect("a result");
    let text: String = result
        .iter()
        .filter_map(|b| match b {
            agent_core::ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("a.txt"), "{text}");
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished {
            status: RunStatus::Success,
            ..
        })
    ));
}
