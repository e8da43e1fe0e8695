//! JSON schemas derived from Rust types and brought to the providers' strict rules.
//!
//! Strict structured output (OpenAI `strict: true` for functions and `response_format`,
//! Anthropic strict tool use and JSON outputs) accepts a subset of JSON Schema, and the
//! common subset of the APIs is narrow:
//!
//! - the root is an object (not a union, not an array);
//! - every object lists all its properties in `required` and has
//!   `additionalProperties: false`; an optional property stays in `required` and admits
//!   `null` instead;
//! - unions are `anyOf` (no `oneOf`, `allOf` or `not`); a `$ref` stands alone;
//! - no numeric, length or size constraints (`minimum`, `maxLength`, `minItems`, …) and only
//!   the string `format`s both APIs know.
//!
//! [`StrictSchema::of`] derives a type's schema with `schemars` and rewrites it to those rules.
//! A type the rules cannot express (a map with free keys, an arbitrary JSON value) still gets
//! a usable schema, with [`StrictSchema::strict`] false so a provider sends it non-strict.
//! A non-object root (a `Vec`, an enum with data) is wrapped in an object with one
//! property, `value`, and unwrapped again by [`StrictSchema::parse`].
//!
//! [`StrictSchema::parse`] reads a value the model produced into the type, turning the
//! `null`s that stand for omitted optional fields back into omissions, and names the field
//! at fault when it does not fit.

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Name of the single property a non-object root is wrapped in.
pub const WRAPPED_PROPERTY: &str = "value";

/// String formats both OpenAI and Anthropic strict modes accept.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords strict modes reject (or that mean nothing once every property is required);
/// they are dropped. The type's own deserializer still enforces what they said.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "unevaluatedProperties",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords no strict mode can express; a schema using them is sent non-strict.
const UNSUPPORTED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "contains",
];

/// A schema derived from a type, rewritten to the strict rules (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct StrictSchema {
    /// The schema to offer the model.
    pub schema: Value,
    /// True when the schema follows the strict rules fully; false when the type needs
    /// something they cannot express, and the schema should be sent non-strict.
    pub strict: bool,
    /// The root was not an object and is wrapped in `{"value": …}`.
    pub wrapped: bool,
    /// The schema as derived, before the rewrite: what `parse` reads values against.
    original: Value,
}

/// Why a value did not fit the type: the field at fault, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SchemaError {
    /// Path of the field at fault (`address.city`, `items[2].kind`); `.` for the root.
    pub path: String,
    /// What was wrong, as serde puts it (`missing field \`city\``, `invalid type: …`).
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" | "." => f.write_str(&self.message),
            path => write!(f, "at `{path}`: {}", self.message),
        }
    }
}

impl StrictSchema {
    /// The strict schema of `T`.
    pub fn of<T: JsonSchema>() -> Self {
        let mut settings = schemars::generate::SchemaSettings::draft2020_12();
        settings.inline_subschemas = true;
        settings.meta_schema = None;
        let original = settings
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
        Self::from_schema(original)
    }

    /// Rewrites any JSON schema to the strict rules.
    pub fn from_schema(original: Value) -> Self {
        let mut schema = original.clone();
        let defs = take_defs(&mut schema);
        let mut strict = true;
        let mut defs = defs.map(|mut defs| {
            let snapshot = Value::Object(defs.clone());
            for def in defs.values_mut() {
                rewrite(def, &snapshot, &mut strict, 0);
            }
            defs
        });
        let snapshot = Value::Object(defs.clone().unwrap_or_default());
        rewrite(&mut schema, &snapshot, &mut strict, 0);
        let wrapped = !is_object_schema(&schema);
        if wrapped {
            schema = serde_json::json!({
                "type": "object",
                "properties": { WRAPPED_PROPERTY: schema },
                "required": [WRAPPED_PROPERTY],
                "additionalProperties": false,
            });
        }
        if let (Some(defs), Some(root)) = (defs.take(), schema.as_object_mut()) {
            root.insert("$defs".into(), Value::Object(defs));
        }
        Self {
            schema,
            strict,
            wrapped,
            original,
        }
    }

    /// The schema as derived, before the rewrite.
    pub fn original(&self) -> &Value {
        &self.original
    }

    /// Reads a value the model produced against this schema into `T`: unwraps a wrapped
    /// root, drops the `null`s that stand for omitted optional fields, and deserializes,
    /// naming the field at fault on failure. `null` arguments count as `{}`.
    pub fn parse<T: DeserializeOwned>(&self, value: Value) -> Result<T, SchemaError> {
        let mut value = match (self.wrapped, value) {
            (true, Value::Object(mut object)) => match object.remove(WRAPPED_PROPERTY) {
                Some(inner) => inner,
                None => {
                    return Err(SchemaError {
                        path: ".".into(),
                        message: format!("missing field `{WRAPPED_PROPERTY}`"),
                    })
                }
            },
            (true, other) => {
                return Err(SchemaError {
                    path: ".".into(),
                    message: format!(
                        "expected an object with a `{WRAPPED_PROPERTY}` field, got {}",
                        kind_of(&other)
                    ),
                })
            }
            (false, Value::Null) if is_object_schema(&self.original) => Value::Object(Map::new()),
            (false, other) => other,
        };
        let defs = self
            .original
            .get("$defs")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        drop_optional_nulls(&mut value, &self.original, &defs, 0);
        serde_path_to_error::deserialize(value).map_err(|err| SchemaError {
            path: err.path().to_string(),
            message: err.inner().to_string(),
        })
    }
}

/// Deepest nesting rewritten or walked; deeper schemas are left as they are (and the
/// APIs reject them anyway).
const MAX_DEPTH: usize = 64;

fn take_defs(schema: &mut Value) -> Option<Map<String, Value>> {
    let object = schema.as_object_mut()?;
    let defs = object.remove("$defs");
    let definitions = object.remove("definitions");
    let mut out = Map::new();
    for defs in [definitions, defs].into_iter().flatten() {
        if let Value::Object(defs) = defs {
            out.extend(defs);
        }
    }
    (!out.is_empty()).then_some(out)
}

fn type_names(schema: &Value) -> Vec<&str> {
    schema.as_object().map(object_types).unwrap_or_default()
}

fn object_types(object: &Map<String, Value>) -> Vec<&str> {
    match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn is_object_schema(schema: &Value) -> bool {
    type_names(schema) == ["object"]
        || (schema.get("type").is_none() && schema.get("properties").is_some())
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Resolves a local `$ref` (`#/$defs/Name` or `#/definitions/Name`) against `defs`.
fn resolve<'a>(reference: &str, defs: &'a Value) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    defs.get(name)
}

/// Rewrites one schema node (and its subschemas) in place.
fn rewrite(node: &mut Value, defs: &Value, strict: &mut bool, depth: usize) {
    if depth > MAX_DEPTH {
        *strict = false;
        return;
    }
    let Some(object) = node.as_object_mut() else {
        // `true`/`false` schemas: nothing strict mode can use.
        *strict = false;
        return;
    };
    // A `$ref` with siblings (a description, say) is inlined: strict modes want it alone.
    if object.len() > 1 {
        if let Some(Value::String(reference)) = object.get("$ref").cloned() {
            match resolve(&reference, defs) {
                Some(Value::Object(target)) => {
                    object.remove("$ref");
                    for (key, value) in target {
                        object.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
                _ => *strict = false,
            }
        }
    }
    for key in DROPPED {
        object.remove(*key);
    }
    if object.keys().any(|k| UNSUPPORTED.contains(&k.as_str())) {
        *strict = false;
    }
    if let Some(Value::String(format)) = object.get("format") {
        if !FORMATS.contains(&format.as_str()) {
            object.remove("format");
        }
    }
    if let Some(value) = object.remove("const") {
        object.insert("enum".into(), Value::Array(vec![value]));
    }
    if let Some(one_of) = object.remove("oneOf") {
        match object.get_mut("anyOf") {
            Some(Value::Array(any_of)) => {
                if let Value::Array(more) = one_of {
                    any_of.extend(more);
                }
            }
            _ => {
                object.insert("anyOf".into(), one_of);
            }
        }
    }
    if let Some(Value::Array(all_of)) = object.get("allOf") {
        if all_of.len() == 1 {
            if let Some(Value::Object(only)) = object
                .remove("allOf")
                .and_then(|mut a| a.get_mut(0).map(Value::take))
            {
                for (key, value) in only {
                    object.entry(key).or_insert(value);
                }
            }
        } else {
            *strict = false;
        }
    }

    let types = object_types(object);
    let untyped = types.is_empty();
    let is_object = types.contains(&"object") || object.contains_key("properties");
    if is_object {
        let free_keys = match object.get("additionalProperties") {
            None | Some(Value::Bool(false)) => false,
            Some(_) => true,
        };
        if free_keys && !object.contains_key("properties") {
            // A map with free keys: strict modes cannot say it.
            *strict = false;
        } else {
            object.insert("additionalProperties".into(), Value::Bool(false));
            if untyped {
                object.insert("type".into(), Value::String("object".into()));
            }
            let required: Vec<String> = match object.get("required") {
                Some(Value::Array(r)) => r
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            };
            let properties = object
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            let mut all = Vec::new();
            if let Value::Object(properties) = properties {
                for (name, property) in properties.iter_mut() {
                    rewrite(property, defs, strict, depth + 1);
                    if !required.contains(name) {
                        make_nullable(property);
                    }
                    all.push(Value::String(name.clone()));
                }
            }
            // Sorted, so the schema is the same whether or not serde_json keeps key order.
            all.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            object.insert("required".into(), Value::Array(all));
        }
    }
    if let Some(items) = object.get_mut("items") {
        rewrite(items, defs, strict, depth + 1);
    }
    if let Some(Value::Array(any_of)) = object.get_mut("anyOf") {
        for branch in any_of {
            rewrite(branch, defs, strict, depth + 1);
        }
    }
    if let Some(Value::Array(all_of)) = object.get_mut("allOf") {
        for branch in all_of {
            rewrite(branch, defs, strict, depth + 1);
        }
    }
    let described = object.contains_key("type")
        || object.contains_key("anyOf")
        || object.contains_key("$ref")
        || object.contains_key("enum")
        || object.contains_key("allOf");
    if !described {
        // Any JSON value (`serde_json::Value`): strict modes need a type.
        *strict = false;
    }
}

/// Makes an optional property admit `null`, as strict modes want it (it stays required).
fn make_nullable(schema: &mut Value) {
    let null = Value::String("null".into());
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    match object.get_mut("type") {
        Some(Value::String(t)) if t == "null" => {}
        Some(Value::String(t)) => {
            let t = Value::String(std::mem::take(t));
            object.insert("type".into(), Value::Array(vec![t, null]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
        }
        _ => {
            if let Some(Value::Array(any_of)) = object.get_mut("anyOf") {
                let admits_null = any_of.iter().any(|b| type_names(b) == ["null"]);
                if !admits_null {
                    any_of.push(serde_json::json!({"type": "null"}));
                }
            } else if object.contains_key("enum") && !object.contains_key("$ref") {
                // An untyped enum: the null added to its values is enough.
            } else if !object.is_empty() {
                let inner = Value::Object(std::mem::take(object));
                object.insert(
                    "anyOf".into(),
                    Value::Array(vec![inner, serde_json::json!({"type": "null"})]),
                );
            }
        }
    }
}

/// Removes `null` members for properties the original schema does not require: strict
/// output sends `null` where the type expects the field to be left out.
fn drop_optional_nulls(value: &mut Value, schema: &Value, defs: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => match resolve(reference, defs) {
            Some(target) => target,
            None => return,
        },
        None => schema,
    };
    match value {
        Value::Object(members) => {
            if let Some(Value::Object(properties)) = schema.get("properties") {
                let required: Vec<&str> = match schema.get("required") {
                    Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                members.retain(|name, member| {
                    !(member.is_null()
                        && properties.contains_key(name)
                        && !required.contains(&name.as_str()))
                });
                for (name, member) in members.iter_mut() {
                    if let Some(property) = properties.get(name) {
                        drop_optional_nulls(member, property, defs, depth + 1);
                    }
                }
                return;
            }
        }
        Value::Array(elements) => {
            if let Some(items) = schema.get("items") {
                for element in elements {
                    drop_optional_nulls(element, items, defs, depth + 1);
                }
                return;
            }
        }
        _ => return,
    }
    // A union: read the value against the first branch whose properties cover its keys.
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            let fits = |branch: &Value| -> bool {
                let branch = match branch.get("$ref").and_then(Value::as_str) {
                    Some(reference) => match resolve(reference, defs) {
                        Some(target) => target,
                        None => return false,
                    },
                    None => branch,
                };
                match (&*value, branch.get("properties")) {
                    (Value::Object(members), Some(Value::Object(properties))) => {
                        members.keys().all(|k| properties.contains_key(k))
                    }
                    (Value::Array(_), _) => branch.get("items").is_some(),
                    _ => false,
                }
            };
            if let Some(branch) = branches.iter().find(|b| fits(b)).cloned() {
                drop_optional_nulls(value, &branch, defs, depth + 1);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Args {
        /// A name.
        name: String,
        #[serde(default)]
        count: u32,
        note: Option<String>,
    }

    #[test]
    fn optional_fields_become_required_and_nullable() {
        let strict = StrictSchema::of::<Args>();
        assert!(strict.strict);
        assert!(!strict.wrapped);
        assert_eq!(
            strict.schema,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "A name."},
                    "count": {"type": ["integer", "null"]},
                    "note": {"type": ["string", "null"]},
                },
                "required": ["count", "name", "note"],
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn nulls_for_omitted_fields_parse_as_omissions() {
        let strict = StrictSchema::of::<Args>();
        let args: Args = strict
            .parse(json!({"name": "a", "count": null, "note": null}))
            .expect("parses");
        assert_eq!(
            args,
            Args {
                name: "a".into(),
                count: 0,
                note: None
            }
        );
        let err = strict
            .parse::<Args>(json!({"name": null, "count": 1, "note": "x"}))
            .expect_err("name is required");
        assert_eq!(err.path, "name");
        assert!(err.to_string().contains("`name`"), "{err}");
    }

    #[test]
    fn non_object_roots_are_wrapped() {
        let strict = StrictSchema::of::<Vec<u8>>();
        assert!(strict.wrapped);
        assert_eq!(strict.schema["required"], json!(["value"]));
        let parsed: Vec<u8> = strict.parse(json!({"value": [1, 2]})).expect("parses");
        assert_eq!(parsed, [1, 2]);
        assert!(strict.parse::<Vec<u8>>(json!([1, 2])).is_err());
    }

    #[test]
    fn free_maps_and_any_values_are_not_strict() {
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Loose {
            map: std::collections::HashMap<String, u8>,
        }
        assert!(!StrictSchema::of::<Loose>().strict);
        #[derive(Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Anything {
            value: Value,
        }
        assert!(!StrictSchema::of::<Anything>().strict);
    }
}
