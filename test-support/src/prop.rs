//! The property tests' shared pieces: how many cases a property tries, a runner that
//! writes no failure files, and arbitrary JSON.

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// Cases per property: `AGENT_SDK_PROPTEST_CASES`, else 256.
pub fn cases() -> u32 {
    std::env::var("AGENT_SDK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256)
}

/// A runner of `cases` cases that persists no failures (no files in the source tree).
pub fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Arbitrary JSON: leaves (null, booleans, integers, floats, strings of up to 16
/// characters, a string holding a NUL and a line separator, and each of `extra`, all as
/// likely) nested up to 3 deep in arrays and objects of up to 4 entries.
pub fn json_value(extra: Vec<Value>) -> BoxedStrategy<Value> {
    let mut leaves = vec![
        Just(Value::Null).boxed(),
        any::<bool>().prop_map(Value::Bool).boxed(),
        any::<i64>().prop_map(|n| json!(n)).boxed(),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number))
            .boxed(),
        "\\PC{0,16}".prop_map(Value::String).boxed(),
        Just(json!("a\u{0}b\u{2028}c")).boxed(),
    ];
    leaves.extend(extra.into_iter().map(|v| Just(v).boxed()));
    Union::new(leaves)
        .prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}
