//! Structured output: a run whose answer must be JSON of a given schema
//! ([`Agent::prompt_as`], [`Agent::prompt_structured`]).
//!
//! The schema travels with the run, not the agent: every model call of a structured run
//! carries it as [`ProviderRequest::output_schema`](crate::provider::ProviderRequest), and each
//! provider asks for it the way its API can. When the model's final answer does not pass
//! the run's check, the loop gives it one repair turn (a synthetic user message quoting the
//! error); a second failure ends the run with that answer, and [`Agent::prompt_as`] fails
//! with [`AgentError::InvalidOutput`].
//!
//! [`Agent::prompt_as`]: crate::Agent::prompt_as
//! [`Agent::prompt_structured`]: crate::Agent::prompt_structured
//! [`AgentError::InvalidOutput`]: crate::AgentError::InvalidOutput

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::provider::OutputSchema;
use crate::schema::{SchemaError, StrictSchema};

type Check = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// What a structured run's answer must be: the schema the provider is asked for, and the
/// check the loop runs on the final answer.
#[derive(Clone)]
pub struct OutputSpec {
    pub(crate) schema: OutputSchema,
    check: Arc<Check>,
}

impl fmt::Debug for OutputSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSpec")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSpec {
    /// An answer that must parse as `T`; the schema is `T`'s, made strict ([`StrictSchema`]).
    pub fn of<T: DeserializeOwned + JsonSchema>() -> Self {
        Self::from_strict::<T>(Arc::new(StrictSchema::of::<T>()))
    }

    pub(crate) fn from_strict<T: DeserializeOwned + JsonSchema>(strict: Arc<StrictSchema>) -> Self {
        let schema = OutputSchema {
            name: schema_name(&T::schema_name()),
            schema: strict.schema.clone(),
            strict: strict.strict,
        };
        Self::new(schema, move |answer| {
            parse_answer::<T>(&strict, answer)
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }

    /// An answer checked by `check` (which returns the error to show the model), with
    /// `schema` asked of the provider: for a host that validates against a JSON schema
    /// file itself.
    pub fn new(
        schema: OutputSchema,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            schema,
            check: Arc::new(check),
        }
    }

    /// The schema the provider is asked for.
    pub fn schema(&self) -> &OutputSchema {
        &self.schema
    }

    /// Runs the check on an answer.
    pub fn check(&self, answer: &str) -> Result<(), String> {
        (self.check)(answer)
    }

    /// The synthetic user message of the repair turn.
    pub(crate) fn repair_prompt(&self, error: &str) -> String {
        format!(
            "Your answer does not match the required JSON schema `{}`: {error}\n\
             Reply again with only the corrected JSON value, nothing else.",
            self.schema.name
        )
    }
}

/// A schema name as the APIs accept it: `[A-Za-z0-9_-]`, 1 to 64 characters.
fn schema_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    match name.is_empty() {
        true => "output".to_string(),
        false => name,
    }
}

/// Reads an answer as `T`: the JSON text (a Markdown code fence around it is tolerated),
/// then the value against the strict schema.
pub fn parse_answer<T: DeserializeOwned>(
    schema: &StrictSchema,
    answer: &str,
) -> Result<T, SchemaError> {
    let json = strip_fence(answer.trim());
    let value: Value = serde_json::from_str(json).map_err(|err| SchemaError {
        path: ".".into(),
        message: format!("the answer is not JSON: {err}"),
    })?;
    schema.parse(value)
}

/// The body of a ```` ```json … ``` ```` fence, or the text itself.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // Skip the info string (`json`) on the opening line.
    match body.split_once('\n') {
        Some((info, body)) if !info.contains('{') && !info.contains('[') => body.trim(),
        _ => body.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_tolerated() {
        assert_eq!(strip_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fence("```\n[1]\n```"), "[1]");
        assert_eq!(strip_fence("{\"a\":1}"), "{\"a\":1}");
    }

    #[test]
    fn schema_names_fit_the_apis() {
        assert_eq!(schema_name("Vec<City>"), "Vec_City_");
        assert_eq!(schema_name(""), "output");
        assert_eq!(schema_name(&"x".repeat(100)).len(), 64);
    }
}
