//! Questions for the person at the client, as ACP `elicitation/create`:
//!
//! - [`ask_user`]: the `ask_user` tool's questions, as one form (`q_0`, `q_1`, … each a
//!   choice among the question's options, several for a multi-select, free text without
//!   options), with `elicitation.form`;
//! - [`McpQuestions`]: an MCP server's `elicitation/create` (form mode), its requested
//!   schema passed on, with `elicitation.form`;
//! - [`UrlPrompt`]: an MCP server's OAuth authorization URL (URL mode), with
//!   `elicitation.url`, and `elicitation/complete` once the sign-in it asked for is over.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    CompleteElicitationNotification, CreateElicitationRequest, ElicitationAction,
    ElicitationContentValue, ElicitationFormMode, ElicitationId, ElicitationSchema,
    ElicitationSessionScope, ElicitationUrlMode, EnumOption, MultiSelectPropertySchema, SessionId,
    StringPropertySchema,
};
use agent_core::async_trait;
use agent_host::session::{QuestionSpec, UserInputAnswer};
use agent_mcp::oauth::{AuthorizationPrompt, Presented};
use agent_mcp::{ElicitationAnswer, ElicitationRequest, Elicitor};
use serde_json::{Map, Value};

use super::{ClientSide, USER_TIMEOUT};

/// The form key of question `index`.
fn key(index: usize) -> String {
    format!("q_{index}")
}

/// The form of `questions`: one required property per question.
pub(crate) fn question_form(questions: &[QuestionSpec]) -> ElicitationSchema {
    questions
        .iter()
        .enumerate()
        .fold(ElicitationSchema::new(), |schema, (index, q)| {
            let choices = || {
                (q.options.iter())
                    .map(|(value, label)| EnumOption::new(value.clone(), label.clone()))
                    .collect::<Vec<_>>()
            };
            let title = Some(q.question.clone());
            let description = Some(q.header.clone()).filter(|h| !h.is_empty());
            match (q.options.is_empty(), q.multi_select) {
                (false, true) => schema.property(
                    key(index),
                    MultiSelectPropertySchema::titled(choices())
                        .title(title)
                        .description(description),
                    true,
                ),
                (false, false) => schema.property(
                    key(index),
                    StringPropertySchema::new()
                        .one_of(choices())
                        .title(title)
                        .description(description),
                    true,
                ),
                (true, _) => schema.property(
                    key(index),
                    StringPropertySchema::new()
                        .title(title)
                        .description(description),
                    true,
                ),
            }
        })
}

/// The answers of an accepted form, as the session's `ask_user` tool reads them:
/// `{"answers": {question: answer}}` (a multi-select's picks joined with ", "; an
/// unanswered question left out).
pub(crate) fn form_answers(
    questions: &[QuestionSpec],
    content: &BTreeMap<String, ElicitationContentValue>,
) -> Value {
    let mut answers = Map::new();
    for (index, q) in questions.iter().enumerate() {
        let answer = match content.get(&key(index)) {
            Some(ElicitationContentValue::String(s)) => s.clone(),
            Some(ElicitationContentValue::StringArray(picked)) => picked.join(", "),
            Some(ElicitationContentValue::Integer(n)) => n.to_string(),
            Some(ElicitationContentValue::Number(n)) => n.to_string(),
            Some(ElicitationContentValue::Boolean(b)) => b.to_string(),
            Some(_) | None => continue,
        };
        answers.insert(q.question.clone(), Value::String(answer));
    }
    let mut out = Map::new();
    out.insert("answers".to_string(), Value::Object(answers));
    Value::Object(out)
}

/// Puts `questions` (of tool call `call_id`) to the user as one form.
pub(crate) async fn ask_user(
    side: &ClientSide,
    session_id: &str,
    call_id: Option<&str>,
    questions: &[QuestionSpec],
) -> UserInputAnswer {
    let scope = ElicitationSessionScope::new(SessionId::new(session_id)).tool_call_id(
        call_id.map(|id| agent_client_protocol::v1::schema::ToolCallId::new(id.to_string())),
    );
    let message = match questions {
        [one] => one.question.clone(),
        many => format!("Please answer {} questions.", many.len()),
    };
    let asked = CreateElicitationRequest::new(
        ElicitationFormMode::new(scope, question_form(questions)),
        message,
    );
    match side
        .request("elicitation/create", asked, USER_TIMEOUT)
        .await
    {
        Ok(answer) => match answer.action {
            ElicitationAction::Accept(accepted) => UserInputAnswer::Accepted(form_answers(
                questions,
                &accepted.content.unwrap_or_default(),
            )),
            ElicitationAction::Decline => UserInputAnswer::Declined(None),
            _ => UserInputAnswer::Cancelled,
        },
        Err(err) => {
            tracing::warn!(session = session_id, error = %err, "elicitation/create failed");
            UserInputAnswer::Cancelled
        }
    }
}

/// An MCP server's questions, put to the user of session `session` as forms.
#[derive(Debug)]
pub(crate) struct McpQuestions {
    side: Arc<ClientSide>,
    session: SessionId,
}

impl McpQuestions {
    pub(crate) fn new(side: Arc<ClientSide>, session: &str) -> Self {
        Self {
            side,
            session: SessionId::new(session),
        }
    }
}

#[async_trait]
impl Elicitor for McpQuestions {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let ElicitationRequest {
            server,
            message,
            schema,
        } = request;
        let schema: ElicitationSchema = match serde_json::from_value(Value::Object(schema)) {
            Ok(schema) => schema,
            Err(err) => {
                tracing::warn!(%server, error = %err, "an MCP elicitation schema ACP cannot carry; declined");
                return ElicitationAnswer::Decline;
            }
        };
        let scope = ElicitationSessionScope::new(self.session.clone());
        let asked = CreateElicitationRequest::new(
            ElicitationFormMode::new(scope, schema),
            format!("{server}: {message}"),
        );
        match self
            .side
            .request("elicitation/create", asked, USER_TIMEOUT)
            .await
        {
            Ok(answer) => match answer.action {
                ElicitationAction::Accept(accepted) => {
                    let content = accepted.content.unwrap_or_default();
                    let values = content
                        .into_iter()
                        .filter_map(|(name, value)| {
                            serde_json::to_value(value).ok().map(|v| (name, v))
                        })
                        .collect();
                    ElicitationAnswer::Accept(values)
                }
                ElicitationAction::Decline => ElicitationAnswer::Decline,
                _ => ElicitationAnswer::Cancel,
            },
            Err(err) => {
                tracing::warn!(%server, error = %err, "elicitation/create failed");
                ElicitationAnswer::Cancel
            }
        }
    }
}

/// An MCP server's authorization URL, shown to the user of session `session` (URL mode);
/// when the sign-in is over (the browser came back, or the wait for it ended), the client is
/// told with `elicitation/complete`, so it can take its prompt down.
#[derive(Debug)]
pub(crate) struct UrlPrompt {
    side: Arc<ClientSide>,
    session: SessionId,
    /// The elicitation each URL on show was sent as.
    shown: Mutex<HashMap<String, ElicitationId>>,
}

impl UrlPrompt {
    pub(crate) fn new(side: Arc<ClientSide>, session: &str) -> Self {
        Self {
            side,
            session: SessionId::new(session),
            shown: Mutex::default(),
        }
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, HashMap<String, ElicitationId>> {
        // Nothing panics while holding the lock; recover the map if that ever changes.
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl AuthorizationPrompt for UrlPrompt {
    async fn present(&self, server: &str, url: &str) -> Presented {
        let Some(cx) = self.side.connection() else {
            return Presented::NotShown("the client is not connected".to_string());
        };
        let id = ElicitationId::new(agent_core::ids::prefixed("elicit"));
        self.shown().insert(url.to_string(), id.clone());
        let mode = ElicitationUrlMode::new(
            ElicitationSessionScope::new(self.session.clone()),
            id,
            url.to_string(),
        );
        let asked = CreateElicitationRequest::new(
            mode,
            format!("Authorize the MCP server {server} in your browser."),
        );
        // Not waited for here: a server is authorized while its session is set up, inside
        // the client's own request, whose handler must not wait on the client. The sign-in
        // completes through the browser's callback (bounded by its own timeout).
        let answer = cx.send_request(asked).block_task();
        let server = server.to_string();
        tokio::spawn(async move {
            match tokio::time::timeout(USER_TIMEOUT, answer).await {
                Ok(Ok(answer)) => match answer.action {
                    ElicitationAction::Accept(_) => {}
                    _ => tracing::info!(%server, "the user did not open the authorization URL"),
                },
                Ok(Err(err)) => {
                    tracing::warn!(%server, error = ?err, "elicitation/create (url) failed")
                }
                Err(_) => {}
            }
        });
        Presented::Shown
    }

    async fn finished(&self, server: &str, url: &str, authorized: bool) {
        let Some(id) = self.shown().remove(url) else {
            return;
        };
        let Some(cx) = self.side.connection() else {
            return;
        };
        tracing::debug!(%server, authorized, "the authorization URL is done with");
        if let Err(err) = cx.send_notification(CompleteElicitationNotification::new(id)) {
            tracing::debug!(%server, error = ?err, "cannot send elicitation/complete");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(text: &str, options: &[(&str, &str)], multi: bool) -> QuestionSpec {
        QuestionSpec {
            question: text.to_string(),
            header: "Pick".to_string(),
            options: options
                .iter()
                .map(|(v, l)| (v.to_string(), l.to_string()))
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn questions_become_one_form_and_its_answers_come_back_by_question() {
        let questions = [
            question(
                "Which files?",
                &[("auth", "auth.test.ts"), ("user", "user.test.ts")],
                true,
            ),
            question("Go?", &[("yes", "Yes"), ("no", "No")], false),
            question("Why?", &[], false),
        ];
        let form = serde_json::to_value(question_form(&questions)).expect("json");
        assert_eq!(form["type"], "object");
        assert_eq!(form["required"], serde_json::json!(["q_0", "q_1", "q_2"]));
        assert_eq!(form["properties"]["q_0"]["type"], "array");
        assert_eq!(
            form["properties"]["q_0"]["items"]["anyOf"][0]["const"],
            "auth"
        );
        assert_eq!(form["properties"]["q_1"]["oneOf"][1]["title"], "No");
        assert_eq!(form["properties"]["q_1"]["title"], "Go?");
        assert_eq!(form["properties"]["q_2"]["type"], "string");

        let mut content = BTreeMap::new();
        content.insert(
            "q_0".to_string(),
            ElicitationContentValue::StringArray(vec!["auth".into(), "user".into()]),
        );
        content.insert("q_1".to_string(), ElicitationContentValue::from("yes"));
        let answers = form_answers(&questions, &content);
        assert_eq!(answers["answers"]["Which files?"], "auth, user");
        assert_eq!(answers["answers"]["Go?"], "yes");
        assert!(answers["answers"].get("Why?").is_none());
    }
}
