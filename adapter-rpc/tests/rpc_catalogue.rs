//! zut's tool catalogue through the rpc binary: `get_state.tools` and the `tool_call`
//! events carry zut's names (`read`, `write`, `edit`, …) and its argument shapes run.

mod common;

use common::{events, text_turn, Opts, Rpc};
use serde_json::{json, Value};

#[tokio::test]
async fn zuts_names_and_argument_shapes() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").expect("write");
    let edit = json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}, {"oldText": "two", "newText": "2"}]}).to_string();
    let read = json!({"path": "a.txt"}).to_string();
    let bash = json!({"command": "echo hi", "timeout": 5}).to_string();
    let mut rpc = Rpc::spawn(Opts {
        dir: Some(dir),
        script: Some(json!([
            {"steps": [
                {"tool_call": {"id": "e1", "name": "edit", "args": [edit]}},
                {"tool_call": {"id": "r1", "name": "read", "args": [read]}},
                {"tool_call": {"id": "b1", "name": "bash", "args": [bash]}}
            ]},
            text_turn("done")
        ])),
        ..Opts::default()
    });
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(state["success"], true, "{state}");
    let tools: Vec<String> = state["data"]["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for name in ["read", "write", "edit", "bash", "grep", "plan"] {
        assert!(tools.iter().any(|t| t == name), "{name}: {state}");
    }
    for sdk in ["read_file", "write_file", "edit_file", "list_dir"] {
        assert!(!tools.iter().any(|t| t == sdk), "{sdk}: {state}");
    }

    rpc.send(json!({"id": "p", "type": "prompt", "message": "work"}))
        .await;
    let frames = rpc.until_type("done").await;
    let evs = events(&frames);
    let calls: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(calls, ["edit", "read", "bash"]);
    let results: Vec<&Value> = evs.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(results.len(), 3, "{evs:?}");
    for result in &results {
        assert_eq!(result["is_error"], false, "{result}");
    }
    let text = |r: &Value| r["content"].to_string();
    assert!(
        text(results[1]).contains("1") && text(results[1]).contains("2"),
        "{}",
        text(results[1])
    );
    assert!(text(results[2]).contains("hi"), "{}", text(results[2]));
}
