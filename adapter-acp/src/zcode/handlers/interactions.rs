//! Interactions of the ZCode app-server: permission prompts and user-input requests put
//! to the client as server requests (`interaction/requestPermission`,
//! `interaction/requestUserInput`), and the client's answers mapped back.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use agent_core::permission::Approval;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Pending, PendingKind, Server};
use crate::zcode::wire::{
    Decision, ErrorObject, InteractionSchema, Outgoing, PermissionOption, PermissionResponse,
    PermissionRule, PermissionUpdate, PlanInput, Question, QuestionOption, RequestId,
    RequestPermissionParams, RequestUserInputParams, UserInputAction, UserInputResponse,
    REQUEST_PERMISSION, REQUEST_USER_INPUT,
};
use crate::zcode::wire::{
    PermissionBehavior, PermissionOptionId, PermissionUpdateKind, SchemaInteraction,
};
use agent_host::session::{
    new_id, InteractionKind, InteractionReply, InteractionRequest, UserInputAnswer,
};

use PermissionOptionId::{AllowAlways, AllowOnce, Deny};

impl Server {
    /// Puts every interaction of the sessions to the client until the sessions are gone.
    pub(crate) async fn interaction_loop(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<InteractionRequest>,
    ) {
        while let Some(request) = rx.recv().await {
            self.put_interaction(request);
        }
    }

    fn put_interaction(&self, request: InteractionRequest) {
        if request.reply.is_closed() {
            return; // the run was aborted before we got here
        }
        let server_id = format!(
            "server-{}",
            self.next_request.fetch_add(1, Ordering::Relaxed)
        );
        let request_id = new_id("req");
        let (method, params, kind) = match &request.kind {
            InteractionKind::Permission(req) => {
                let always = format!("Always allow {} in this session", req.tool);
                let rule = PermissionUpdate {
                    kind: PermissionUpdateKind::AddRules,
                    behavior: PermissionBehavior::Allow,
                    rules: vec![PermissionRule {
                        tool_name: req.tool.clone(),
                        rule_content: None,
                    }],
                };
                let options = [
                    (AllowOnce, "Allow once", Decision::Allow, "Approved once"),
                    (AllowAlways, &*always, Decision::Allow, &*always),
                    (Deny, "Deny", Decision::Deny, "Denied"),
                ]
                .map(|(id, name, decision, reason)| PermissionOption {
                    option_id: id,
                    kind: id,
                    name: name.to_string(),
                    response: PermissionResponse {
                        decision,
                        reason: Some(reason.to_string()),
                        modified_input: None,
                        // "Always" adds a rule allowing the tool.
                        permission_updates: (id == AllowAlways).then(|| vec![rule.clone()]),
                    },
                })
                .into();
                let params = RequestPermissionParams {
                    request_id: request_id.clone(),
                    session_id: request.session_id.clone(),
                    turn_id: request.turn_id.clone(),
                    tool_call_id: req.call_id.clone(),
                    tool_name: req.tool.clone(),
                    reason: req.reason.clone().unwrap_or_else(|| req.risk.reason()),
                    risk_level: req.risk.level.into(),
                    input: req.args.clone(),
                    options,
                };
                (
                    REQUEST_PERMISSION,
                    serde_json::to_value(params),
                    PendingKind::Permission,
                )
            }
            InteractionKind::UserInput(req) => {
                let params = RequestUserInputParams {
                    request_id: request_id.clone(),
                    session_id: request.session_id.clone(),
                    turn_id: request.turn_id.clone(),
                    tool_call_id: req.call_id.clone(),
                    tool_name: Some(req.tool_name.clone()),
                    questions: (!req.questions.is_empty()).then(|| {
                        req.questions
                            .iter()
                            .map(|q| Question {
                                question: q.question.clone(),
                                header: q.header.clone(),
                                options: q
                                    .options
                                    .iter()
                                    .map(|(value, label)| QuestionOption {
                                        value: value.clone(),
                                        label: label.clone(),
                                    })
                                    .collect(),
                                multi_select: q.multi_select,
                            })
                            .collect()
                    }),
                    input: req
                        .plan
                        .as_ref()
                        .map(|plan| PlanInput { plan: plan.clone() }),
                    schema: req.plan.as_ref().map(|_| InteractionSchema {
                        interaction: SchemaInteraction::PlanApproval,
                    }),
                };
                (
                    REQUEST_USER_INPUT,
                    serde_json::to_value(params),
                    PendingKind::UserInput,
                )
            }
        };
        let params = match params {
            Ok(params) => params,
            Err(err) => {
                tracing::error!(error = %err, "cannot serialise an interaction request");
                return; // dropping the reply cancels the interaction
            }
        };
        self.pending().insert(
            server_id.clone(),
            Pending {
                session_id: request.session_id,
                request_id,
                kind,
                reply: request.reply,
            },
        );
        self.out.send(&Outgoing::Request {
            id: RequestId::Str(server_id),
            method: method.to_string(),
            params,
        });
    }

    pub(super) fn handle_response(&self, id: &RequestId, reply: Result<Value, ErrorObject>) {
        let key = id.to_string();
        let Some(pending) = self.pending().remove(&key) else {
            tracing::warn!(id = %key, "reply to an unknown or cancelled server request");
            return;
        };
        let answer = match pending.kind {
            PendingKind::Permission => InteractionReply::Permission(permission_answer(reply)),
            PendingKind::UserInput => InteractionReply::UserInput(user_input_answer(reply)),
        };
        if pending.reply.send(answer).is_err() {
            tracing::debug!(id = %key, "interaction answered after its turn stopped waiting");
        }
    }

    /// Drops a session's pending interactions (their waits end as cancelled).
    pub(super) fn cancel_interactions(&self, session_id: &str) {
        self.pending().retain(|_, p| p.session_id != session_id);
    }
}

/// Maps the client's reply to a permission request to an approval.
fn permission_answer(reply: Result<Value, ErrorObject>) -> Approval {
    let value = match reply {
        Ok(value) => value,
        Err(err) => {
            return Approval::Deny {
                reason: Some(format!("the client could not answer: {}", err.message)),
            }
        }
    };
    if let Ok(response) = serde_json::from_value::<PermissionResponse>(value.clone()) {
        return match response.decision {
            Decision::Allow => {
                let always = response.permission_updates.iter().flatten().any(|u| {
                    u.kind == PermissionUpdateKind::AddRules
                        && matches!(
                            u.behavior,
                            PermissionBehavior::Unset | PermissionBehavior::Allow
                        )
                });
                match always {
                    true => Approval::AllowAlways,
                    false => Approval::AllowOnce,
                }
            }
            Decision::Deny | Decision::Escalate | Decision::Modify => Approval::Deny {
                reason: response.reason.or(Some("Denied by the user".to_string())),
            },
        };
    }
    // Lenient: an option id, bare or as an ACP outcome.
    let option = value
        .get("optionId")
        .or_else(|| value.pointer("/outcome/optionId"))
        .and_then(Value::as_str);
    match option {
        Some("allow_once" | "allow") => Approval::AllowOnce,
        Some("allow_always" | "allow_project") => Approval::AllowAlways,
        _ => Approval::Deny {
            reason: Some("Denied by the user".to_string()),
        },
    }
}

/// Maps the client's reply to a user input request.
fn user_input_answer(reply: Result<Value, ErrorObject>) -> UserInputAnswer {
    match reply.map(serde_json::from_value::<UserInputResponse>) {
        Ok(Ok(response)) => match response.action {
            UserInputAction::Accept => {
                UserInputAnswer::Accepted(response.content.unwrap_or(Value::Null))
            }
            UserInputAction::Decline => UserInputAnswer::Declined(response.reason),
            UserInputAction::Cancel => UserInputAnswer::Cancelled,
        },
        Ok(Err(err)) => UserInputAnswer::Declined(Some(format!("unreadable answer: {err}"))),
        Err(err) => UserInputAnswer::Declined(Some(err.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn permission_replies_map_to_approvals() {
        let always = json!({"decision": "allow", "permissionUpdates": [
            {"type": "addRules", "behavior": "allow", "rules": [{"toolName": "bash"}]}]});
        assert_eq!(permission_answer(Ok(always)), Approval::AllowAlways);
        assert_eq!(
            permission_answer(Ok(json!({"decision": "allow"}))),
            Approval::AllowOnce
        );
        assert!(matches!(
            permission_answer(Ok(json!({"decision": "deny", "reason": "no"}))),
            Approval::Deny { reason: Some(r) } if r == "no"
        ));
        assert_eq!(
            permission_answer(Ok(
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
            )),
            Approval::AllowOnce
        );
    }
}
