//! The writer against the value path it replaces: the same text for every shape.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Value};

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::*;
use crate::redact::{redact_value, Redacted};

/// The reference: to a JSON value, redacted in place, written.
fn by_value<T: Serialize + ?Sized>(value: &T) -> String {
    redact_value(serde_json::to_value(value).expect("to_value")).to_string()
}

fn by_writer<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = b"prefix".to_vec();
    Redacted(value).write_json(&mut out).expect("write");
    let line = String::from_utf8(out.split_off(6)).expect("utf8");
    assert_eq!(out, b"prefix", "the writer appends");
    // The `Serialize` impl gives the same text, through serde_json and through a value.
    assert_eq!(serde_json::to_string(&Redacted(value)).expect("ser"), line);
    assert_eq!(
        serde_json::to_value(Redacted(value))
            .expect("value")
            .to_string(),
        line
    );
    line
}

fn same<T: Serialize + ?Sized>(value: &T) {
    assert_eq!(by_writer(value), by_value(value));
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Body {
    ToolCall {
        name: String,
        args: Value,
        side_effect: &'static str,
    },
    Usage(Usage),
    Empty,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    total_tokens: u64,
    completion_tokens: u64,
    prompt_tokens: u64,
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "runId")]
    run_id: &'a str,
    #[serde(rename = "schemaVersion")]
    schema_version: u32,
    #[serde(flatten)]
    body: &'a Body,
}

#[derive(Serialize)]
enum Shapes {
    Unit,
    Newtype(String),
    Tuple(u8, String),
    Struct {
        zed: u8,
        alpha: &'static str,
    },
    #[serde(rename = "api_key")]
    Secret(String),
    #[serde(rename = "token")]
    SecretStruct {
        a: u8,
    },
    #[serde(rename = "password")]
    SecretTuple(u8, u8),
}

#[test]
fn lines_with_envelope_tags_and_flattened_bodies() {
    let bodies = [
        Body::ToolCall {
            name: "bash".into(),
            args: json!({"z": 1, "command": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstu'", "env": {"API_KEY": "x", "b": [1, {"token": 2}]}}),
            side_effect: "shell",
        },
        Body::Usage(Usage {
            total_tokens: 3,
            completion_tokens: 1,
            prompt_tokens: 2,
        }),
        Body::Empty,
    ];
    for body in &bodies {
        same(&Line {
            run_id: "run_20260101000000_abcdef",
            schema_version: 2,
            body,
        });
    }
}

#[test]
fn enum_shapes_and_sensitive_variant_names() {
    for shape in [
        Shapes::Unit,
        Shapes::Newtype("sk-abcdefghijklmnopqrstuv".into()),
        Shapes::Tuple(1, "x".into()),
        Shapes::Struct { zed: 1, alpha: "a" },
        Shapes::Secret("plain".into()),
        Shapes::SecretStruct { a: 1 },
        Shapes::SecretTuple(1, 2),
    ] {
        same(&shape);
        same(&[shape]);
    }
}

#[test]
fn scalars_options_bytes_and_keys_of_other_types() {
    same(&(
        1u8,
        -2i64,
        0.1f32,
        2.5f64,
        f64::NAN,
        'c',
        true,
        (),
        None::<u8>,
    ));
    same(&Some("Bearer abcdefghijklmnopqrstuvwx"));
    same(&serde_bytes_like(&[1, 2, 255]));
    same(&BTreeMap::from([(2u32, "b"), (10, "a")]));
    same(&BTreeMap::from([(true, 1), (false, 2)]));
    same(&BTreeMap::from([('z', 1), ('a', 2)]));
    same(&json!({}));
    same(&json!([]));
    same(&json!({"b": {}, "a": [[], {}], "c\"q": "\u{2028}<>&"}));
}

/// Bytes through `serialize_bytes` (serde has no impl for `&[u8]` that uses it).
fn serde_bytes_like(bytes: &[u8]) -> impl Serialize + '_ {
    struct Bytes<'a>(&'a [u8]);
    impl Serialize for Bytes<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    Bytes(bytes)
}

#[test]
fn a_repeated_key_keeps_its_last_value() {
    #[derive(Serialize)]
    struct Twice {
        b: u8,
        #[serde(flatten)]
        more: BTreeMap<&'static str, u8>,
    }
    same(&Twice {
        b: 1,
        more: BTreeMap::from([("a", 2), ("b", 3), ("c", 4)]),
    });
}

#[test]
fn what_the_writer_leaves_to_the_value_path_comes_out_the_same() {
    let raw =
        RawValue::from_string(r#"{"z":1,"api_key":"x","a":"sk-abcdefghijklmnopqrstuv"}"#.into())
            .expect("raw");
    let mut out = Vec::new();
    assert!(matches!(write(&raw, &mut out), Err(WriteError::NotPlain)));
    #[derive(Serialize)]
    struct WithRaw<'a> {
        raw: &'a RawValue,
        n: u8,
    }
    same(&WithRaw { raw: &raw, n: 1 });
    same(&(1u128, -1i128));
    // A nested `Redacted` is written once, redacted either way.
    same(&[Redacted(
        &json!({"b": "Bearer abcdefghijklmnopqrstuvwx", "a": 1}),
    )]);
}

#[test]
fn a_failing_serialize_is_an_error_and_leaves_the_output() {
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
            Err(S::Error::custom("no"))
        }
    }
    let mut out = b"kept".to_vec();
    let err = Redacted(&json!({"a": 1}))
        .write_json(&mut out)
        .and_then(|()| Redacted(&[Fails]).write_json(&mut out));
    assert!(err.is_err());
    assert_eq!(out, br#"kept{"a":1}"#);
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("token".to_string()),
        Just("OPENAI_API_KEY".to_string()),
        Just("promptTokens".to_string()),
        Just("type".to_string()),
        "[a-zA-Z_]{0,6}",
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("sk-abcdefghijklmnopqrstuv".to_string()),
        Just("api_key=abcdefghijklmnop".to_string()),
        Just("Bearer abcdefghijklmnopqrstuvwx".to_string()),
        "\\PC{0,8}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        string().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_json_value_comes_out_as_by_the_value_path(value in value()) {
        prop_assert_eq!(by_writer(&value), by_value(&value));
    }
}

/// A map serialised with its entries in the order given, repeats included.
#[derive(Debug)]
struct InOrder(Vec<(String, Value)>);

impl Serialize for InOrder {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Keys that share long prefixes (past the eight bytes compared first), hold bytes that are
/// escaped, or are sensitive.
fn long_key() -> impl Strategy<Value = String> {
    prop_oneof![
        key(),
        "[ab\"\\\\\\x00\\x01é]{0,12}",
        "(token|TOKEN_|x_)[ab]{0,10}"
    ]
}

proptest! {
    #[test]
    fn unordered_and_repeated_keys_come_out_as_by_the_value_path(
        entries in prop::collection::vec((long_key(), value()), 0..10)
    ) {
        let map = InOrder(entries);
        prop_assert_eq!(by_writer(&map), by_value(&map));
    }
}
