//! Structured output on the scripted provider: the schema reaches every model call, a
//! valid answer parses, an invalid one gets exactly one repair turn, and a second invalid
//! answer fails cleanly with a typed error.

mod common;

use agent_core::{
    event::{ErrorCode, StopReason},
    message::Role,
    provider::{OutputSchema, ProviderErrorKind},
    structured::OutputSpec,
    Agent, AgentError, AgentEvent, RunStatus,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A release note.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Release {
    version: String,
    /// Kind of change.
    kind: Kind,
    /// Breaking changes, if any.
    breaking: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Major,
    Minor,
    Patch,
}

const VALID: &str = r#"{"version":"1.2.0","kind":"minor","breaking":null}"#;

#[tokio::test]
async fn a_valid_answer_parses_and_every_call_carries_the_schema() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call("c1", "echo", r#"{"text":"changelog"}"#),
        Turn::new().text(VALID),
    ]);
    let agent = Agent::builder(provider.clone()).tool(Echo).build();
    let release: Release = tokio::time::timeout(WAIT, agent.prompt_as("Summarise the release."))
        .await
        .expect("in time")
        .expect("valid answer");
    assert_eq!(
        release,
        Release {
            version: "1.2.0".into(),
            kind: Kind::Minor,
            breaking: None
        }
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let schema = request
            .output_schema
            .as_ref()
            .expect("schema on every call");
        assert_eq!(schema.name, "Release");
        assert!(schema.strict);
        assert_eq!(
            schema.schema["required"],
            json!(["breaking", "kind", "version"])
        );
        assert_eq!(
            schema.schema["properties"]["kind"]["enum"],
            json!(["major", "minor", "patch"])
        );
        // Tools stay available in a structured run.
        assert_eq!(request.tools.len(), 1);
    }
    // A plain prompt afterwards carries no schema: it belongs to the run, not the agent.
    let provider2 = ScriptedProvider::new([Turn::new().text("plain")]);
    let plain = Agent::builder(provider2.clone()).build();
    collect(plain.prompt("hi")).await;
    assert!(provider2.requests()[0].output_schema.is_none());
}

#[tokio::test]
async fn an_invalid_answer_is_repaired_once() {
    let provider = ScriptedProvider::new([
        Turn::new().text(r#"{"version":"1.2.0","kind":"huge"}"#),
        Turn::new().text(format!("```json\n{VALID}\n```")),
    ]);
    let agent = Agent::builder(provider.clone()).build();
    let release: Release = agent
        .prompt_as("Summarise the release.")
        .await
        .expect("the repair turn fixed it");
    assert_eq!(release.kind, Kind::Minor);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].messages.last().expect("repair message");
    assert_eq!(repair.role, Role::User);
    assert!(repair.synthetic);
    let text = repair.text();
    assert!(text.contains("`kind`") && text.contains("huge"), "{text}");
    assert!(requests[1].output_schema.is_some());
    // The transcript keeps the exchange: prompt, bad answer, repair note, good answer.
    assert_eq!(agent.messages().len(), 4);
}

#[tokio::test]
async fn two_invalid_answers_fail_cleanly() {
    let provider = ScriptedProvider::new([
        Turn::new().text("Version 1.2.0, a minor release."),
        Turn::new().text(r#"{"version":"1.2.0"}"#),
        Turn::new().text("never asked"),
    ]);
    let agent = Agent::builder(provider.clone()).build();
    let err = agent
        .prompt_as::<Release>("Summarise the release.")
        .await
        .expect_err("still invalid after the repair turn");
    match &err {
        AgentError::InvalidOutput { error, answer } => {
            assert_eq!(answer, r#"{"version":"1.2.0"}"#);
            assert!(
                error.to_string().contains("missing field `kind`"),
                "{error}"
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("output schema"), "{err}");
    // Exactly one repair turn.
    assert_eq!(provider.requests().len(), 2);
    assert_eq!(provider.remaining(), 1);
    assert!(!agent.state().busy);
}

#[tokio::test]
async fn a_failed_run_is_a_typed_error() {
    let provider =
        ScriptedProvider::new([Turn::new().error(ProviderErrorKind::Server, "HTTP 500")]);
    let agent = Agent::builder(provider).build();
    let err = agent
        .prompt_as::<Release>("Summarise the release.")
        .await
        .expect_err("the provider failed");
    assert_eq!(
        err,
        AgentError::Run {
            code: ErrorCode::Provider,
            message: "HTTP 500".into()
        }
    );
}

#[tokio::test]
async fn a_host_check_drives_the_repair_turn_on_the_stream() {
    let provider = ScriptedProvider::new([Turn::new().text("nope"), Turn::new().text("{}")]);
    let agent = Agent::builder(provider.clone()).build();
    let spec = OutputSpec::new(
        OutputSchema {
            name: "empty".into(),
            schema: json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            strict: true,
        },
        |answer| match answer.trim() {
            "{}" => Ok(()),
            other => Err(format!("expected {{}}, got {other:?}")),
        },
    );
    let events = collect(agent.prompt_structured("Answer with {}.", spec)).await;
    let stops: Vec<StopReason> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnEnded { stop, .. } => Some(*stop),
            _ => None,
        })
        .collect();
    assert_eq!(stops, [StopReason::Continue, StopReason::End]);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::RunFinished { status: RunStatus::Success, final_text: Some(t) }) if t == "{}"
    ));
    assert_eq!(
        provider.requests()[1]
            .output_schema
            .as_ref()
            .map(|s| s.name.as_str()),
        Some("empty")
    );
}
