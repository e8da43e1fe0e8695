//! Golden files for the in-process mapping tests: a fixed sequence of agent events in, the
//! frames a mapping makes out, compared line by line with `tests/golden/<name>.jsonl` of the
//! calling crate. `UPDATE_GOLDEN=1` rewrites the files.
//!
//! [`events`] sorts every JSON object's keys before it deserialises the events, so a tool
//! call's arguments come out in one order whether or not serde_json's `preserve_order` is on:
//! that feature is unified across the workspace (agent-client-protocol turns it on), so a
//! crate's tests built alone and built with the whole workspace would otherwise disagree.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// `values` as events (any type that deserialises from them), every object's keys sorted.
/// Panics with the offending value when one does not deserialise.
pub fn events<T: DeserializeOwned>(values: Vec<Value>) -> Vec<T> {
    values
        .into_iter()
        .map(|mut value| {
            sort_keys(&mut value);
            serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{value}: {e}"))
        })
        .collect()
}

fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// Asserts that `lines` are exactly `<manifest_dir>/tests/golden/<name>.jsonl`, line by line
/// (the first differing line is named); with `UPDATE_GOLDEN` set, writes them there first.
pub fn assert_golden(manifest_dir: &str, name: &str, lines: &[String]) {
    let path = Path::new(manifest_dir)
        .join("tests/golden")
        .join(format!("{name}.jsonl"));
    let got = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("the golden dir");
        std::fs::write(&path, &got).expect("write the golden file");
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read {}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(g, w, "{name}.jsonl line {}", i + 1);
    }
    assert_eq!(got.len(), want.len(), "{name}.jsonl: {got:#?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_with_sorted_keys() {
        let got: Vec<Value> = events(vec![
            serde_json::json!({"b": {"z": 1, "a": [{"y": 0, "x": 0}]}, "a": 2}),
        ]);
        assert_eq!(
            got[0].to_string(),
            r#"{"a":2,"b":{"a":[{"x":0,"y":0}],"z":1}}"#
        );
    }
}
