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
    pub kind: PermissionUpdateKind,
    /// `allow` or `deny`.
    #[serde(default)]
    pub behavior: PermissionBehavior,
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
    pub option_id: PermissionOptionId,
    /// Option kind (the same values).
    pub kind: PermissionOptionId,
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
    pub risk_level: WireRiskLevel,
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
    pub interaction: SchemaInteraction,
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

/// The type of a permission update: `addRules`. Any other text is accepted (as
/// [`Self::Other`], or [`Self::Unset`] for an empty or absent one) and adds no rule.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "String")]
pub enum PermissionUpdateKind {
    /// Add the rules.
    #[serde(rename = "addRules")]
    AddRules,
    /// Absent or empty.
    #[default]
    #[serde(rename = "")]
    Unset,
    /// Any other value, as sent.
    #[serde(untagged)]
    Other(String),
}

impl From<String> for PermissionUpdateKind {
    fn from(text: String) -> Self {
        match text.as_str() {
            "addRules" => Self::AddRules,
            "" => Self::Unset,
            _ => Self::Other(text),
        }
    }
}

/// What a permission update's rules do: `allow` or `deny`. An empty or absent one
/// ([`Self::Unset`]) counts as `allow`; any other text is accepted as [`Self::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "String", rename_all = "lowercase")]
pub enum PermissionBehavior {
    /// Allow the matching calls.
    Allow,
    /// Deny them.
    Deny,
    /// Absent or empty.
    #[default]
    #[serde(rename = "")]
    Unset,
    /// Any other value, as sent.
    #[serde(untagged)]
    Other(String),
}

impl From<String> for PermissionBehavior {
    fn from(text: String) -> Self {
        match text.as_str() {
            "allow" => Self::Allow,
            "deny" => Self::Deny,
            "" => Self::Unset,
            _ => Self::Other(text),
        }
    }
}

/// The options of a permission request: `allow_once`, `allow_always` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionId {
    /// Run it this time.
    AllowOnce,
    /// Run it and calls like it.
    AllowAlways,
    /// Do not run it.
    Deny,
}

/// A call's risk: `low`, `medium`, `high` or `critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WireRiskLevel {
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Critical.
    Critical,
}

impl From<agent_core::permission::RiskLevel> for WireRiskLevel {
    fn from(level: agent_core::permission::RiskLevel) -> Self {
        match level {
            agent_core::permission::RiskLevel::Low => Self::Low,
            agent_core::permission::RiskLevel::Medium => Self::Medium,
            agent_core::permission::RiskLevel::High => Self::High,
            agent_core::permission::RiskLevel::Critical => Self::Critical,
        }
    }
}

/// What kind of user input is asked: always `plan_approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaInteraction {
    /// Approve a plan.
    PlanApproval,
}
