//! Tools that talk to the user through the front end's client: `ask_user` (ZCode's
//! AskUserQuestion) and `exit_plan_mode` (ExitPlanMode, plan approval). Both are sent as
//! [`InteractionKind::UserInput`] requests over the session's [`InteractionLink`].

use std::sync::{Arc, OnceLock, Weak};

use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use super::interaction::InteractionLink;
use super::live::Session;
use super::types::{
    InteractionKind, InteractionReply, QuestionSpec, SessionMode, UserInputAnswer, UserInputRequest,
};

/// The session a tool belongs to, set once the session exists.
pub type SessionSlot = Arc<OnceLock<Weak<Session>>>;

async fn ask(
    link: &InteractionLink,
    ctx: &ToolContext,
    request: UserInputRequest,
) -> UserInputAnswer {
    let asked = link.ask(InteractionKind::UserInput(request));
    tokio::select! {
        reply = asked => match reply {
            Some(InteractionReply::UserInput(answer)) => answer,
            _ => UserInputAnswer::Cancelled,
        },
        _ = ctx.cancel.cancelled() => UserInputAnswer::Cancelled,
    }
}

#[derive(Deserialize)]
struct OptionArg {
    label: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuestionArg {
    question: String,
    #[serde(default)]
    header: Option<String>,
    options: Vec<OptionArg>,
    #[serde(default, alias = "multi_select")]
    multi_select: bool,
}

#[derive(Deserialize)]
struct AskArgs {
    questions: Vec<QuestionArg>,
}

/// `ask_user`: asks the user multiple-choice questions and returns the answers.
#[derive(Debug, Clone)]
pub struct AskUserTool {
    link: InteractionLink,
}

impl AskUserTool {
    /// The tool of the session behind `link`.
    pub fn new(link: InteractionLink) -> Self {
        Self { link }
    }
}

fn answers_text(content: &Value) -> String {
    match content.get("answers").and_then(Value::as_object) {
        Some(answers) => answers
            .iter()
            .map(|(q, a)| match a.as_str() {
                Some(a) => format!("{q}: {a}"),
                None => format!("{q}: {a}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => content.to_string(),
    }
}

#[async_trait]
impl Tool for AskUserTool {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Ask the user one or more multiple-choice questions and wait for the answers. Use it \
         when a decision is the user's to make."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string"},
                            "header": {"type": "string", "description": "A short label."},
                            "options": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "value": {"type": "string"}
                                    },
                                    "required": ["label"]
                                }
                            },
                            "multiSelect": {"type": "boolean"}
                        },
                        "required": ["question", "options"]
                    }
                }
            },
            "required": ["questions"]
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AskArgs =
            serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        if args.questions.is_empty() || args.questions.iter().any(|q| q.options.is_empty()) {
            return Err(ToolError::InvalidArguments(
                "give at least one question, each with at least one option".to_string(),
            ));
        }
        let questions = args
            .questions
            .into_iter()
            .map(|q| QuestionSpec {
                header: q
                    .header
                    .unwrap_or_else(|| q.question.chars().take(12).collect()),
                question: q.question,
                options: q
                    .options
                    .into_iter()
                    .map(|o| (o.value.unwrap_or_else(|| o.label.clone()), o.label))
                    .collect(),
                multi_select: q.multi_select,
            })
            .collect();
        let request = UserInputRequest {
            call_id: Some(ctx.call_id.clone()),
            tool_name: "AskUserQuestion".to_string(),
            plan: None,
            questions,
        };
        Ok(match ask(&self.link, &ctx, request).await {
            UserInputAnswer::Accepted(content) => {
                ToolOutput::text(format!("The user answered:\n{}", answers_text(&content)))
            }
            UserInputAnswer::Declined(reason) => ToolOutput::error(format!(
                "The user declined to answer{}.",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )),
            UserInputAnswer::Cancelled => {
                ToolOutput::error("The question was cancelled before the user answered.")
            }
        })
    }
}

/// `exit_plan_mode`: presents a plan for approval; when approved, the session leaves plan
/// mode (to `build`).
#[derive(Debug, Clone)]
pub struct ExitPlanModeTool {
    link: InteractionLink,
    session: SessionSlot,
}

impl ExitPlanModeTool {
    /// The tool of the session behind `link`; `session` is filled in once it exists.
    pub fn new(link: InteractionLink, session: SessionSlot) -> Self {
        Self { link, session }
    }
}

fn approved(content: &Value) -> bool {
    match content.get("answer_0").and_then(Value::as_str) {
        Some(answer) => !matches!(
            answer.to_ascii_lowercase().as_str(),
            "reject" | "rejected" | "deny" | "no"
        ),
        None => true,
    }
}

#[async_trait]
impl Tool for ExitPlanModeTool {
    fn name(&self) -> &str {
        "exit_plan_mode"
    }

    fn description(&self) -> &str {
        "In plan mode, present your implementation plan to the user for approval. When the \
         user approves, plan mode ends and you may make changes."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": "The plan, in Markdown."}},
            "required": ["plan"]
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let plan = args
            .get("plan")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`plan` must be a non-empty string".into()))?
            .to_string();
        let session = self.session.get().and_then(Weak::upgrade);
        if let Some(session) = &session {
            if session.meta().mode != SessionMode::Plan {
                return Ok(ToolOutput::text("Not in plan mode; go ahead."));
            }
        }
        let request = UserInputRequest {
            call_id: Some(ctx.call_id.clone()),
            tool_name: "ExitPlanMode".to_string(),
            plan: Some(plan),
            questions: Vec::new(),
        };
        Ok(match ask(&self.link, &ctx, request).await {
            UserInputAnswer::Accepted(content) if approved(&content) => {
                if let Some(session) = session {
                    session
                        .set_mode(SessionMode::Build)
                        .await
                        .map_err(|e| ToolError::Failed(format!("cannot leave plan mode: {e}")))?;
                }
                ToolOutput::text("The user approved the plan. Plan mode is over; carry it out.")
            }
            UserInputAnswer::Accepted(_) | UserInputAnswer::Declined(_) => {
                ToolOutput::error("The user rejected the plan. Stay in plan mode and revise it.")
            }
            UserInputAnswer::Cancelled => {
                ToolOutput::error("Plan approval was cancelled before the user answered.")
            }
        })
    }
}
