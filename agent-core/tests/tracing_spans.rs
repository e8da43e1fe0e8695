//! The loop's tracing spans: `agent.run` -> `agent.turn` -> `agent.tool`, with the
//! OpenTelemetry GenAI attributes, and no prompt, tool text or key unless content capture
//! is on.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agent_core::telemetry::set_capture_content;
use agent_core::{secrets::register_secret, Agent};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

#[derive(Debug, Clone)]
struct Captured {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
    closed: bool,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(u64, Captured)>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_string());
        self.0.lock().unwrap().push((
            id.into_u64(),
            Captured {
                name: attrs.metadata().name().to_string(),
                parent,
                fields,
                closed: false,
            },
        ));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, span)) = spans.iter_mut().rev().find(|(i, _)| *i == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, span)) = spans.iter_mut().rev().find(|(i, _)| *i == id.into_u64()) {
            span.closed = true;
        }
    }
}

const SECRET: &str = "sk-span-secret-0123456789";
const PROMPT: &str = "PROMPT-TEXT-look-up-the-weather";

async fn traced_run(capture: &Capture) -> Vec<Captured> {
    let provider = ScriptedProvider::new([
        Turn::new()
            .tool_call(
                "call_7",
                "echo",
                format!(r#"{{"text":"TOOL-TEXT {SECRET}"}}"#),
            )
            .usage(100, 20),
        Turn::new().text("ANSWER-TEXT").usage(150, 5),
    ]);
    let agent = Agent::builder(provider)
        .model("scripted-model")
        .tool(Echo)
        .build();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let outcome = tokio::time::timeout(WAIT, agent.run(PROMPT))
        .await
        .expect("in time");
    assert!(outcome.is_success());
    capture
        .0
        .lock()
        .unwrap()
        .drain(..)
        .map(|(_, s)| s)
        .collect()
}

fn field<'a>(span: &'a Captured, name: &str) -> &'a str {
    span.fields
        .get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{} has no {name}: {:?}", span.name, span.fields))
}

#[tokio::test]
async fn spans_carry_the_genai_attributes_and_no_content_unless_opted_in() {
    register_secret(SECRET);
    set_capture_content(false);
    let capture = Capture::default();
    let spans = traced_run(&capture).await;

    let names: Vec<(&str, Option<&str>)> = spans
        .iter()
        .map(|s| (s.name.as_str(), s.parent.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("agent.run", None),
            ("agent.turn", Some("agent.run")),
            ("agent.tool", Some("agent.turn")),
            ("agent.turn", Some("agent.run")),
        ]
    );
    assert!(spans.iter().all(|s| s.closed), "every span ends");

    let run = &spans[0];
    assert_eq!(field(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(field(run, "gen_ai.system"), "scripted");
    assert_eq!(field(run, "gen_ai.request.model"), "scripted-model");
    assert_eq!(field(run, "gen_ai.usage.input_tokens"), "250");
    assert_eq!(field(run, "gen_ai.usage.output_tokens"), "25");
    assert_eq!(field(run, "agent.run.status"), "success");

    let first = &spans[1];
    assert_eq!(field(first, "gen_ai.operation.name"), "chat");
    assert_eq!(field(first, "gen_ai.system"), "scripted");
    assert_eq!(field(first, "gen_ai.request.model"), "scripted-model");
    assert_eq!(field(first, "gen_ai.usage.input_tokens"), "100");
    assert_eq!(field(first, "gen_ai.usage.output_tokens"), "20");
    assert_eq!(field(first, "gen_ai.response.finish_reasons"), "tool_calls");
    assert_eq!(field(first, "agent.turn.step"), "1");

    let tool = &spans[2];
    assert_eq!(field(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(field(tool, "gen_ai.tool.name"), "echo");
    assert_eq!(field(tool, "gen_ai.tool.call.id"), "call_7");
    assert!(!tool.fields.contains_key("error.type"));

    let second = &spans[3];
    assert_eq!(field(second, "gen_ai.response.finish_reasons"), "stop");
    assert_eq!(field(second, "gen_ai.usage.input_tokens"), "150");

    let everything = format!("{spans:?}");
    for text in [PROMPT, "TOOL-TEXT", "ANSWER-TEXT", SECRET] {
        assert!(
            !everything.contains(text),
            "{text} reached a span: {everything}"
        );
    }

    // Opted in: the tool's arguments and result and the answer are recorded, scrubbed.
    set_capture_content(true);
    let spans = traced_run(&capture).await;
    set_capture_content(false);
    let tool = spans
        .iter()
        .find(|s| s.name == "agent.tool")
        .expect("tool span");
    assert!(field(tool, "gen_ai.tool.call.arguments").contains("TOOL-TEXT [REDACTED]"));
    assert!(field(tool, "gen_ai.tool.call.result").contains("TOOL-TEXT [REDACTED]"));
    let last_turn = spans
        .iter()
        .rfind(|s| s.name == "agent.turn")
        .expect("turn span");
    assert!(field(last_turn, "gen_ai.output.messages").contains("ANSWER-TEXT"));
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains(SECRET),
        "the key reached a span: {everything}"
    );
}
