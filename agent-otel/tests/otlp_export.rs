//! `agent_otel::init` against a local OTLP/HTTP receiver: the agent's spans arrive with
//! their GenAI attributes, nested, under the `TRACEPARENT` from the environment.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agent_core::{async_trait, Agent, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use agent_providers::scripted::{ScriptedProvider, Turn};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// One HTTP request the receiver got: path and body.
type Request = (String, Vec<u8>);

/// A minimal OTLP/HTTP receiver on 127.0.0.1: answers every POST with 200 and hands the
/// request to the test.
fn receiver() -> (SocketAddr, mpsc::Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(WAIT));
                let mut writer = match stream.try_clone() {
                    Ok(w) => w,
                    Err(_) => return,
                };
                let mut reader = BufReader::new(stream);
                // Serve requests on this connection until it closes.
                while let Some(request) = read_request(&mut reader) {
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(reply.as_bytes()).is_err() || tx.send(request).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, rx)
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((path, body))
}

struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes text."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .filter_map(|kv| {
            let value = match kv.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => s.clone(),
                AnyValue::IntValue(i) => i.to_string(),
                AnyValue::BoolValue(b) => b.to_string(),
                AnyValue::DoubleValue(d) => d.to_string(),
                other => format!("{other:?}"),
            };
            Some((kv.key.clone(), value))
        })
        .collect()
}

#[test]
fn spans_reach_an_otlp_receiver_under_the_environment_traceparent() {
    let (addr, requests) = receiver();
    // This binary holds this one test, so the process environment is ours to set.
    std::env::set_var(agent_otel::ENDPOINT_ENV, format!("http://{addr}"));
    std::env::remove_var(agent_otel::TRACES_ENDPOINT_ENV);
    std::env::remove_var("OTEL_SERVICE_NAME");
    std::env::set_var("NO_PROXY", "127.0.0.1,localhost");
    std::env::set_var(
        agent_otel::TRACEPARENT_ENV,
        format!("00-{TRACE_ID}-{PARENT_ID}-01"),
    );

    let guard = agent_otel::init("agent-otel-test")
        .expect("export set up")
        .expect("the endpoint turns export on");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let provider = ScriptedProvider::new([
            Turn::new()
                .tool_call("call_1", "echo", r#"{"text":"hi"}"#)
                .usage(40, 4),
            Turn::new().text("done").usage(50, 2),
        ]);
        let agent = Agent::builder(provider).model("m-1").tool(Echo).build();
        let outcome = tokio::time::timeout(WAIT, agent.run("go"))
            .await
            .expect("run in time");
        assert!(outcome.is_success());
    });
    drop(runtime);
    // Dropping the guard flushes what the batch processor holds.
    drop(guard);

    let mut spans: Vec<(Span, String)> = Vec::new();
    let deadline = Instant::now() + WAIT;
    while spans
        .iter()
        .filter(|(s, _)| s.name.starts_with("agent."))
        .count()
        < 4
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let (path, body) = requests
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("only {} spans arrived", spans.len()));
        assert_eq!(path, "/v1/traces");
        let export = ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf");
        for resource in export.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| r.attributes.iter())
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref()?.value.clone());
            let service = match service {
                Some(AnyValue::StringValue(s)) => s,
                other => format!("{other:?}"),
            };
            for scope in resource.scope_spans {
                spans.extend(scope.spans.into_iter().map(|s| (s, service.clone())));
            }
        }
    }

    let find = |name: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|(s, _)| s.name == name)
            .map(|(s, _)| s)
            .collect()
    };
    let run = find("agent.run");
    let turns = find("agent.turn");
    let tools = find("agent.tool");
    assert_eq!((run.len(), turns.len(), tools.len()), (1, 2, 1));
    let run = run[0];
    assert!(spans
        .iter()
        .all(|(_, service)| service == "agent-otel-test"));

    // The run hangs under the environment's span, in its trace; the rest under the run.
    assert_eq!(hex(&run.trace_id), TRACE_ID);
    assert_eq!(hex(&run.parent_span_id), PARENT_ID);
    for turn in &turns {
        assert_eq!(turn.parent_span_id, run.span_id);
        assert_eq!(hex(&turn.trace_id), TRACE_ID);
    }
    let first_turn = turns
        .iter()
        .find(|t| attributes(t).get("agent.turn.step").map(String::as_str) == Some("1"))
        .expect("step 1");
    assert_eq!(tools[0].parent_span_id, first_turn.span_id);

    let run_attrs = attributes(run);
    assert_eq!(run_attrs["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run_attrs["gen_ai.system"], "scripted");
    assert_eq!(run_attrs["gen_ai.request.model"], "m-1");
    assert_eq!(run_attrs["gen_ai.usage.input_tokens"], "90");
    assert_eq!(run_attrs["gen_ai.usage.output_tokens"], "6");
    let turn_attrs = attributes(first_turn);
    assert_eq!(turn_attrs["gen_ai.operation.name"], "chat");
    assert_eq!(turn_attrs["gen_ai.usage.input_tokens"], "40");
    assert_eq!(turn_attrs["gen_ai.usage.output_tokens"], "4");
    assert_eq!(turn_attrs["gen_ai.response.finish_reasons"], "tool_calls");
    let tool_attrs = attributes(tools[0]);
    assert_eq!(tool_attrs["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool_attrs["gen_ai.tool.name"], "echo");
    assert_eq!(tool_attrs["gen_ai.tool.call.id"], "call_1");
}
