//! Elicitation: a server asking the user for input (`elicitation/create`, form mode) while it
//! serves a request.
//!
//! The question goes to the [`Elicitor`] the host gives the manager
//! ([`crate::McpOptions::elicitor`]): a front end with a user to ask implements it in its
//! protocol's terms (ZCode's `interaction/requestUserInput`, ACP's `elicitation/create`).
//! Only then does the client advertise the `elicitation` capability; without one, a server
//! that asks anyway is declined. [`AcceptDefaults`] answers for a run nobody watches that
//! was told to go ahead (`exec --skip-permissions-unsafe`): it accepts with the schema's
//! defaults, leaving out the fields that have none.
//!
//! An answer is checked against the requested schema before it is sent: properties the
//! schema does not name are dropped, and a value of the wrong type turns the answer into a
//! decline (with a warning), so a server never gets what it did not ask for.

use async_trait::async_trait;
use serde_json::{Map, Value};

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The configured name of the server asking.
    pub server: String,
    /// What the server wants, in words, for the user.
    pub message: String,
    /// The requested schema: a JSON Schema object whose properties are strings (maybe
    /// enumerated), numbers, integers or booleans, each maybe with a `default`.
    pub schema: Map<String, Value>,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The user answered: the values, by property name.
    Accept(Map<String, Value>),
    /// The user declined to answer (the server goes on without the input).
    Decline,
    /// The user dismissed the question (the server may abandon what it was doing).
    Cancel,
}

/// Where a server's questions go: a front end with a user to ask.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks the user `request`; never fails (a question that cannot be put is a
    /// [`ElicitationAnswer::Cancel`]).
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// Accepts every question with the schema's defaults (fields without a `default` left out):
/// `exec --skip-permissions-unsafe`, where nobody is asked and the run was told to go ahead.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptDefaults;

#[async_trait]
impl Elicitor for AcceptDefaults {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        ElicitationAnswer::Accept(schema_defaults(&request.schema))
    }
}

/// Every property of `schema` that has a `default`, with it.
pub fn schema_defaults(schema: &Map<String, Value>) -> Map<String, Value> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Map::new();
    };
    properties
        .iter()
        .filter_map(|(name, property)| {
            property
                .get("default")
                .filter(|d| !d.is_null())
                .map(|d| (name.clone(), d.clone()))
        })
        .collect()
}

/// Whether `value` fits `property` (its `type`, and its `enum` for strings).
fn fits(property: &Value, value: &Value) -> bool {
    let kind = property.get("type").and_then(Value::as_str);
    let typed = match kind {
        Some("string") => value.is_string(),
        Some("number") => value.is_number(),
        Some("integer") => value.as_i64().is_some() || value.as_u64().is_some(),
        Some("boolean") => value.is_boolean(),
        // An array of enumerated strings (a multi-select), or a type we do not check.
        Some("array") => value.is_array(),
        _ => true,
    };
    let listed = match property.get("enum").and_then(Value::as_array) {
        Some(choices) => choices.contains(value),
        None => true,
    };
    typed && listed
}

/// `content` as the server may receive it: only the schema's properties, each of its type.
/// `Err` names the first property whose value does not fit.
pub(crate) fn check(
    schema: &Map<String, Value>,
    content: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) => properties.clone(),
        _ => Map::new(),
    };
    let mut out = Map::new();
    for (name, value) in content {
        let Some(property) = properties.get(&name) else {
            continue;
        };
        if !fits(property, &value) {
            return Err(format!("the answer's {name:?} does not fit its schema"));
        }
        out.insert(name, value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        match json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"}
        }, "required": []})
        {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[tokio::test]
    async fn defaults_are_accepted_and_fields_without_one_left_out() {
        let answer = AcceptDefaults
            .elicit(ElicitationRequest {
                server: "s".into(),
                message: "m".into(),
                schema: schema(),
            })
            .await;
        let ElicitationAnswer::Accept(content) = answer else {
            panic!("accepted")
        };
        assert_eq!(
            Value::Object(content.clone()),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        assert_eq!(check(&schema(), content.clone()), Ok(content));
        assert!(schema_defaults(&Map::new()).is_empty());
    }

    #[test]
    fn answers_are_checked_against_the_schema() {
        let unknown = json!({"name": "x", "extra": 1});
        let Value::Object(unknown) = unknown else {
            unreachable!()
        };
        assert_eq!(
            Value::Object(check(&schema(), unknown).unwrap()),
            json!({"name": "x"})
        );
        for bad in [
            json!({"age": "thirty"}),
            json!({"age": 1.5}),
            json!({"status": "gone"}),
            json!({"verified": "yes"}),
        ] {
            let Value::Object(bad) = bad else {
                unreachable!()
            };
            assert!(check(&schema(), bad.clone()).is_err(), "{bad:?}");
        }
    }
}
