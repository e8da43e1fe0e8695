//! The guards of unattended runs, end to end on the scripted provider: permission rules at
//! the gate, the session's "always allow" answers kept across a resume, the spend cap and
//! the fallback model.

mod common;

use std::sync::Arc;

use agent_core::{
    event::ErrorCode,
    permission::rules::{RuleAction, RuleSet, RuleSource},
    permission::{Approval, PermissionAction},
    provider::{ModelInfo, Pricing, ProviderErrorKind, ProviderRequest, ProviderStream},
    session::{MemorySessionStore, SessionRecord, SessionStore},
    Agent, AgentEvent, PermissionMode, Provider, RunStatus, SideEffect, Tool, ToolContext,
    ToolError, ToolOutput,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// A shell tool that runs nothing and says what it was asked.
struct Shell;

#[agent_core::async_trait]
impl Tool for Shell {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "Runs a command."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Shell
    }
    async fn call(&self, args: Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", args["command"])))
    }
}

fn rules(list: &[(RuleAction, &str)]) -> RuleSet {
    let mut set = RuleSet::new();
    for (action, rule) in list {
        set.add(*action, rule, &RuleSource::Sdk)
            .expect("a valid rule");
    }
    set
}

fn bash(id: &str, command: &str) -> Turn {
    Turn::new().tool_call(id, "bash", json!({ "command": command }).to_string())
}

fn decisions(events: &[AgentEvent]) -> Vec<(PermissionAction, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PermissionDecided { info, action, .. } => {
                Some((*action, info.rule.as_ref().map(|r| r.rule.clone())))
            }
            _ => None,
        })
        .collect()
}

fn requested(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::PermissionRequested(_)))
        .count()
}

fn status(events: &[AgentEvent]) -> Option<RunStatus> {
    events.iter().find_map(|e| match e {
        AgentEvent::RunFinished { status, .. } => Some(*status),
        _ => None,
    })
}

#[tokio::test]
async fn a_command_prefix_rule_lets_one_command_run_and_not_a_compound_one() {
    let provider = ScriptedProvider::new([
        bash("c1", "git status -s"),
        bash("c2", "git status; rm x"),
        Turn::new().text("done"),
    ]);
    let agent = Agent::builder(provider)
        .tool(Shell)
        .permission_mode(PermissionMode::Ask)
        .permission_rules(rules(&[(RuleAction::Allow, "Bash(git status:*)")]))
        .build();
    let events = collect(agent.prompt("check")).await;
    assert_eq!(
        decisions(&events),
        [(PermissionAction::Allow, Some("Bash(git status:*)".into()))],
        "the first call runs by the rule, without a prompt"
    );
    assert_eq!(requested(&events), 1, "the compound command asks");
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                id,
                status,
                content,
                ..
            } => Some((
                id.clone(),
                *status == agent_core::event::ToolStatus::Ok
                    && format!("{content:?}").contains("ran"),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("c1".into(), true), ("c2".into(), false)]);
}

#[tokio::test]
async fn a_deny_rule_beats_an_allow_rule_in_every_mode() {
    let provider = ScriptedProvider::new([bash("c1", "rm -rf build"), Turn::new().text("ok")]);
    let agent = Agent::builder(provider)
        .tool(Shell)
        .permission_mode(PermissionMode::Unsafe)
        .permission_rules(rules(&[
            (RuleAction::Allow, "Bash"),
            (RuleAction::Deny, "Bash(rm:*)"),
        ]))
        .build();
    let events = collect(agent.prompt("clean")).await;
    assert_eq!(
        decisions(&events),
        [(PermissionAction::Deny, Some("Bash(rm:*)".into()))]
    );
    let denied = events.iter().any(|e| {
        matches!(e, AgentEvent::ToolResult { content, .. }
            if format!("{content:?}").contains("permission rule deny Bash(rm:*) (sdk)"))
    });
    assert!(denied, "the model is told which rule refused the call");
}

#[tokio::test]
async fn an_ask_rule_prompts_where_the_mode_would_allow() {
    let (asked, mut questions) = mpsc::unbounded_channel();
    let provider = ScriptedProvider::new([bash("c1", "git push"), Turn::new().text("ok")]);
    let agent = Agent::builder(provider)
        .tool(Shell)
        .permission_mode(PermissionMode::Unsafe)
        .approver(Scripted {
            answers: std::sync::Mutex::new(vec![Some(Approval::AllowOnce)]),
            asked,
        })
        .permission_rules(rules(&[(RuleAction::Ask, "Bash(git push:*)")]))
        .build();
    let events = collect(agent.prompt("push")).await;
    let question = questions.try_recv().expect("the approver was asked");
    assert_eq!(
        question.reason.as_deref(),
        Some("permission rule ask Bash(git push:*) (sdk)")
    );
    assert_eq!(requested(&events), 1);
}

#[tokio::test]
async fn an_always_answer_is_kept_with_the_session_and_survives_a_resume() {
    let store = Arc::new(MemorySessionStore::new());
    let (asked, mut questions) = mpsc::unbounded_channel();
    let provider = ScriptedProvider::new([bash("c1", "make"), Turn::new().text("built")]);
    let agent = Agent::builder(provider)
        .tool(Shell)
        .permission_mode(PermissionMode::Ask)
        .approver(Scripted {
            answers: std::sync::Mutex::new(vec![Some(Approval::AllowAlways)]),
            asked,
        })
        .session(store.clone(), "s1")
        .build();
    let _ = collect(agent.prompt("build")).await;
    assert!(questions.try_recv().is_ok(), "the first call asked");
    let records = store.load("s1").await.expect("recorded");
    assert!(records.contains(&SessionRecord::Granted {
        tool: "bash".into()
    }));

    // A new process: the same session, resumed, with an approver that never answers.
    let (asked, mut questions) = mpsc::unbounded_channel();
    let provider = ScriptedProvider::new([bash("c2", "make test"), Turn::new().text("tested")]);
    let resumed = Agent::builder(provider)
        .tool(Shell)
        .permission_mode(PermissionMode::Ask)
        .approver(Scripted {
            answers: std::sync::Mutex::new(vec![None]),
            asked,
        })
        .resume(store.clone(), "s1")
        .await
        .expect("resumes")
        .build();
    let events = collect(resumed.prompt("test")).await;
    assert!(questions.try_recv().is_err(), "not asked again");
    assert_eq!(
        decisions(&events),
        [(PermissionAction::Allow, Some("bash".into()))]
    );
    let source = events.iter().find_map(|e| match e {
        AgentEvent::PermissionDecided { info, .. } => info.rule.as_ref().map(|r| r.source.clone()),
        _ => None,
    });
    assert_eq!(source.as_deref(), Some("session"));
    assert_eq!(status(&events), Some(RunStatus::Success));
}

/// The scripted provider under a priced model: $1000 per million tokens either way, so a
/// call of 10 input tokens costs $0.01.
struct Priced(ScriptedProvider);

impl Provider for Priced {
    fn id(&self) -> &str {
        "priced"
    }
    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        self.0.stream(request)
    }
    fn models(&self) -> Vec<ModelInfo> {
        vec![ModelInfo {
            id: "priced-model".into(),
            provider: "priced".into(),
            context_window: 100_000,
            max_output: 1000,
            reasoning: false,
            pricing: Some(Pricing {
                input: 1000.0,
                output: 1000.0,
                cache_read: 0.0,
                cache_write: 0.0,
            }),
        }]
    }
}

#[tokio::test]
async fn the_spend_cap_ends_the_run_before_the_call_that_would_pass_it() {
    let provider = ScriptedProvider::new([
        bash("c1", "ls").usage(10, 0),
        Turn::new().text("never asked").usage(10, 0),
    ]);
    let agent = Agent::builder(Priced(provider.clone()))
        .model("priced-model")
        .tool(Shell)
        .permission_mode(PermissionMode::Unsafe)
        .max_budget_usd(0.01)
        .build();
    let events = collect(agent.prompt("go")).await;
    assert_eq!(provider.requests().len(), 1, "one call, then the cap");
    let error = events.iter().find_map(|e| match e {
        AgentEvent::Error { code, message, .. } => Some((*code, message.clone())),
        _ => None,
    });
    assert_eq!(
        error,
        Some((
            ErrorCode::BudgetExceeded,
            "spend cap of $0.01 reached: this run has cost $0.0100".to_string()
        ))
    );
    assert_eq!(status(&events), Some(RunStatus::Error));

    // The cap is per run: the next prompt starts from zero.
    let provider = ScriptedProvider::new([Turn::new().text("cheap").usage(1, 0)]);
    let agent = Agent::builder(Priced(provider))
        .model("priced-model")
        .max_budget_usd(0.01)
        .build();
    assert_eq!(
        status(&collect(agent.prompt("a")).await),
        Some(RunStatus::Success)
    );
}

#[tokio::test]
async fn an_unpriced_model_is_not_taken_as_free() {
    let provider = ScriptedProvider::new([Turn::new().text("hi")]);
    let agent = Agent::builder(provider.clone())
        .model("a-model-the-catalogue-does-not-price")
        .max_budget_usd(5.0)
        .build();
    let events = collect(agent.prompt("hi")).await;
    assert!(provider.requests().is_empty(), "no call is made");
    let message = events.iter().find_map(|e| match e {
        AgentEvent::Error {
            code: ErrorCode::BudgetExceeded,
            message,
            ..
        } => Some(message.clone()),
        _ => None,
    });
    let message = message.expect("a budget error");
    assert!(message.contains("cannot be enforced"), "{message}");
    assert!(message.contains("not priced"), "{message}");
    assert_eq!(status(&events), Some(RunStatus::Error));
}

#[tokio::test]
async fn an_overloaded_model_falls_back_once_and_the_run_succeeds() {
    let provider = ScriptedProvider::new([
        Turn::new().error(ProviderErrorKind::Overloaded, "overloaded after 3 attempts"),
        Turn::new().text("answered by the fallback"),
    ]);
    let agent = Agent::builder(provider.clone())
        .model("big")
        .fallback_model("small")
        .build();
    let events = collect(agent.prompt("hi")).await;
    let fallback = events.iter().find_map(|e| match e {
        AgentEvent::ModelFallback { from, to, reason } => {
            Some((from.clone(), to.clone(), reason.clone()))
        }
        _ => None,
    });
    assert_eq!(
        fallback,
        Some((
            "big".into(),
            "small".into(),
            "overloaded after 3 attempts".into()
        ))
    );
    let models: Vec<String> = provider.requests().into_iter().map(|r| r.model).collect();
    assert_eq!(models, ["big", "small"]);
    assert_eq!(status(&events), Some(RunStatus::Success));

    // A request the model rejects is not retried elsewhere.
    let provider = ScriptedProvider::new([
        Turn::new().error(ProviderErrorKind::BadRequest, "bad"),
        Turn::new().text("never"),
    ]);
    let agent = Agent::builder(provider.clone())
        .model("big")
        .fallback_model("small")
        .build();
    let events = collect(agent.prompt("hi")).await;
    assert_eq!(provider.requests().len(), 1);
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::ModelFallback { .. })));
    assert_eq!(status(&events), Some(RunStatus::Error));
}
