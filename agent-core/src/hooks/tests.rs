use std::sync::Arc;

use serde_json::Value;

use super::*;

struct Fixed(&'static str, ToolDecision);

#[async_trait]
impl Hooks for Fixed {
    fn name(&self) -> &str {
        self.0
    }
    async fn before_tool(&self, _ctx: &HookContext, call: &ToolCall) -> ToolDecision {
        match &self.1 {
            // Echo what this hook saw, so chaining is visible.
            ToolDecision::Rewrite { args } if args.is_null() => ToolDecision::Rewrite {
                args: serde_json::json!({"seen": call.args.clone()}),
            },
            other => other.clone(),
        }
    }
}

fn list(members: Vec<Fixed>) -> HookList {
    members
        .into_iter()
        .map(|m| Arc::new(m) as Arc<dyn Hooks>)
        .collect()
}

fn call() -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        args: serde_json::json!({"command": "ls"}),
    }
}

#[tokio::test]
async fn first_deny_wins_and_later_hooks_are_not_asked() {
    let hooks = list(vec![
        Fixed(
            "asks",
            ToolDecision::Ask {
                reason: Some("look".into()),
                args: None,
            },
        ),
        Fixed(
            "denies",
            ToolDecision::Deny {
                reason: "no".into(),
            },
        ),
        Fixed(
            "halts",
            ToolDecision::Halt {
                reason: "never asked".into(),
            },
        ),
    ]);
    let ctx = HookContext::new(HookEvent::BeforeTool, ".");
    let decision = hooks.before_tool(&ctx, &call()).await;
    assert_eq!(
        decision,
        ToolDecision::Deny {
            reason: "no".into()
        }
    );
    let reports: Vec<(String, HookOutcome)> = ctx
        .take_reports()
        .into_iter()
        .map(|r| (r.hook, r.outcome))
        .collect();
    assert_eq!(
        reports,
        vec![
            ("asks".into(), HookOutcome::Ask),
            ("denies".into(), HookOutcome::Deny)
        ]
    );
}

#[tokio::test]
async fn rewrites_chain_and_an_ask_survives_a_later_allow() {
    let hooks = list(vec![
        Fixed("first", ToolDecision::Rewrite { args: Value::Null }),
        Fixed(
            "asks",
            ToolDecision::Ask {
                reason: None,
                args: None,
            },
        ),
        Fixed("second", ToolDecision::Rewrite { args: Value::Null }),
        Fixed("allows", ToolDecision::Allow),
    ]);
    let ctx = HookContext::new(HookEvent::BeforeTool, ".");
    let decision = hooks.before_tool(&ctx, &call()).await;
    let expected = serde_json::json!({"seen": {"seen": {"command": "ls"}}});
    assert_eq!(
        decision,
        ToolDecision::Ask {
            reason: None,
            args: Some(expected)
        }
    );
}

struct Appends(&'static str);

#[async_trait]
impl Hooks for Appends {
    fn name(&self) -> &str {
        self.0
    }
    async fn after_tool(&self, _: &HookContext, _: &ToolCall, _: &ToolOutput) -> ResultDecision {
        ResultDecision::Append {
            text: self.0.into(),
        }
    }
}

#[tokio::test]
async fn a_nested_list_reports_its_members_once() {
    let inner: HookList = [
        Arc::new(Appends("a")) as Arc<dyn Hooks>,
        Arc::new(Appends("b")),
    ]
    .into_iter()
    .collect();
    let outer: HookList = [Arc::new(inner) as Arc<dyn Hooks>, Arc::new(Appends("c"))]
        .into_iter()
        .collect();
    let ctx = HookContext::new(HookEvent::AfterTool, ".");
    let decision = outer
        .after_tool(&ctx, &call(), &ToolOutput::text("out"))
        .await;
    match decision {
        ResultDecision::Replace { result } => {
            assert_eq!(result.text_content(), "out\n\na\n\nb\n\nc")
        }
        other => panic!("{other:?}"),
    }
    let reports: Vec<(String, HookOutcome)> = ctx
        .take_reports()
        .into_iter()
        .map(|r| (r.hook, r.outcome))
        .collect();
    assert_eq!(
        reports,
        vec![
            ("a".into(), HookOutcome::Append),
            ("b".into(), HookOutcome::Append),
            ("c".into(), HookOutcome::Append)
        ]
    );
}

#[test]
fn append_goes_after_a_blank_line_or_stands_alone() {
    let mut output = ToolOutput::text("done");
    append_to_output(&mut output, "Hook output:\nok");
    assert_eq!(output.text_content(), "done\n\nHook output:\nok");
    let mut empty = ToolOutput::default();
    append_to_output(&mut empty, "only");
    assert_eq!(empty.text_content(), "only");
    append_to_output(&mut empty, "  ");
    assert_eq!(empty.text_content(), "only");
}
