//! Tools that talk to the user through the front end's client: `ask_user` (ZCode's
//! AskUserQuestion: agent-tools' [`AskUser`] over [`SessionQuestions`]) and
//! `exit_plan_mode` (ExitPlanMode, plan approval). Both are sent as
//! [`InteractionKind::UserInput`] requests over the session's [`InteractionLink`].

use std::sync::{Arc, OnceLock, Weak};

use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use agent_tools::{Answers, AskUser, Question, QuestionChannel};
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

/// The session's [`QuestionChannel`]: agent-tools' `ask_user` ([`AskUser::choices`]) puts
/// its questions to the front end's client as an [`InteractionKind::UserInput`] request
/// (`AskUserQuestion`: ZCode's `interaction/requestUserInput`, an ACP form or permission
/// choices), and reads the answers from the reply's `{"answers": {question: answer}}`.
#[derive(Debug, Clone)]
pub struct SessionQuestions {
    link: InteractionLink,
}

impl SessionQuestions {
    /// The channel of the session behind `link`.
    pub fn new(link: InteractionLink) -> Self {
        Self { link }
    }

    /// The session's `ask_user` tool, asking through `link`.
    pub fn tool(link: InteractionLink) -> AskUser {
        AskUser::choices(Arc::new(Self::new(link)))
    }
}

/// The client's answer to `question`: its entry in `answers` (a string as is, anything
/// else as JSON); empty when it left the question out.
fn answer_of(content: &Value, question: &Question) -> String {
    match content
        .get("answers")
        .and_then(|a| a.get(&question.question))
    {
        Some(Value::String(answer)) => answer.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[async_trait]
impl QuestionChannel for SessionQuestions {
    async fn ask(&self, questions: Vec<Question>, ctx: &ToolContext) -> Answers {
        let specs = questions
            .iter()
            .map(|q| QuestionSpec {
                header: (q.header.clone()).unwrap_or_else(|| q.question.chars().take(12).collect()),
                question: q.question.clone(),
                options: (q.values.iter().cloned())
                    .zip(q.options.iter().cloned())
                    .collect(),
                multi_select: q.multi_select,
            })
            .collect();
        let request = UserInputRequest {
            call_id: Some(ctx.call_id.clone()),
            tool_name: "AskUserQuestion".to_string(),
            plan: None,
            questions: specs,
        };
        match ask(&self.link, ctx, request).await {
            UserInputAnswer::Accepted(content) => {
                Answers::Answered(questions.iter().map(|q| answer_of(&content, q)).collect())
            }
            UserInputAnswer::Declined(reason) => Answers::Declined(reason),
            UserInputAnswer::Cancelled => Answers::Cancelled,
        }
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
