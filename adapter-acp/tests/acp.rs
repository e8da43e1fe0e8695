//! `adapter-acp acp` over pipes with raw JSON-RPC lines (no Node needed): the handshake,
//! a prompt whose tool call asks permission (the `tool_call` comes first), cancel
//! mid-stream, and bad input answered in JSON-RPC's own form. The official-SDK client test
//! is `acp_node.rs`. Every read is bounded by `common::WAIT`.

mod common;

use std::path::Path;

use common::acp_client::Acp;
use common::write_script;
use serde_json::json;

/// `adapter-acp acp` playing `script` with its data in `data`.
fn spawn(script: &Path, data: &Path) -> Acp {
    Acp::spawn(&common::scripted_args(script, data), &[], None)
}

#[tokio::test]
async fn prompt_with_permission_cancel_and_bad_input() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let script = write_script(
        root.path(),
        json!([
            {"steps": [
                {"reasoning": "Plan: echo."},
                {"text": "Running."},
                {"tool_call": {"id": "c1", "name": "bash", "args": ["{\"command\": \"echo hi\"}"]}}
            ]},
            {"steps": [{"text": "Done."}]},
            {"steps": [{"text": "slow"}, {"delay_ms": 60000}, {"text": " never"}]}
        ]),
    );
    let mut acp = spawn(&script, &root.path().join("data"));

    // Bad input first: it is answered, and the agent keeps serving.
    acp.send_raw(b"{not json").await;
    let parse = acp
        .next_matching(|m| m["error"]["code"] == json!(-32700))
        .await;
    assert!(parse["id"].is_null(), "{parse}");

    let init = acp
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentInfo"]["name"], "adapter-acp");

    let id = acp
        .request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    let relative = acp.reply(id).await;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(relative["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("absolute"));

    let created = acp
        .call("session/new", json!({"cwd": ws, "mcpServers": []}))
        .await;
    let session = created["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    assert_eq!(created["modes"]["currentModeId"], "build");

    let missing = acp
        .request(
            "session/prompt",
            json!({"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    let missing = acp.reply(missing).await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(missing["error"]["message"], "Session not found: sess_nope");

    let audio = acp
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]}),
        )
        .await;
    let audio = acp.reply(audio).await;
    assert_eq!(audio["error"]["code"], -32602, "{audio}");

    // A prompt whose bash call asks permission.
    let prompt = acp.request_prompt(&session, "echo please").await;
    let ask = acp
        .next_matching(|m| m["method"] == "session/request_permission")
        .await;
    // Everything before the request is in the backlog: the call was announced first.
    let announced = acp.backlog.iter().any(|m| {
        m["method"] == "session/update"
            && m["params"]["update"]["sessionUpdate"] == "tool_call"
            && m["params"]["update"]["toolCallId"] == "c1"
    });
    assert!(announced, "tool_call before request_permission");
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "c1");
    assert_eq!(ask["params"]["toolCall"]["kind"], "execute");
    let options: Vec<&str> = ask["params"]["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    acp.send(json!({"id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_always"}}}))
        .await;
    let done = acp.reply(prompt).await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let mut updates = Vec::new();
    while let Some(pos) = acp
        .backlog
        .iter()
        .position(|m| m["method"] == "session/update")
    {
        let message = acp.backlog.remove(pos).expect("valid position");
        updates.push(message["params"]["update"].clone());
    }
    let statuses: Vec<&str> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    let thought: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_thought_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(thought, "Plan: echo.");

    // Cancel mid-stream.
    let slow = acp.request_prompt(&session, "go slow").await;
    let first = acp.update().await;
    assert_eq!(first["sessionUpdate"], "agent_message_chunk");
    assert_eq!(first["content"]["text"], "slow");
    acp.send(json!({"method": "session/cancel", "params": {"sessionId": session}}))
        .await;
    let cancelled = acp.reply(slow).await;
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );

    // Unknown methods get the standard error.
    let unknown = acp.request("session/frobnicate", json!({})).await;
    assert_eq!(acp.reply(unknown).await["error"]["code"], -32601);

    assert!(acp.shutdown().await, "clean exit at end of input");
}

#[tokio::test]
async fn requests_pipelined_behind_initialize_are_served_in_order() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let script = write_script(root.path(), json!([{"steps": [{"text": "Hi."}]}]));
    let mut acp = spawn(&script, &root.path().join("data"));

    // A request before initialize is still refused, with its own id.
    let early = acp.request("session/list", json!({})).await;
    let early = acp.reply(early).await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("initialization must complete")),
        "{early}"
    );

    // initialize, then three requests written before its response can have arrived.
    let init = acp
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    let new = acp
        .request("session/new", json!({"cwd": ws, "mcpServers": []}))
        .await;
    let list = acp.request("session/list", json!({})).await;
    let unknown = acp.request("session/frobnicate", json!({})).await;
    let mut order = Vec::new();
    for _ in 0..4 {
        let reply = acp
            .next_matching(|m| m.get("method").is_none() && m["id"].is_i64())
            .await;
        order.push(reply["id"].as_i64().expect("id"));
        match reply["id"].as_i64() {
            Some(id) if id == init => assert_eq!(reply["result"]["protocolVersion"], 1),
            Some(id) if id == new => {
                assert!(reply["result"]["sessionId"].is_string(), "{reply}")
            }
            Some(id) if id == list => {
                assert_eq!(
                    reply["result"]["sessions"].as_array().map(Vec::len),
                    Some(1)
                )
            }
            _ => assert_eq!(reply["error"]["code"], -32601, "{reply}"),
        }
    }
    assert_eq!(order, [init, new, list, unknown], "answered in order");
    assert!(acp.shutdown().await, "clean exit at end of input");
}

#[tokio::test]
async fn a_request_whose_params_are_not_an_object_is_answered_with_its_own_id() {
    let root = tempfile::tempdir().expect("tempdir");
    let script = write_script(root.path(), json!([{"steps": [{"text": "Hi."}]}]));
    let mut acp = spawn(&script, &root.path().join("data"));
    acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await;
    for (id, params) in [
        (json!(41), json!(5)),
        (json!("str-id"), json!("text")),
        (json!(43), json!(true)),
    ] {
        acp.send(json!({"id": id, "method": "session/new", "params": params}))
            .await;
        let reply = acp
            .next_matching(|m| m.get("error").is_some() && !m["id"].is_null())
            .await;
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
    }
    // An id that cannot be read is still answered with null.
    acp.send(json!({"id": {"nested": true}, "method": "session/new", "params": 5}))
        .await;
    let reply = acp.next_matching(|m| m.get("error").is_some()).await;
    assert!(reply["id"].is_null(), "{reply}");
    // And the agent keeps serving.
    let listed = acp.call("session/list", json!({})).await;
    assert!(listed["sessions"].is_array());
    assert!(acp.shutdown().await, "clean exit at end of input");
}

/// A prompt's `resource_link` is read before its turn (here through the client's
/// `fs/read_text_file`); a `session/cancel` while it is read ends the prompt `cancelled`
/// without asking the model, and the session takes the next prompt.
#[tokio::test]
async fn a_prompt_cancelled_while_its_mention_is_read_ends_cancelled() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, "disk text\n").expect("notes");
    let script = write_script(root.path(), json!([{"steps": [{"text": "First answer."}]}]));
    let mut acp = spawn(&script, &root.path().join("data"));
    acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
    )
    .await;
    let session = acp.new_session(&ws).await;
    let uri = format!("file://{}", notes.display());
    let prompt = acp
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "Read "},
                {"type": "resource_link", "name": "notes.txt", "uri": uri}
            ]}),
        )
        .await;
    let read = acp
        .next_matching(|m| m["method"] == "fs/read_text_file")
        .await;
    assert_eq!(read["params"]["path"], json!(notes), "{read}");
    assert_eq!(read["params"]["sessionId"], session.as_str());
    acp.send(json!({"method": "session/cancel", "params": {"sessionId": session}}))
        .await;
    acp.send(json!({"id": read["id"], "result": {"content": "buffer text\n"}}))
        .await;
    let cancelled = acp.reply(prompt).await;
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );
    // The model was not asked: the next prompt gets the script's first answer.
    let next = acp.prompt(&session, "hello").await;
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
    let said: String = acp
        .backlog
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(said, "First answer.");
    assert!(acp.shutdown().await, "clean exit at end of input");
}

/// Whether `fd`'s open file description is in non-blocking mode.
fn is_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: F_GETFL only reads the flags of an open (borrowed) descriptor.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0, "fcntl: {}", std::io::Error::last_os_error());
    flags & libc::O_NONBLOCK != 0
}

/// Pipes as stdin and stdout are read and written through the runtime's reactor (agent-host's
/// `stdio`: non-blocking mode while the agent runs) and given back in blocking mode when it
/// exits, so whoever shares them sees no change.
#[tokio::test]
async fn stdio_pipes_are_driven_by_the_reactor_and_given_back_in_blocking_mode() {
    use std::io::{BufRead, Write};
    use std::os::fd::AsFd;
    use std::process::Stdio;

    let root = tempfile::tempdir().expect("tempdir");
    let script = write_script(root.path(), json!([{"steps": [{"text": "Hi."}]}]));
    let (stdin, mut to_agent) = std::io::pipe().expect("pipe");
    let (from_agent, stdout) = std::io::pipe().expect("pipe");
    // The test's own descriptors of the agent's ends: they share the agent's mode.
    let (shared_in, shared_out) = (
        stdin.try_clone().expect("dup"),
        stdout.try_clone().expect("dup"),
    );
    let mut args = vec!["acp".to_string()];
    args.extend(common::scripted_args(&script, &root.path().join("data")));
    let mut child = common::command(&args, &[], None)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .spawn()
        .expect("spawn adapter-acp");

    writeln!(
        to_agent,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":1}}}}"#
    )
    .expect("write");
    let reading = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(from_agent)
            .read_line(&mut line)
            .map(|_| line)
    });
    let line = tokio::time::timeout(common::WAIT, reading)
        .await
        .expect("the agent answers initialize")
        .expect("reader")
        .expect("read");
    let reply: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(reply["result"]["protocolVersion"], 1, "{reply}");
    assert!(
        is_nonblocking(shared_in.as_fd()),
        "stdin through the reactor"
    );
    assert!(
        is_nonblocking(shared_out.as_fd()),
        "stdout through the reactor"
    );

    drop(to_agent);
    let status = tokio::time::timeout(common::WAIT, child.wait())
        .await
        .expect("the agent exits at the end of its input")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(!is_nonblocking(shared_in.as_fd()), "stdin given back");
    assert!(!is_nonblocking(shared_out.as_fd()), "stdout given back");
}
