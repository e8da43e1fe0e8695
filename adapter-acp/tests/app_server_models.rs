//! `adapter-acp app-server --stdio`: the provider's model list in the settings
//! (`settings.model.available`, from the mock server's `GET /v1/models`) and `setModel`
//! switching the model of the next request; an MCP server's elicitation put to the client
//! as `interaction/requestUserInput` questions.

mod common;

use common::{text, Client, Env};
use serde_json::{json, Value};
use test_support::mcp::{node, script};
use test_support::{MockModel, Reply, Script};

fn model_ids(snapshot: &Value) -> Vec<String> {
    snapshot["settings"]["model"]["available"]
        .as_array()
        .expect("available models")
        .iter()
        .map(|m| m["ref"]["modelId"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_picks_from_the_providers_list() {
    let env = Env::new();
    let server = MockModel::start(
        Script::new().fallback([Reply::chat_text("small"), Reply::chat_text("large")]),
    );
    let data = env.data().display().to_string();
    let args: Vec<String> = [
        "app-server",
        "--stdio",
        "--provider",
        "openai",
        "--base-url",
        &server.v1(),
        "--api-key",
        "sk-zcode",
        "--model",
        "mock-model-small",
        "--data-dir",
        &data,
    ]
    .map(String::from)
    .into();
    let mut c = Client::spawn(&args);
    let ws = env.workspace_str();
    let created = c
        .call(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo"}),
        )
        .await;
    assert_eq!(model_ids(&created), MockModel::MODELS);
    assert_eq!(
        created["settings"]["model"]["current"]["modelId"],
        "mock-model-small"
    );
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    let set = c
        .call(
            "session/setModel",
            json!({"sessionId": sid, "model": {"providerId": "openai", "modelId": "mock-model-large"}}),
        )
        .await;
    assert_eq!(
        set["settings"]["model"]["current"]["modelId"],
        "mock-model-large"
    );
    assert_eq!(
        model_ids(&set),
        MockModel::MODELS,
        "still the listed models"
    );
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call("session/send", json!({"sessionId": sid, "content": "hi"}))
        .await;
    c.events_until(&sid, &["turn.completed"]).await;
    let requests = server
        .wait_for_requests(1, common::WAIT)
        .await
        .expect("a model call");
    assert_eq!(requests[0].json()["model"], "mock-model-large");
    assert_eq!(
        server.model_list_requests(),
        1,
        "listed once per connection"
    );
    assert!(c.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_question_is_a_request_user_input() {
    if !test_support::mcp::ready() {
        return;
    }
    let env = Env::new();
    let ws = env.workspace_str();
    let mut c = env.spawn(json!([
        {"steps": [{"tool_call": {"id": "e1", "name": "mcp_everything_trigger_elicitation_request", "args": ["{}"]}}]},
        {"steps": [text("Thanks.")]}
    ]));
    let created = c
        .call(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}, "mode": "yolo",
                   "mcpServers": [{"name": "everything", "command": node(),
                                   "args": [script("server-everything"), "stdio"], "env": []}]}),
        )
        .await;
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    c.call("session/subscribe", json!({"sessionId": sid})).await;
    c.call(
        "session/send",
        json!({"sessionId": sid, "content": "ask through MCP"}),
    )
    .await;
    let request = c.server_request("interaction/requestUserInput").await;
    let params = &request["params"];
    assert_eq!(params["sessionId"], sid.as_str());
    let questions = params["questions"].as_array().expect("questions");
    let name = questions
        .iter()
        .find(|q| {
            q["question"]
                .as_str()
                .unwrap_or("")
                .starts_with("String (Your full")
        })
        .expect("the name question");
    let pet = questions
        .iter()
        .find(|q| {
            q["question"]
                .as_str()
                .unwrap_or("")
                .starts_with("Legacy Titled")
        })
        .expect("an enumerated question");
    assert_eq!(pet["options"][1]["label"], "Dogs");
    let answers = json!({name["question"].as_str().unwrap_or_default(): "Ada Lovelace"});
    c.send(json!({"id": request["id"], "result": {"action": "accept",
        "content": {"answers": answers}}}))
        .await;
    let events = c.events_until(&sid, &["turn.completed"]).await;
    let result = events
        .iter()
        .find(|e| e["payload"]["kind"] == "result")
        .expect("tool result");
    assert!(
        result["payload"]["result"]["content"]
            .as_str()
            .unwrap_or("")
            .contains("Name: Ada Lovelace"),
        "{result}"
    );
    assert!(c.shutdown().await);
}
