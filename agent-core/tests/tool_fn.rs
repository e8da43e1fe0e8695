//! Typed tools from functions: the derived schema follows the providers' strict rules, and
//! bad arguments come back as errors naming the field.

mod common;

use agent_core::{
    event::ToolStatus, tool_fn, Agent, AgentEvent, ContentBlock, Permission, SideEffect, Tool,
    ToolContext, ToolError,
};
use agent_providers::scripted::{ScriptedProvider, Turn};
use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// Temperature unit.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// How much detail to give.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Detail {
    /// One line.
    Brief,
    /// Hour by hour.
    Hourly {
        /// How many hours.
        hours: u8,
    },
}

/// A place.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Location {
    /// City name.
    city: String,
    /// ISO 3166 country code, when the city name is ambiguous.
    country: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct WeatherArgs {
    /// Where.
    location: Location,
    unit: Unit,
    /// Days ahead; today when absent.
    days: Option<u8>,
    detail: Detail,
}

async fn weather(args: WeatherArgs, _ctx: ToolContext) -> Result<String, ToolError> {
    Ok(format!(
        "{} in {:?}, {} days ahead, {:?}",
        args.location.city,
        args.unit,
        args.days.unwrap_or(0),
        args.detail
    ))
}

const DESCRIPTION: &str = "Looks up the weather forecast.";

fn weather_tool() -> impl Tool {
    tool_fn("weather", DESCRIPTION, weather).side_effect(SideEffect::Network)
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Checks the strict-mode rules OpenAI (Structured Outputs, `strict: true`) and Anthropic
/// (strict tool use) document: an object root; every object closed and listing all its
/// properties as required; unions only as `anyOf`; no keyword outside the common subset.
fn assert_strict(schema: &Value, path: &str) {
    const ALLOWED: &[&str] = &[
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "$ref",
        "$defs",
        "format",
        "pattern",
    ];
    let object = schema
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    for key in object.keys() {
        assert!(
            ALLOWED.contains(&key.as_str()),
            "{path}: keyword {key} is not in the strict subset"
        );
    }
    let is_object = object.get("type") == Some(&json!("object"));
    if is_object {
        assert_eq!(
            object.get("additionalProperties"),
            Some(&json!(false)),
            "{path}: not closed"
        );
        let properties = object["properties"].as_object().expect("properties");
        let required: Vec<&str> = object["required"]
            .as_array()
            .expect("required")
            .iter()
            .map(|r| r.as_str().expect("names"))
            .collect();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        let mut sorted = required.clone();
        names.sort();
        sorted.sort();
        assert_eq!(names, sorted, "{path}: every property is required");
        for (name, property) in properties {
            assert_strict(property, &format!("{path}.{name}"));
        }
    }
    if let Some(items) = object.get("items") {
        assert_strict(items, &format!("{path}[]"));
    }
    if let Some(branches) = object.get("anyOf") {
        for (i, branch) in branches
            .as_array()
            .expect("anyOf is a list")
            .iter()
            .enumerate()
        {
            assert_strict(branch, &format!("{path}|{i}"));
        }
    }
    assert!(
        object.contains_key("type") || object.contains_key("anyOf") || object.contains_key("$ref"),
        "{path}: every schema has a type"
    );
}

#[test]
fn the_derived_schema_is_the_strict_fixture() {
    let tool = weather_tool();
    let schema = tool.parameters();
    assert_eq!(schema["type"], "object", "the root is an object");
    assert_strict(&schema, "$");
    assert_eq!(schema, fixture("weather_tool_schema.json"));
    let spec = tool.spec();
    assert_eq!(spec.name, "weather");
    assert_eq!(spec.description, "Looks up the weather forecast.");
}

#[tokio::test]
async fn nulls_for_optional_fields_and_good_arguments_reach_the_function() {
    let tool = weather_tool();
    let args = json!({
        "location": {"city": "Lyon", "country": null},
        "unit": "celsius",
        "days": null,
        "detail": {"kind": "hourly", "hours": 6},
    });
    let output = tool
        .call(args, ToolContext::new("."))
        .await
        .expect("valid arguments");
    assert_eq!(
        output.text_content(),
        "Lyon in Celsius, 0 days ahead, Hourly { hours: 6 }"
    );
    assert!(!output.is_error);
}

#[tokio::test]
async fn bad_arguments_name_the_field() {
    let tool = weather_tool();
    let cases = [
        (
            json!({"location": {"city": 3, "country": null}, "unit": "celsius", "days": null, "detail": {"kind": "brief"}}),
            "location.city",
        ),
        (
            json!({"location": {"city": "Lyon", "country": null}, "unit": "kelvin", "days": null, "detail": {"kind": "brief"}}),
            "unit",
        ),
        (
            json!({"location": {"city": "Lyon", "country": null}, "unit": "celsius", "days": 300, "detail": {"kind": "brief"}}),
            "days",
        ),
        (
            json!({"location": {"country": null}, "unit": "celsius", "days": null, "detail": {"kind": "brief"}}),
            "city",
        ),
        (
            json!({"location": {"city": "Lyon", "country": null}, "days": null, "detail": {"kind": "brief"}}),
            "unit",
        ),
    ];
    for (args, field) in cases {
        let err = tool
            .call(args.clone(), ToolContext::new("."))
            .await
            .expect_err("bad arguments are refused");
        let ToolError::InvalidArguments(message) = &err else {
            panic!("{args}: not InvalidArguments: {err:?}");
        };
        assert!(
            message.contains(field),
            "{args}: {message:?} does not name {field}"
        );
        assert!(err.to_string().starts_with("invalid arguments: "), "{err}");
    }
}

#[tokio::test]
async fn the_model_sees_the_error_and_can_correct_its_call() {
    let provider = ScriptedProvider::new([
        Turn::new().tool_call(
            "c1",
            "weather",
            r#"{"location":{},"unit":"celsius","detail":{"kind":"brief"}}"#,
        ),
        Turn::new().tool_call(
            "c2",
            "weather",
            r#"{"location":{"city":"Lyon"},"unit":"celsius","days":1,"detail":{"kind":"brief"}}"#,
        ),
        Turn::new().text("Mild."),
    ]);
    let agent = Agent::builder(provider.clone())
        .tool(
            tool_fn("weather", DESCRIPTION, weather)
                .side_effect(SideEffect::Network)
                .permission(Permission::Allow),
        )
        .build();
    let events = collect(agent.prompt("Weather in Lyon?")).await;
    let results: Vec<(ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                status, content, ..
            } => Some((
                *status,
                content
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text { text } => text.as_str(),
                        _ => "",
                    })
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, ToolStatus::Error);
    assert!(
        results[0].1.starts_with("invalid arguments") && results[0].1.contains("`city`"),
        "{:?}",
        results[0].1
    );
    // Optional fields may also be left out altogether.
    assert_eq!(
        results[1],
        (
            ToolStatus::Ok,
            "Lyon in Celsius, 1 days ahead, Brief".into()
        )
    );
    // The model's next request carries the error as the call's result.
    let next = &provider.requests()[1];
    let sent = serde_json::to_string(next.messages.last().expect("results")).expect("json");
    assert!(sent.contains("missing field `city`"), "{sent}");
}

#[test]
fn side_effect_and_permission_builders() {
    let pure = tool_fn(
        "pure",
        "No effect.",
        |_: WeatherArgs, _ctx: ToolContext| async { Ok::<_, ToolError>("ok") },
    );
    assert_eq!(Tool::side_effect(&pure), SideEffect::None);
    assert_eq!(Tool::permission(&pure), Permission::Allow);
    let network = weather_tool();
    assert_eq!(Tool::side_effect(&network), SideEffect::Network);
    assert_eq!(Tool::permission(&network), Permission::Prompt);
    let denied = tool_fn("weather", DESCRIPTION, weather)
        .side_effect(SideEffect::Network)
        .permission(Permission::Deny);
    assert_eq!(Tool::permission(&denied), Permission::Deny);
}
