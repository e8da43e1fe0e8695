//! Server → client requests (`interaction/*`) and the client's replies.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Method of a permission request.
pub const REQUEST_PERMISSION: &str = "interaction/requestPermission";

/// Method of a user input request.
pub const REQUEST_USER_INPUT: &str = "interaction/requestUserInput";

/// A permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Don't.
    Deny,
    /// Ask someone else (treated as deny).
    Escalate,
    /// Run with modified input (not supported: treated as deny).
    Modify,
}

/// A rule in a permission update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// Tool name.
    #[serde(default)]
    pub tool_name: String,
    /// Rule content (absent: the whole tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

/// A permission update carried by an "always" reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionUpdate {
    /// `addRules`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `allow` or `deny`.
    #[serde(default)]
    pub behavior: String,
    /// The rules.
    #[serde(default)]
    pub rules: Vec<PermissionRule>,
}

/// The client's reply to `interaction/requestPermission` (also each option's `response`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResponse {
    /// The decision.
    pub decision: Decision,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Modified arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_input: Option<Value>,
    /// Rules to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_updates: Option<Vec<PermissionUpdate>>,
}

/// One option of a permission request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// `allow_once`, `allow_always` or `deny`.
    pub option_id: &'static str,
    /// Option kind.
    pub kind: &'static str,
    /// Label.
    pub name: String,
    /// The exact reply to send for this option.
    pub response: PermissionResponse,
}

/// `interaction/requestPermission` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionParams {
    /// Stable id of this request (re-announces keep it).
    pub request_id: String,
    /// Session id.
    pub session_id: String,
    /// Turn id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Why approval is needed.
    pub reason: String,
    /// `low`, `medium`, `high` or `critical`.
    pub risk_level: &'static str,
    /// Arguments.
    pub input: Value,
    /// The choices.
    pub options: Vec<PermissionOption>,
}

/// An option of a question.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionOption {
    /// Value.
    pub value: String,
    /// Label.
    pub label: String,
}

/// A question for the user.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short header.
    pub header: String,
    /// Choices.
    pub options: Vec<QuestionOption>,
    /// Several may be picked.
    pub multi_select: bool,
}

/// `interaction/requestUserInput` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestUserInputParams {
    /// Stable id of this request.
    pub request_id: String,
    /// Session id.
    pub session_id: String,
    /// Turn id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Call id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool name (`ExitPlanMode` or `AskUserQuestion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Questions (AskUserQuestion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Vec<Question>>,
    /// Input (`{plan}` for plan approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<PlanInput>,
    /// `{interaction: "plan_approval"}` for plan approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<InteractionSchema>,
}

/// The input of a plan approval: `{"plan": …}`.
#[derive(Debug, Clone, Serialize)]
pub struct PlanInput {
    /// The plan, in Markdown.
    pub plan: String,
}

/// What kind of user input is asked: `{"interaction": "plan_approval"}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct InteractionSchema {
    /// Always `plan_approval`.
    pub interaction: &'static str,
}

/// User input reply actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserInputAction {
    /// Answered.
    Accept,
    /// Refused.
    Decline,
    /// Dismissed.
    Cancel,
}

/// The client's reply to `interaction/requestUserInput`.
#[derive(Debug, Clone, Deserialize)]
pub struct UserInputResponse {
    /// What the user did.
    pub action: UserInputAction,
    /// Answers.
    #[serde(default)]
    pub content: Option<Value>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}
