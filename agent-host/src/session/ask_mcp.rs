//! MCP servers' questions (`elicitation/create`, form mode) put to the user as the session's
//! questions: a [`InteractionKind::UserInput`] request on the manager's interaction channel,
//! the way `ask_user` asks, for a front end whose protocol has questions but no forms
//! (ZCode's `interaction/requestUserInput`). [`AskThroughInteractions`] lends every session
//! such an [`Elicitor`].
//!
//! Each property of the requested schema is one question (its `title`, else its name, with
//! its `description`): an enumeration (`enum`, `oneOf`/`anyOf` of `{const, title}`) or a
//! boolean offers its choices, an array of them is a multi-select, anything else is an open
//! question. The answers (`{"answers": {question: answer}}`, or `answer_<n>`) are read back
//! by the property's type; agent-mcp then checks them against the schema.

use std::sync::Arc;
use std::time::Duration;

use agent_core::async_trait;
use agent_mcp::{ElicitationAnswer, ElicitationRequest, Elicitor};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::client::SessionClient;
use super::types::{
    InteractionKind, InteractionReply, InteractionRequest, QuestionSpec, UserInputAnswer,
    UserInputRequest,
};

/// Bound on waiting for the user's answers.
pub const ANSWER_WAIT: Duration = Duration::from_secs(30 * 60);

/// Lends every session an [`InteractionElicitor`] on `interactions` (the channel given to the
/// [`SessionManager`](super::SessionManager)).
#[derive(Debug, Clone)]
pub struct AskThroughInteractions {
    interactions: mpsc::UnboundedSender<InteractionRequest>,
}

impl AskThroughInteractions {
    /// Questions go to `interactions`.
    pub fn new(interactions: mpsc::UnboundedSender<InteractionRequest>) -> Self {
        Self { interactions }
    }
}

impl SessionClient for AskThroughInteractions {
    fn elicitor(&self, session_id: &str) -> Option<Arc<dyn Elicitor>> {
        Some(Arc::new(InteractionElicitor {
            session_id: session_id.to_string(),
            interactions: self.interactions.clone(),
        }))
    }
}

/// An MCP server's questions, asked as session `session_id`'s questions.
#[derive(Debug)]
pub struct InteractionElicitor {
    session_id: String,
    interactions: mpsc::UnboundedSender<InteractionRequest>,
}

/// One property of a requested schema, as a question.
struct Field {
    name: String,
    kind: String,
    spec: QuestionSpec,
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The choices of an enumerated property (or of an array's `items`), as `(value, label)`.
fn choices(property: &Value) -> Vec<(String, String)> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let names = property.get("enumNames").and_then(Value::as_array);
        return (values.iter().enumerate())
            .filter_map(|(i, v)| {
                let value = v.as_str()?.to_string();
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_string);
                Some((value, label))
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = property.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .filter_map(|o| {
                    let value = str_of(o, "const")?.to_string();
                    let label = str_of(o, "title").map_or_else(|| value.clone(), str::to_string);
                    Some((value, label))
                })
                .collect();
        }
    }
    Vec::new()
}

/// The questions of a requested schema, one per property.
fn fields(schema: &Map<String, Value>) -> Vec<Field> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let kind = str_of(property, "type").unwrap_or("string").to_string();
            let title = str_of(property, "title").unwrap_or(name);
            let question = match str_of(property, "description") {
                Some(description) => format!("{title} ({description})"),
                None => title.to_string(),
            };
            let (options, multi_select) = match kind.as_str() {
                "boolean" => (
                    vec![("true".into(), "Yes".into()), ("false".into(), "No".into())],
                    false,
                ),
                "array" => (property.get("items").map(choices).unwrap_or_default(), true),
                _ => (choices(property), false),
            };
            Field {
                name: name.clone(),
                kind,
                spec: QuestionSpec {
                    question,
                    header: name.chars().take(12).collect(),
                    options,
                    multi_select,
                },
            }
        })
        .collect()
}

/// The answer to question `index` (`field`) in the content of an accepted request.
fn answer(content: &Value, index: usize, field: &Field) -> Option<String> {
    let given = content
        .get("answers")
        .and_then(|a| a.get(&field.spec.question))
        .or_else(|| content.get(format!("answer_{index}")))?;
    match given {
        Value::String(text) => Some(text.clone()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        other => Some(other.to_string()),
    }
}

/// `text` as a value of the property's type; `None` when it is not one.
fn typed(kind: &str, text: &str) -> Option<Value> {
    let text = text.trim();
    match kind {
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<f64>().ok().map(Value::from),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(Value::Bool(true)),
            "false" | "no" => Some(Value::Bool(false)),
            _ => None,
        },
        "array" => Some(Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_string()))
                .collect(),
        )),
        _ => Some(Value::String(text.to_string())),
    }
}

/// The values of an accepted request's `content`, by property name.
fn values(fields: &[Field], content: &Value) -> Map<String, Value> {
    fields
        .iter()
        .enumerate()
        .filter_map(|(index, field)| {
            let text = answer(content, index, field)?;
            typed(&field.kind, &text).map(|value| (field.name.clone(), value))
        })
        .collect()
}

#[async_trait]
impl Elicitor for InteractionElicitor {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let fields = fields(&request.schema);
        if fields.is_empty() {
            // Nothing to ask: the server wants a confirmation only.
            return ElicitationAnswer::Accept(Map::new());
        }
        let (reply, answered) = oneshot::channel();
        let asked = InteractionRequest {
            session_id: self.session_id.clone(),
            turn_id: None,
            kind: InteractionKind::UserInput(UserInputRequest {
                call_id: None,
                tool_name: "AskUserQuestion".to_string(),
                plan: None,
                questions: fields.iter().map(|f| f.spec.clone()).collect(),
            }),
            reply,
        };
        if self.interactions.send(asked).is_err() {
            return ElicitationAnswer::Cancel;
        }
        tracing::debug!(session = %self.session_id, server = %request.server, message = %request.message, "an MCP server asks the user");
        match tokio::time::timeout(ANSWER_WAIT, answered).await {
            Ok(Ok(InteractionReply::UserInput(UserInputAnswer::Accepted(content)))) => {
                ElicitationAnswer::Accept(values(&fields, &content))
            }
            Ok(Ok(InteractionReply::UserInput(UserInputAnswer::Declined(_)))) => {
                ElicitationAnswer::Decline
            }
            _ => ElicitationAnswer::Cancel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        match json!({"type": "object", "properties": {
            "color": {"type": "string", "title": "Color", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
            "agree": {"type": "boolean", "description": "the terms"},
            "age": {"type": "integer"},
            "pets": {"type": "array", "items": {"anyOf": [{"const": "cat", "title": "Cat"}, {"const": "dog", "title": "Dog"}]}},
            "name": {"type": "string"}
        }}) {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[tokio::test]
    async fn a_form_is_asked_as_questions_and_the_answers_come_back_typed() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let elicitor = AskThroughInteractions::new(tx)
            .elicitor("sess_1")
            .expect("an elicitor");
        let asking = tokio::spawn(async move {
            elicitor
                .elicit(ElicitationRequest {
                    server: "srv".into(),
                    message: "Tell me".into(),
                    schema: schema(),
                })
                .await
        });
        let request = rx.recv().await.expect("asked");
        assert_eq!(request.session_id, "sess_1");
        let InteractionKind::UserInput(input) = &request.kind else {
            panic!("questions expected")
        };
        let by_header = |h: &str| {
            input
                .questions
                .iter()
                .find(|q| q.header == h)
                .cloned()
                .expect("a question")
        };
        assert_eq!(
            by_header("color").options,
            [
                ("r".to_string(), "Red".to_string()),
                ("g".into(), "Green".into())
            ]
        );
        assert_eq!(by_header("hero").options[0].1, "Superman");
        assert_eq!(by_header("agree").question, "agree (the terms)");
        assert!(by_header("pets").multi_select);
        assert!(by_header("name").options.is_empty());
        let answers: Map<String, Value> = input
            .questions
            .iter()
            .map(|q| {
                let value = match q.header.as_str() {
                    "color" => "g",
                    "hero" => "h1",
                    "agree" => "yes",
                    "age" => "42",
                    "pets" => "cat, dog",
                    _ => "Ada",
                };
                (q.question.clone(), Value::String(value.into()))
            })
            .collect();
        let _ = request
            .reply
            .send(InteractionReply::UserInput(UserInputAnswer::Accepted(
                json!({"answers": answers}),
            )));
        let ElicitationAnswer::Accept(values) = asking.await.expect("joined") else {
            panic!("accepted")
        };
        assert_eq!(values["color"], "g");
        assert_eq!(values["agree"], true);
        assert_eq!(values["age"], 42);
        assert_eq!(values["pets"], json!(["cat", "dog"]));
        assert_eq!(values["name"], "Ada");
    }
}
