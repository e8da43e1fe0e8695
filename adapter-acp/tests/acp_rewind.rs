//! `/rewind` on `adapter-acp acp` (ACP has no method for it; the command is the prompt's):
//! two edits, `/rewind` undoes the last with no model call; a file someone changed since
//! refuses the next (nothing changed, the file named) until `/rewind <id> --force`; a bad
//! checkpoint or flag is the prompt's `invalid_params`.

mod common;

use common::acp_client::Acp;
use common::{scripted_args, write_script, Env};
use serde_json::{json, Value};

fn write_call(id: &str, path: &str, content: &str) -> Value {
    let args = json!({"path": path, "content": content}).to_string();
    json!({"tool_call": {"id": id, "name": "write_file", "args": [args]}})
}

/// The text of the `agent_message_chunk`s among `updates`.
fn said(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_undoes_the_last_edit_without_a_model_call() {
    let env = Env::new();
    let ws = env.workspace();
    let file = |name: &str| std::fs::read(ws.join(name)).ok();
    std::fs::write(ws.join("a.txt"), b"orig\n").expect("write");
    // Only the first prompt's two calls are scripted: a model call for `/rewind` would fail.
    let script = write_script(
        env.root.path(),
        json!([
            {"steps": [write_call("c1", "a.txt", "v1"), write_call("c2", "b.txt", "new")]},
            {"steps": [{"text": "edited"}]}
        ]),
    );
    let mut acp = Acp::spawn(&scripted_args(&script, &env.data()), &[], None);
    let sid = acp.yolo_session(&ws).await;
    let (done, _, _) = acp.prompt_turn(&sid, "edit", "allow_once").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(file("b.txt").as_deref(), Some(&b"new"[..]));

    let (done, updates, _) = acp.prompt_turn(&sid, "/rewind", "reject_once").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        said(&updates),
        "Rewound to checkpoint c2: restored none; deleted b.txt."
    );
    assert!(file("b.txt").is_none());
    assert_eq!(file("a.txt").as_deref(), Some(&b"v1"[..]));

    std::fs::write(ws.join("a.txt"), "the user's").expect("write");
    let (_, updates, _) = acp.prompt_turn(&sid, "/rewind", "reject_once").await;
    assert_eq!(
        said(&updates),
        "Nothing was changed: a.txt changed since the agent's last change. \
         `/rewind c1 --force` overwrites them."
    );
    assert_eq!(file("a.txt").as_deref(), Some(&b"the user's"[..]));
    let (_, updates, _) = acp
        .prompt_turn(&sid, "/rewind c1 --force", "reject_once")
        .await;
    assert_eq!(
        said(&updates),
        "Rewound to checkpoint c1: restored a.txt; deleted none."
    );
    assert_eq!(file("a.txt").as_deref(), Some(&b"orig\n"[..]));

    let bad = acp.prompt(&sid, "/rewind c1").await;
    assert_eq!(bad["error"]["code"], -32602, "rewound already: {bad}");
    let bad = acp.prompt(&sid, "/rewind --all").await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let (_, updates, _) = acp.prompt_turn(&sid, "/rewind", "reject_once").await;
    assert_eq!(
        said(&updates),
        "Nothing to rewind: no file was changed in this session."
    );
    assert!(acp.shutdown().await, "clean exit");
}
