//! `ask_user {questions: [{question, header?, options?, multiSelect?}]}`: questions to the
//! person, through the [`QuestionChannel`] a host provides; without one (a headless run)
//! the model is told, as Zero tells it, that nobody can answer and to proceed on its best
//! assumption.
//!
//! One tool, two faces: [`AskUser::new`] is `zero exec`'s `ask_user` (open or
//! multiple-choice questions, answers as numbered `[question]`/`[answer]` pairs);
//! [`AskUser::choices`] is the session hosts' (ZCode's `AskUserQuestion`, an ACP form):
//! multiple-choice questions with `{label, value?}` options, answered as
//! `The user answered:` and a `question: answer` line each.

use std::sync::Arc;

use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

/// Zero's answer when no interactive user is wired up.
pub const NO_USER_TO_ASK: &str = "No interactive user is available to answer questions. \
Proceed with your best assumption, explicitly stating the assumptions you are making.";

/// One question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short title (a tab label), if given.
    pub header: Option<String>,
    /// Suggested answers (empty: an open question).
    pub options: Vec<String>,
    /// What each of `options` answers with, in the same order: its `value` where the call
    /// gave one, else its label.
    pub values: Vec<String>,
    /// Several options may be picked.
    pub multi_select: bool,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answers {
    /// One answer per question, in order (empty: left blank).
    Answered(Vec<String>),
    /// The person declined to answer, maybe saying why.
    Declined(Option<String>),
    /// The question was withdrawn before an answer (the run was cancelled, the client left).
    Cancelled,
}

/// How a host puts questions to its user (ZCode's `interaction/requestUserInput`, an ACP
/// permission-style choice, a terminal prompt).
#[async_trait]
pub trait QuestionChannel: Send + Sync + 'static {
    /// Asks `questions` for the call in `ctx`; resolves when answered or withdrawn (watch
    /// `ctx.cancel`).
    async fn ask(&self, questions: Vec<Question>, ctx: &ToolContext) -> Answers;
}

/// Which program's `ask_user` the tool shows the model (see the module's documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Face {
    /// `zero exec`'s.
    #[default]
    Zero,
    /// The session hosts' multiple-choice questions.
    Choices,
}

/// Asks the user questions.
#[derive(Clone, Default)]
pub struct AskUser {
    channel: Option<Arc<dyn QuestionChannel>>,
    face: Face,
}

impl std::fmt::Debug for AskUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskUser")
            .field("channel", &self.channel.is_some())
            .field("face", &self.face)
            .finish()
    }
}

impl AskUser {
    /// The tool asking through `channel`; `None`: nobody to ask (the answer says so).
    pub fn new(channel: Option<Arc<dyn QuestionChannel>>) -> Self {
        Self {
            channel,
            face: Face::Zero,
        }
    }

    /// The session hosts' `ask_user` (ZCode, ACP), asking through `channel`: each question
    /// has `{label, value?}` options, and the answer reads `The user answered:` followed by
    /// a `question: answer` line per answered question.
    pub fn choices(channel: Arc<dyn QuestionChannel>) -> Self {
        Self {
            channel: Some(channel),
            face: Face::Choices,
        }
    }
}

/// What the model reads when it calls an `ask_user` of the session hosts' face.
fn choices_text(questions: &[Question], answers: &[String]) -> String {
    let lines = questions
        .iter()
        .zip(answers)
        .filter(|(_, a)| !a.is_empty())
        .map(|(q, a)| format!("{}: {a}", q.question))
        .collect::<Vec<_>>();
    format!("The user answered:\n{}", lines.join("\n"))
}

fn choices_parameters() -> Value {
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

fn first_string(object: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| {
        object
            .get(*k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

/// Reads the questions as Zero does: objects or bare strings; options as strings or
/// `{label|value|text}` objects.
pub fn parse_questions(args: &Value) -> Result<Vec<Question>, String> {
    let items = match args.get("questions") {
        None | Some(Value::Null) => return Err("questions is required".into()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("questions must be an array".into()),
    };
    if items.is_empty() {
        return Err("questions must contain at least one question".into());
    }
    let mut questions = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let question = match item {
            Value::String(text) if !text.trim().is_empty() => Question {
                question: text.clone(),
                header: None,
                options: Vec::new(),
                values: Vec::new(),
                multi_select: false,
            },
            Value::String(_) => return Err(format!("question {} must not be empty", i + 1)),
            Value::Object(_) => {
                let text = first_string(item, &["question", "prompt", "text", "q", "title"])
                    .ok_or(format!("question {} question is required", i + 1))?;
                let (options, values) = item
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|options| {
                        options
                            .iter()
                            .filter_map(|o| match o {
                                Value::String(s) => Some(s.trim().to_string())
                                    .filter(|s| !s.is_empty())
                                    .map(|s| (s.clone(), s)),
                                Value::Object(_) => {
                                    let label = first_string(
                                        o,
                                        &["label", "value", "text", "name", "title"],
                                    )?;
                                    let value = first_string(o, &["value"])
                                        .unwrap_or_else(|| label.clone());
                                    Some((label, value))
                                }
                                _ => None,
                            })
                            .unzip()
                    })
                    .unwrap_or_default();
                Question {
                    question: text,
                    header: first_string(item, &["header"]),
                    options,
                    values,
                    multi_select: item
                        .get("multiSelect")
                        .or_else(|| item.get("multi_select"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                }
            }
            _ => return Err(format!("question {} must be an object or string", i + 1)),
        };
        questions.push(question);
    }
    Ok(questions)
}

/// Zero's rendering of the answers: each question with its answer; a prompt dismissed
/// whole is flagged as a skip.
pub fn format_answers(questions: &[Question], answers: &[String]) -> String {
    let answered = |i: usize| answers.get(i).map(|a| a.trim()).filter(|a| !a.is_empty());
    let any = (0..questions.len()).any(|i| answered(i).is_some());
    let mut lines = Vec::new();
    if !questions.is_empty() && !any {
        lines.push("[note] The user dismissed this prompt without answering. Treat this as a skip: do not assume a default — ask again more specifically, or proceed only if the intent is already unambiguous.".to_string());
        lines.push(String::new());
    }
    for (i, q) in questions.iter().enumerate() {
        let answer = answered(i).unwrap_or(if any { "(left blank)" } else { "(skipped)" });
        lines.push(format!("{}. [question] {}", i + 1, q.question));
        lines.push(format!("[answer] {answer}"));
        lines.push(String::new());
    }
    lines.join("\n").trim().to_string()
}

#[async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        if self.face == Face::Choices {
            return "Ask the user one or more multiple-choice questions and wait for the answers. \
                    Use it when a decision is the user's to make.";
        }
        "Ask the user one or more clarifying questions and wait for their answers. Use ONLY for \
         genuinely blocking ambiguity that you cannot resolve from the workspace or reasonable \
         assumptions. When the answer is likely one of a small set, you MAY include 2-4 \
         suggested `options`; omit them for open-ended questions. If no interactive user is \
         available, this returns guidance to proceed with your best assumption instead of \
         blocking."
    }

    fn parameters(&self) -> Value {
        if self.face == Face::Choices {
            return choices_parameters();
        }
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "description": "One or more questions to ask the user.",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The non-empty question to ask the user.", "minLength": 1},
                            "header": {"type": "string", "description": "Optional short title (2-3 words) used as this question's tab label in a multi-question prompt."},
                            "options": {"type": "array", "description": "Optional list of 2-4 suggested answer choices (string labels) for a quick picker.", "items": {"type": "string"}},
                            "multiSelect": {"type": "boolean", "description": "Whether multiple options may be selected (defaults to false)."}
                        },
                        "required": ["question"]
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let questions = match self.face {
            Face::Zero => parse_questions(&args).map_err(|e| {
                ToolError::Failed(format!("Error: Invalid arguments for ask_user: {e}"))
            })?,
            Face::Choices => parse_questions(&args)
                .ok()
                .filter(|questions| questions.iter().all(|q| !q.options.is_empty()))
                .ok_or_else(|| {
                    ToolError::InvalidArguments(
                        "give at least one question, each with at least one option".to_string(),
                    )
                })?,
        };
        let Some(channel) = &self.channel else {
            return Ok(ToolOutput::text(NO_USER_TO_ASK));
        };
        let answers = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => Answers::Cancelled,
            answers = channel.ask(questions.clone(), &ctx) => answers,
        };
        Ok(match answers {
            Answers::Answered(answers) => ToolOutput::text(match self.face {
                Face::Zero => format_answers(&questions, &answers),
                Face::Choices => choices_text(&questions, &answers),
            }),
            Answers::Declined(reason) => ToolOutput::error(format!(
                "The user declined to answer{}.",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )),
            Answers::Cancelled => {
                ToolOutput::error("The question was cancelled before the user answered.")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_parse_leniently() {
        let questions = parse_questions(&json!({"questions": [
            "Which branch?",
            {"question": "Language?", "header": "Lang", "options": ["Rust", {"label": "Go"}, ""], "multiSelect": true}
        ]}))
        .expect("valid");
        assert_eq!(questions[0].question, "Which branch?");
        assert!(questions[0].options.is_empty());
        assert_eq!(questions[1].options, ["Rust", "Go"]);
        assert_eq!(questions[1].values, ["Rust", "Go"]);
        assert_eq!(questions[1].header.as_deref(), Some("Lang"));
        assert!(questions[1].multi_select);
        assert!(parse_questions(&json!({"questions": []})).is_err());
        assert!(parse_questions(&json!({})).is_err());
    }

    #[test]
    fn answers_render_as_zero_does() {
        let q = parse_questions(&json!({"questions": ["A?", "B?"]})).expect("valid");
        assert_eq!(
            format_answers(&q, &["yes".into(), String::new()]),
            "1. [question] A?\n[answer] yes\n\n2. [question] B?\n[answer] (left blank)"
        );
        assert!(format_answers(&q, &[]).starts_with("[note] The user dismissed"));
    }

    #[test]
    fn the_hosts_face_keeps_option_values_and_answers_by_question() {
        let q = parse_questions(&json!({"questions": [
            {"question": "File?", "options": [{"label": "Auth", "value": "auth.rs"}, {"label": "user.rs"}]},
            {"question": "Why?", "options": [{"label": "because"}]}
        ]}))
        .expect("valid");
        assert_eq!(q[0].options, ["Auth", "user.rs"]);
        assert_eq!(q[0].values, ["auth.rs", "user.rs"]);
        assert_eq!(
            choices_text(&q, &["auth.rs".into(), String::new()]),
            "The user answered:\nFile?: auth.rs"
        );
    }
}
