//! Interactions of the ACP agent: permission prompts, plan approval and questions, each
//! put to the client as a `session/request_permission` from a task of its own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use agent_core::permission::Approval;
use agent_host::session::{
    new_id, InteractionKind, InteractionReply, InteractionRequest, QuestionSpec, UserInputAnswer,
    UserInputRequest,
};
use agent_mcp::McpManager;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::Shared;
use crate::acp::{client, mapping};

use PermissionOptionKind::{AllowAlways, AllowOnce, RejectOnce};

/// How long a permission request waits for the call's `tool_call` to be sent first.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(5);

/// Option ids of a permission request.
mod option {
    pub const ALLOW_ONCE: &str = "allow_once";
    pub const ALLOW_ALWAYS: &str = "allow_always";
    pub const REJECT: &str = "reject_once";
    pub const APPROVE_PLAN: &str = "approve";
    pub const KEEP_PLANNING: &str = "reject";
}

/// The `rawInput` of a question put to the client.
#[derive(Serialize)]
struct QuestionInput<'a> {
    header: &'a str,
    question: &'a str,
}

/// The answer content of an approved plan, as the session's `exit_plan_mode` tool reads it.
#[derive(Serialize)]
struct PlanAnswer {
    answer_0: &'static str,
}

fn plan_approved() -> Value {
    serde_json::to_value(PlanAnswer {
        answer_0: option::APPROVE_PLAN,
    })
    .unwrap_or_default()
}

/// The answer content of questions, `{"answers": {question: value}}`, as the session's
/// `ask_user` tool reads it.
fn answers_object(answers: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("answers".to_string(), Value::Object(answers));
    out
}

/// Keys and their values, with a wait (bounded) for a key to be added: an interaction
/// that may arrive before the event it depends on waits for it.
#[derive(Debug, Default)]
pub(crate) struct Awaited {
    entries: Mutex<HashMap<String, String>>,
    tx: watch::Sender<u64>,
}

impl Awaited {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add(&self, key: String, value: &str) {
        self.lock().insert(key, value.to_string());
        self.tx.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    /// The value of `key`, waiting (at most `timeout`) for it to be added.
    async fn wait(&self, key: &str, timeout: Duration) -> Option<String> {
        let mut rx = self.tx.subscribe();
        let found = || self.lock().get(key).cloned();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|_| found().is_some())).await;
        waited.ok().and_then(|_| found())
    }
}

/// Tool call ids whose `tool_call` notification was sent, so that a permission request for
/// a call never reaches the client before the call itself (Zed needs that order).
#[derive(Debug, Default)]
pub(crate) struct Announced(Awaited);

impl Announced {
    fn key(session: &str, call: &str) -> String {
        format!("{session}\u{0}{call}")
    }

    pub(crate) fn add(&self, session: &str, call: &str) {
        self.0.add(Self::key(session, call), "");
    }

    pub(crate) fn forget_session(&self, session: &str) {
        let prefix = format!("{session}\u{0}");
        self.0.lock().retain(|k, _| !k.starts_with(&prefix));
    }

    /// Waits (at most `timeout`) until the call was announced.
    pub(crate) async fn wait(&self, session: &str, call: &str, timeout: Duration) -> bool {
        self.0
            .wait(&Self::key(session, call), timeout)
            .await
            .is_some()
    }
}

/// The sub-agents the prompts of this connection started (a `Task` call's child, and its
/// own children): task id → the ACP session whose prompt runs it. A sub-agent's permission
/// request names its own session (the task id); it is put to the client under the ACP
/// session, and may arrive before that session's turn has passed the `SubagentStarted` on,
/// so it waits (bounded) for it like a call's request waits for its announcement.
pub(crate) type Tasks = Awaited;

/// Where an interaction is asked: the ACP session (a sub-agent's requests go to the
/// session whose prompt runs it), the prefix of its tool call ids (`task_id/` for a
/// sub-agent's, whose calls the client never saw announced), the workspace and the MCP
/// servers that describe the calls.
struct Asker {
    session_id: String,
    prefix: Option<String>,
    cwd: PathBuf,
    mcp: Option<McpManager>,
}

impl Asker {
    async fn of(s: &Shared, session_id: &str) -> Self {
        let own = s.manager.get(session_id).filter(|x| !x.is_subagent());
        let (session, prefix) = match own {
            Some(session) => (Some(session), None),
            None => match s.tasks.wait(session_id, ANNOUNCE_WAIT).await {
                Some(parent) => (s.manager.get(&parent), Some(format!("{session_id}/"))),
                None => {
                    tracing::debug!(session = session_id, "an interaction of an unknown session");
                    (None, None)
                }
            },
        };
        match session {
            Some(session) => Self {
                session_id: session.id().to_string(),
                prefix,
                cwd: PathBuf::from(session.meta().workspace_path),
                mcp: Some(session.mcp().clone()).filter(|m| !m.is_empty()),
            },
            None => Self {
                session_id: session_id.to_string(),
                prefix: None,
                cwd: PathBuf::new(),
                mcp: None,
            },
        }
    }

    fn call_id(&self, id: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{id}"),
            None => id.to_string(),
        }
    }
}

/// Puts one interaction of a session to the client and sends the answer back; dropped
/// (withdrawing the request) when the turn stops waiting.
pub(super) async fn interact(
    s: Arc<Shared>,
    cx: ConnectionTo<Client>,
    request: InteractionRequest,
) {
    let InteractionRequest {
        session_id,
        kind,
        mut reply,
        ..
    } = request;
    let work = async {
        let asker = Asker::of(&s, &session_id).await;
        match kind {
            InteractionKind::Permission(request) => {
                if asker.prefix.is_none()
                    && !s
                        .announced
                        .wait(&session_id, &request.call_id, ANNOUNCE_WAIT)
                        .await
                {
                    tracing::debug!(call = %request.call_id, "asking before the call was announced");
                }
                let tool_call = mapping::permission_tool_call(
                    &request,
                    asker.call_id(&request.call_id),
                    &asker.cwd,
                    asker.mcp.as_ref(),
                );
                let always = format!("Always allow {}", request.tool);
                let options = options([
                    (option::ALLOW_ONCE, "Allow", AllowOnce),
                    (option::ALLOW_ALWAYS, &always, AllowAlways),
                    (option::REJECT, "Reject", RejectOnce),
                ]);
                let picked = ask(&cx, &asker.session_id, tool_call, options).await;
                InteractionReply::Permission(match picked.as_deref() {
                    Some(option::ALLOW_ONCE) => Approval::AllowOnce,
                    Some(option::ALLOW_ALWAYS) => Approval::AllowAlways,
                    Some(_) => Approval::Deny {
                        reason: Some("The user rejected this call.".to_string()),
                    },
                    None => Approval::Deny {
                        reason: Some("The permission request was cancelled.".to_string()),
                    },
                })
            }
            InteractionKind::UserInput(mut request) => {
                request.call_id = request.call_id.map(|id| asker.call_id(&id));
                // Questions as one form when the client takes them (plans keep their
                // approve / keep-planning choice).
                let answer = match request.plan.is_none() && s.client.elicits_forms() {
                    true => {
                        let call = request.call_id.as_deref();
                        client::elicit::ask_user(
                            &s.client,
                            &asker.session_id,
                            call,
                            &request.questions,
                        )
                        .await
                    }
                    false => user_input(&cx, &asker.session_id, request).await,
                };
                InteractionReply::UserInput(answer)
            }
        }
    };
    // When the turn stops waiting (cancel, abort), the request is dropped, which also
    // withdraws it from the client with `$/cancel_request`.
    tokio::select! {
        answer = work => {
            let _ = reply.send(answer);
        }
        _ = reply.closed() => {}
    }
}

/// The options of a request, from `(id, name, kind)`.
fn options<const N: usize>(
    options: [(&str, &str, PermissionOptionKind); N],
) -> Vec<PermissionOption> {
    let option = |(id, name, kind): (&str, &str, _)| {
        PermissionOption::new(id.to_string(), name.to_string(), kind)
    };
    options.into_iter().map(option).collect()
}

/// Puts one `session/request_permission` to the client; the picked option id, or `None`
/// when the client cancelled or failed.
async fn ask(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    tool_call: ToolCallUpdate,
    options: Vec<PermissionOption>,
) -> Option<String> {
    let request = RequestPermissionRequest::new(SessionId::new(session_id), tool_call, options);
    // Bounded like every request to the client: no answer in time is no permission (and
    // the request is withdrawn).
    let asked = cx.send_request(request).block_task();
    match tokio::time::timeout(client::USER_TIMEOUT, asked).await {
        Ok(Ok(response)) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => Some(selected.option_id.0.to_string()),
            _ => None,
        },
        Ok(Err(err)) => {
            tracing::warn!(session = session_id, error = ?err, "session/request_permission failed");
            None
        }
        Err(_) => {
            tracing::warn!(
                session = session_id,
                "session/request_permission was not answered in time"
            );
            None
        }
    }
}

/// Plan approval and questions, put to the client as permission requests: the plan with
/// approve / keep-planning options; each question with its choices as options.
async fn user_input(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    request: UserInputRequest,
) -> UserInputAnswer {
    let call_id = request.call_id.clone().unwrap_or_else(|| new_id("ask"));
    if let Some(plan) = &request.plan {
        let tool_call = ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new()
                .title("Ready to code?".to_string())
                .kind(ToolKind::SwitchMode)
                .status(ToolCallStatus::Pending)
                .content(vec![mapping::tools::text_block(plan.clone()).into()]),
        );
        let options = options([
            (option::APPROVE_PLAN, "Yes, start building", AllowOnce),
            (option::KEEP_PLANNING, "No, keep planning", RejectOnce),
        ]);
        return match ask(cx, session_id, tool_call, options).await.as_deref() {
            Some(option::APPROVE_PLAN) => UserInputAnswer::Accepted(plan_approved()),
            Some(_) => UserInputAnswer::Declined(None),
            None => UserInputAnswer::Cancelled,
        };
    }
    let mut answers = Map::new();
    for (index, question) in request.questions.iter().enumerate() {
        let QuestionSpec {
            question: text,
            header,
            options,
            ..
        } = question;
        let tool_call = ToolCallUpdate::new(
            format!("{call_id}#{index}"),
            ToolCallUpdateFields::new()
                .title(text.clone())
                .kind(ToolKind::Other)
                .status(ToolCallStatus::Pending)
                .raw_input(
                    serde_json::to_value(QuestionInput {
                        header,
                        question: text,
                    })
                    .ok(),
                ),
        );
        let choices = options
            .iter()
            .map(|(value, label)| PermissionOption::new(value.clone(), label.clone(), AllowOnce))
            .collect();
        match ask(cx, session_id, tool_call, choices).await {
            Some(value) => {
                answers.insert(text.clone(), Value::String(value));
            }
            None => return UserInputAnswer::Cancelled,
        }
    }
    UserInputAnswer::Accepted(Value::Object(answers_object(answers)))
}
