//! `Run::finish` and `Agent::run`: the outcome of a run without its stream.

mod common;

use agent_core::{
    event::ErrorCode, message::Role, provider::ProviderErrorKind, Agent, AgentError, RunStatus,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use futures::StreamExt;

#[tokio::test]
async fn finish_sums_up_a_run_with_a_tool_call() {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call("c1", "echo", r#"{"text":"pong"}"#)
            .usage(100, 10),
        Turn::new().text("It said pong.").usage(120, 5),
    ]);
    let agent = Agent::builder(provider).tool(Echo).build();
    let outcome = tokio::time::timeout(WAIT, agent.run("ping?"))
        .await
        .expect("in time");
    assert_eq!(outcome.status, RunStatus::Success);
    assert!(outcome.is_success());
    assert_eq!(outcome.text.as_deref(), Some("It said pong."));
    assert_eq!((outcome.usage.input, outcome.usage.output), (220, 15));
    let roles: Vec<Role> = outcome.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(outcome.messages, agent.messages());
    assert!(outcome.error.is_none());
    assert_eq!(outcome.into_result().as_deref(), Ok("It said pong."));

    // A second run's outcome holds only its own messages and usage.
    let provider =
        ScriptedProvider::new([Turn::new().text("one"), Turn::new().text("two").usage(7, 1)]);
    let agent = Agent::builder(provider).build();
    agent.run("first").await;
    let second = agent.run("second").await;
    assert_eq!(second.messages.len(), 2);
    assert_eq!(second.messages[0].text(), "second");
    assert_eq!((second.usage.input, second.usage.output), (7, 1));
}

#[tokio::test]
async fn finish_reports_the_error_that_ended_the_run() {
    let provider = ScriptedProvider::new([Turn::new().error(ProviderErrorKind::Auth, "bad key")]);
    let agent = Agent::builder(provider).build();
    let outcome = agent.run("hi").await;
    assert_eq!(outcome.status, RunStatus::Error);
    let error = outcome.error.clone().expect("the error");
    assert_eq!(error.code, ErrorCode::Provider);
    assert_eq!(error.message, "bad key");
    assert_eq!(
        outcome.into_result(),
        Err(AgentError::Run {
            code: ErrorCode::Provider,
            message: "bad key".into()
        })
    );
}

#[tokio::test]
async fn finish_after_reading_part_of_the_stream_and_after_abort() {
    let provider = ScriptedProvider::new([Turn::new()
        .text("partial")
        .delay(std::time::Duration::from_secs(600))
        .text("never")]);
    let agent = Agent::builder(provider).build();
    let mut run = agent.prompt("go");
    // Read up to the first delta, then abort and finish.
    while let Some(event) = tokio::time::timeout(WAIT, run.next())
        .await
        .expect("in time")
    {
        if matches!(event, agent_core::AgentEvent::TextDelta { .. }) {
            break;
        }
    }
    run.abort();
    let outcome = tokio::time::timeout(WAIT, run.finish())
        .await
        .expect("in time");
    assert_eq!(outcome.status, RunStatus::Aborted);
    assert_eq!(outcome.into_result(), Err(AgentError::Aborted));
}
