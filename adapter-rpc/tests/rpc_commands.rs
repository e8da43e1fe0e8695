//! End-to-end tests of the commands and auth: spawn `adapter-rpc rpc` and drive it over
//! pipes.

mod common;

use common::{text_turn, Opts, Rpc};
use serde_json::{json, Value};

fn demo_turns() -> Value {
    json!([text_turn("hello")])
}
// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ping_echoes_id_and_omits_it_when_absent_or_empty() {
    let mut rpc = Rpc::scripted(demo_turns());
    let resp = rpc.call(json!({"type": "ping"}), "9").await;
    assert_eq!(
        resp,
        json!({"type": "response", "id": "9", "command": "ping", "success": true, "data": {"pong": true}})
    );
    rpc.send(json!({"type": "ping"})).await;
    let resp = rpc.next().await;
    assert_eq!(
        resp,
        json!({"type": "response", "command": "ping", "success": true, "data": {"pong": true}})
    );
    rpc.send(json!({"type": "ping", "id": ""})).await;
    let resp = rpc.next().await;
    assert!(resp.get("id").is_none(), "empty id must be omitted: {resp}");
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn malformed_and_unknown_lines_are_answered_and_the_server_keeps_going() {
    let mut rpc = Rpc::scripted(demo_turns());
    rpc.send_raw("{not json").await;
    let r = rpc.next().await;
    assert_eq!(r["command"], "");
    assert_eq!(r["success"], false);
    assert!(r.get("id").is_none());
    assert!(
        r["error"].as_str().unwrap().starts_with("malformed json: "),
        "{r}"
    );

    // A numeric id or a non-string type is malformed; the id is not echoed and nothing runs.
    for line in [
        r#"{"id":7,"type":"ping"}"#,
        r#"{"id":"x","type":5}"#,
        "[]",
        "\"x\"",
        "1",
        r#"{"type":"ping"} x"#,
    ] {
        rpc.send_raw(line).await;
        let r = rpc.next().await;
        assert_eq!(r["success"], false, "{line}: {r}");
        assert_eq!(r["command"], "", "{line}: {r}");
        assert!(r.get("id").is_none(), "{line}: {r}");
        assert!(
            r["error"].as_str().unwrap().starts_with("malformed json: "),
            "{line}: {r}"
        );
    }

    rpc.send_raw("null").await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"m"}"#).await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "", "id": "m", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"u","type":"frobnicate"}"#).await;
    assert_eq!(
        rpc.next().await,
        json!({"type": "response", "command": "frobnicate", "id": "u", "success": false, "error": "unknown command"})
    );
    rpc.send_raw(r#"{"id":"r","type":"reload_ext"}"#).await;
    assert_eq!(rpc.next().await["error"], "unknown command");

    // Blank and whitespace-only lines are skipped silently.
    rpc.write(b"\n   \n\t\r\n").await;
    let r = rpc.call(json!({"type": "ping"}), "after").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn state_models_messages_and_clear() {
    let mut rpc = Rpc::scripted(demo_turns());
    let hello = rpc
        .call(json!({"type": "hello", "token": "anything"}), "0")
        .await;
    assert_eq!(hello["success"], true);
    assert_eq!(hello["data"]["protocol_version"], 1);
    assert_eq!(hello["data"]["provider"], "scripted");
    assert_eq!(hello["data"]["model"], "scripted-test");
    assert!(hello["data"]["version"].is_string());

    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    let data = &state["data"];
    assert_eq!(data["provider"], "scripted");
    assert_eq!(data["model"], "scripted-test");
    assert_eq!(data["cwd"], rpc.dir.path().display().to_string());
    assert_eq!(data["message_count"], 0);
    assert_eq!(data["busy"], false);
    assert_eq!(data["usage"]["reasoning"], Value::Null);
    for key in [
        "input",
        "output",
        "cache_read",
        "cache_write",
        "cache_measured_prompt",
        "cache_measured_read",
        "cost_usd",
    ] {
        assert!(data["usage"][key].is_number(), "usage.{key}: {data}");
    }

    let models = rpc.call(json!({"type": "get_models"}), "gm").await;
    let list = models["data"]["models"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], "scripted-test");
    assert_eq!(list[0]["provider"], "scripted");
    assert!(list[0]["context_window"].as_u64().unwrap() > 0);
    assert!(list[0]["max_output"].as_u64().unwrap() > 0);
    assert!(list[0]["reasoning"].is_boolean());

    let messages = rpc.call(json!({"type": "get_messages"}), "m").await;
    assert_eq!(messages["data"], json!({"messages": []}));

    rpc.send(json!({"type": "prompt", "message": "hi"})).await;
    let frames = rpc.until_type("done").await;
    assert_eq!(frames[0]["data"]["started"], true);

    let messages = rpc.call(json!({"type": "get_messages"}), "m2").await;
    let list = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["role"], "user");
    assert_eq!(list[0]["content"], json!([{"type": "text", "text": "hi"}]));
    assert!(list[0]["time"].is_string());
    assert_eq!(list[1]["role"], "assistant");
    assert_eq!(
        list[1]["content"],
        json!([{"type": "text", "text": "hello"}])
    );

    let state = rpc.call(json!({"type": "get_state"}), "s2").await;
    assert_eq!(state["data"]["message_count"], 2);
    assert_eq!(state["data"]["usage"]["input"], 10);
    assert!(state["data"]["usage"]["cost_usd"].as_f64().unwrap() > 0.0);

    let clear = rpc.call(json!({"type": "clear"}), "c").await;
    assert_eq!(
        clear,
        json!({"type": "response", "id": "c", "command": "clear", "success": true})
    );
    let state = rpc.call(json!({"type": "get_state"}), "s3").await;
    assert_eq!(state["data"]["message_count"], 0);
    assert_eq!(
        state["data"]["usage"]["input"], 10,
        "clear keeps usage and cost"
    );
    rpc.close();
    assert!(rpc.rest().await.is_empty());
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn set_model_and_set_reasoning_validate() {
    let mut rpc = Rpc::scripted(demo_turns());
    let ok = rpc
        .call(json!({"type": "set_model", "model": "scripted-test"}), "1")
        .await;
    assert_eq!(ok["data"], json!({"model": "scripted-test"}));
    let bad = rpc
        .call(json!({"type": "set_model", "model": "gpt-nope"}), "2")
        .await;
    assert_eq!(
        bad,
        json!({"type": "response", "id": "2", "command": "set_model", "success": false,
               "error": "unknown model \"gpt-nope\" (provider=\"scripted\")"})
    );
    let missing = rpc.call(json!({"type": "set_model"}), "3").await;
    assert_eq!(
        missing["error"],
        "unknown model \"\" (provider=\"scripted\")"
    );
    let typed = rpc
        .call(json!({"type": "set_model", "model": 5}), "4")
        .await;
    assert_eq!(typed["success"], false);
    assert!(!typed["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed json"));

    for (input, want) in [
        ("max", "max"),
        ("maximum", "xhigh"),
        ("off", ""),
        ("minimal", "minimum"),
        (" HIGH ", "high"),
        ("med", "medium"),
    ] {
        let r = rpc
            .call(json!({"type": "set_reasoning", "reasoning": input}), "r")
            .await;
        assert_eq!(r["data"], json!({"reasoning": want}), "{input}");
        let state = rpc.call(json!({"type": "get_state"}), "s").await;
        assert_eq!(state["data"]["reasoning"], want, "{input}");
    }
    let bad = rpc
        .call(
            json!({"type": "set_reasoning", "reasoning": "extreme"}),
            "b",
        )
        .await;
    assert_eq!(
        bad["error"],
        "reasoning must be off|minimum|low|medium|high|xhigh|max"
    );
    assert!(bad.get("data").is_none());
    let state = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(
        state["data"]["reasoning"], "medium",
        "a failed set_reasoning leaves the level"
    );
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn abort_while_idle_succeeds_without_events() {
    let mut rpc = Rpc::scripted(demo_turns());
    let r = rpc.call(json!({"type": "abort"}), "a").await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "a", "command": "abort", "success": true})
    );
    // The very next line is the ping's response: abort produced no events.
    let r = rpc.call(json!({"type": "ping"}), "p").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
}

#[tokio::test]
async fn prompt_field_errors_fail_without_starting() {
    let mut rpc = Rpc::scripted(demo_turns());
    let r = rpc
        .call(json!({"type": "prompt", "message": 42}), "p")
        .await;
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "prompt");
    assert!(!r["error"].as_str().unwrap().starts_with("malformed json"));
    let r = rpc
        .call(
            json!({"type": "prompt", "message": "x", "images": [{"mime_type": "image/png", "data": "@@@@"}]}),
            "b",
        )
        .await;
    assert_eq!(r["error"], "illegal base64 data at input byte 0");
    // Nothing ran: the next line is the ping's response and the transcript is empty.
    let r = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(r["data"]["message_count"], 0);
    rpc.close();
    assert!(rpc.rest().await.is_empty());
}

#[tokio::test]
async fn an_overlong_line_gets_a_clear_failure_and_reading_goes_on() {
    let mut rpc = Rpc::scripted(demo_turns());
    let mut line = br#"{"type":"prompt","message":""#.to_vec();
    line.resize(16 * 1024 * 1024 + 10, b'a');
    line.extend_from_slice(b"\"}\n");
    rpc.write(&line).await;
    let r = rpc.next().await;
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "");
    assert!(
        r["error"].as_str().unwrap().contains("line too long"),
        "{r}"
    );
    let r = rpc.call(json!({"type": "ping"}), "p").await;
    assert_eq!(r["data"]["pong"], true);
    let r = rpc.call(json!({"type": "get_state"}), "s").await;
    assert_eq!(r["data"]["message_count"], 0, "the long prompt did not run");
    rpc.close();
    assert!(rpc.exit().await.success());
}

// ---------------------------------------------------------------------------------------------
// Auth
// ---------------------------------------------------------------------------------------------

fn with_token(turns: Value) -> Rpc {
    Rpc::spawn(Opts {
        script: Some(turns),
        env: vec![("ZUTCORE_RPC_TOKEN", "shared-secret")],
        ..Opts::default()
    })
}

#[tokio::test]
async fn right_token_authenticates() {
    let mut rpc = with_token(demo_turns());
    // A malformed line before hello is answered and does not end the session.
    rpc.send_raw("{oops").await;
    assert!(rpc.next().await["error"]
        .as_str()
        .unwrap()
        .starts_with("malformed json"));
    let r = rpc
        .call(json!({"type": "hello", "token": "shared-secret"}), "0")
        .await;
    assert_eq!(r["success"], true);
    assert_eq!(r["data"]["protocol_version"], 1);
    // A second hello is not re-checked.
    let r = rpc
        .call(json!({"type": "hello", "token": "whatever"}), "1")
        .await;
    assert_eq!(r["success"], true);
    let r = rpc.call(json!({"type": "ping"}), "2").await;
    assert_eq!(r["data"]["pong"], true);
    rpc.close();
    assert!(rpc.exit().await.success());
}

#[tokio::test]
async fn wrong_token_fails_and_exits() {
    let mut rpc = with_token(demo_turns());
    let r = rpc
        .call(json!({"type": "hello", "token": "shared-secreT"}), "0")
        .await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "0", "command": "hello", "success": false, "error": "invalid token"})
    );
    // The process exits on its own, stdin still open.
    assert!(rpc.rest().await.is_empty());
    let status = rpc.exit().await;
    assert_eq!(status.code(), Some(1));
    assert!(rpc.stderr().await.contains("bad auth token"));
}

#[tokio::test]
async fn missing_or_non_string_token_fails_and_exits() {
    for hello in [
        json!({"type": "hello"}),
        json!({"type": "hello", "token": 12}),
    ] {
        let mut rpc = with_token(demo_turns());
        let r = rpc.call(hello, "0").await;
        assert_eq!(r["error"], "invalid token");
        assert!(rpc.rest().await.is_empty());
        assert_eq!(rpc.exit().await.code(), Some(1));
    }
}

#[tokio::test]
async fn command_before_hello_is_refused_and_exits() {
    let mut rpc = with_token(demo_turns());
    let r = rpc
        .call(json!({"type": "prompt", "message": "hi"}), "p")
        .await;
    assert_eq!(
        r,
        json!({"type": "response", "id": "p", "command": "prompt", "success": false,
               "error": "auth required: send hello with token first"})
    );
    assert!(rpc.rest().await.is_empty(), "the prompt must not have run");
    assert_eq!(rpc.exit().await.code(), Some(1));
}
