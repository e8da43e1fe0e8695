//! `adapter-acp app-server --stdio`: the provider's model list in the settings
//! (`settings.model.available`, from the mock server's `GET /v1/models`) and `setModel`
//! switching the model of the next request, refusing a model the list does not name (the
//! session's own only when the list cannot be had), the listing kept for the next process; an MCP server's elicitation put to the client
//! as `interaction/requestUserInput` questions.

mod common;

use common::{text, Client, Env};
use serde_json::{json, Value};
use test_support::mcp::{node, script};
use test_support::{Fault, FaultServer, MockModel, Reply, Script};

fn model_ids(snapshot: &Value) -> Vec<String> {
    snapshot["settings"]["model"]["available"]
        .as_array()
        .expect("available models")
        .iter()
        .map(|m| m["ref"]["modelId"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `app-server --stdio` on OpenAI at `base_url`, configured with `mock-model-small`.
fn app_server(env: &Env, base_url: &str) -> Client {
    let data = env.data().display().to_string();
    let args: Vec<String> = [
        "app-server",
        "--stdio",
        "--provider",
        "openai",
        "--base-url",
        base_url,
        "--api-key",
        "sk-zcode",
        "--model",
        "mock-model-small",
        "--data-dir",
        &data,
    ]
    .map(String::from)
    .into();
    Client::spawn(&args)
}

/// Asserts `error` is the protocol's model error for `provider/model`.
fn assert_model_not_found(error: &Value, provider: &str, model: &str) {
    assert_eq!(error["code"], -32603, "{error}");
    assert_eq!(
        error["message"],
        format!("Model not found: {provider}/{model}"),
        "{error}"
    );
    assert_eq!(
        error["data"],
        json!({"name": "ModelProtocolError", "code": "model_not_found"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_model_picks_from_the_providers_list() {
    let env = Env::new();
    let server = MockModel::start(
        Script::new().fallback([Reply::chat_text("small"), Reply::chat_text("large")]),
    );
    let mut c = app_server(&env, &server.v1());
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
    // A model the list does not name is refused as another provider's is, and changes
    // nothing; so is a new session on it.
    for (provider, model) in [("openai", "no-such-model"), ("nope", "mock-model-small")] {
        let err = c
            .call_err(
                "session/setModel",
                json!({"sessionId": sid, "model": {"providerId": provider, "modelId": model}}),
            )
            .await;
        assert_model_not_found(&err, provider, model);
    }
    let err = c
        .call_err(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws},
                   "model": {"providerId": "openai", "modelId": "no-such-model"}}),
        )
        .await;
    assert_model_not_found(&err, "openai", "no-such-model");
    let read = c.call("session/read", json!({"sessionId": sid})).await;
    assert_eq!(
        read["settings"]["model"]["current"]["modelId"],
        "mock-model-large"
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

    // The next process on the same data directory offers the kept listing
    // (`models-cache.json`) without asking the server.
    let mut next = app_server(&env, &server.v1());
    let created = next
        .call(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}}),
        )
        .await;
    assert_eq!(model_ids(&created), MockModel::MODELS);
    assert_eq!(server.model_list_requests(), 1, "served from the cache");
    assert!(env.data().join("models-cache.json").is_file());
    assert!(next.shutdown().await);
}

/// When the provider's `GET /models` fails, a session keeps its own model only (as ACP's
/// model option offers it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_list_set_model_keeps_the_sessions_own() {
    let env = Env::new();
    let server = FaultServer::start(Script::new().fallback([Fault::status(500)]));
    let mut c = app_server(&env, &server.v1());
    let ws = env.workspace_str();
    let created = c
        .call(
            "session/create",
            json!({"workspace": {"workspacePath": ws, "workspaceKey": ws}}),
        )
        .await;
    let sid = created["session"]["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/models")),
        "the models were asked for"
    );
    let err = c
        .call_err(
            "session/setModel",
            json!({"sessionId": sid, "model": {"providerId": "openai", "modelId": "mock-model-large"}}),
        )
        .await;
    assert_model_not_found(&err, "openai", "mock-model-large");
    let set = c
        .call(
            "session/setModel",
            json!({"sessionId": sid, "model": {"providerId": "openai", "modelId": "mock-model-small"}}),
        )
        .await;
    assert_eq!(
        set["settings"]["model"]["current"]["modelId"],
        "mock-model-small"
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
