//! Retries, timeouts and broken streams (through the Chat Completions provider; the
//! driver is shared by all three APIs).

use std::time::Duration;

use agent_core::provider::{ProviderErrorKind, ProviderEvent, ProviderStop};
use agent_providers::{AnthropicProvider, OpenAiProvider};
use serde_json::json;

use crate::common::*;

fn ok_body() -> String {
    frames(&[(
        None,
        json!({"choices": [{"index": 0, "delta": {"content": "fine"}, "finish_reason": "stop"}]}),
    )]) + "data: [DONE]\n\n"
}

fn attempts(items: &[Item]) -> Vec<ProviderEvent> {
    items
        .iter()
        .filter_map(|i| i.as_ref().ok())
        .filter(|e| {
            matches!(
                e,
                ProviderEvent::RequestStarted { .. } | ProviderEvent::RetryScheduled { .. }
            )
        })
        .cloned()
        .collect()
}

#[tokio::test]
async fn http_429_with_retry_after_is_retried_after_that_delay() {
    let limited = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = MockModel::start(vec![
        Reply::json(429, limited).header("retry-after", "1"),
        sse(&ok_body()),
    ]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    assert_eq!(
        attempts(&items),
        vec![
            ProviderEvent::RequestStarted {
                attempt: 1,
                max_attempts: 4
            },
            ProviderEvent::RetryScheduled {
                attempt: 2,
                max_attempts: 4,
                delay: Duration::from_secs(1)
            },
            ProviderEvent::RequestStarted {
                attempt: 2,
                max_attempts: 4
            },
        ]
    );
    let events = ok_events(items);
    assert_eq!(text(&events), "fine");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.requests()[0].json(),
        server.requests()[1].json(),
        "the same request again"
    );
}

#[tokio::test]
async fn retry_after_ms_takes_precedence() {
    let server = MockModel::start(vec![
        Reply::json(429, "{}")
            .header("retry-after-ms", "40")
            .header("retry-after", "30"),
        sse(&ok_body()),
    ]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    assert!(attempts(&items).contains(&ProviderEvent::RetryScheduled {
        attempt: 2,
        max_attempts: 4,
        delay: Duration::from_millis(40)
    }));
    ok_events(items);
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured_within_the_cap() {
    let past = httpdate::fmt_http_date(std::time::SystemTime::now() - Duration::from_secs(60));
    let far = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3600));
    let server = MockModel::start([
        Reply::json(429, "{}").header("retry-after", &past),
        Reply::json(503, "{}").header("retry-after", &far),
        sse(&ok_body()),
    ]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    let delays: Vec<Duration> = attempts(&items)
        .into_iter()
        .filter_map(|e| match e {
            ProviderEvent::RetryScheduled { delay, .. } => Some(delay),
            _ => None,
        })
        .collect();
    assert_eq!(delays.len(), 2, "{items:?}");
    assert_eq!(delays[0], Duration::ZERO, "a date already past: no wait");
    assert!(
        delays[1] <= Duration::from_millis(5),
        "an hour is beyond the 60 s cap: the backoff instead: {:?}",
        delays[1]
    );
    assert_eq!(text(&ok_events(items)), "fine");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn http_500_twice_then_success() {
    let server = MockModel::start(vec![
        Reply::json(500, r#"{"error":{"message":"internal"}}"#),
        Reply::json(502, "Bad Gateway"),
        sse(&ok_body()),
    ]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    let attempts = attempts(&items);
    assert_eq!(attempts.len(), 5, "{attempts:?}");
    for (i, event) in attempts.iter().enumerate() {
        match (i, event) {
            (0 | 2 | 4, ProviderEvent::RequestStarted { attempt, .. }) => {
                assert_eq!(*attempt as usize, i / 2 + 1)
            }
            (1 | 3, ProviderEvent::RetryScheduled { attempt, delay, .. }) => {
                assert_eq!(*attempt as usize, i / 2 + 2);
                assert!(
                    *delay <= Duration::from_millis(5),
                    "backoff is capped: {delay:?}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(text(&ok_events(items)), "fine");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn the_retry_budget_is_bounded() {
    let server = MockModel::start(vec![Reply::json(
        503,
        r#"{"error":{"message":"try later"}}"#,
    )]);
    let mut config = client(&server.v1(), "m");
    config.http = config.http.max_retries(2);
    let provider = OpenAiProvider::new(config);
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Server);
    assert_eq!(err.status, Some(503));
    assert!(err.message.contains("try later"));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        items[items.len() - 2],
        Ok(ProviderEvent::RequestStarted {
            attempt: 3,
            max_attempts: 3
        })
    );
}

#[tokio::test]
async fn x_should_retry_false_stops_retries() {
    let server = MockModel::start(vec![
        Reply::json(500, r#"{"error":{"message":"do not retry me"}}"#)
            .header("x-should-retry", "false"),
        sse(&ok_body()),
    ]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let err = err_of(&run(&provider, request("m")).await);
    assert!(err.message.contains("do not retry me"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn anthropic_529_overloaded_is_retried() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let ok = frames(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ]);
    let server = MockModel::start(vec![Reply::json(529, overloaded), sse(&ok)]);
    let provider = AnthropicProvider::new(client(&server.url(), "claude-haiku-4-5").api_key("k"));
    let items = run(&provider, request("claude-haiku-4-5")).await;
    assert!(matches!(
        attempts(&items)[1],
        ProviderEvent::RetryScheduled { attempt: 2, .. }
    ));
    let events = ok_events(items);
    assert_eq!(text(&events), "ok");
    assert_eq!(usage(&events), Some(usage_of(3, 2, 0, 0, None)));
}

#[tokio::test]
async fn a_stream_cut_after_content_is_an_error_and_never_re_posted() {
    let partial = frames(&[
        (
            None,
            json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
        ),
        (
            None,
            json!({"choices": [{"index": 0, "delta": {"content": "lo"}}]}),
        ),
    ]);
    let server = FaultServer::start([Fault::sse_then(partial, End::Cut), Fault::sse(ok_body())]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Network, "{err:?}");
    assert!(items.contains(&Ok(ProviderEvent::TextDelta("Hel".into()))));
    assert!(!items
        .iter()
        .any(|i| matches!(i, Ok(ProviderEvent::RetryScheduled { .. }))));
    assert!(!items
        .iter()
        .any(|i| matches!(i, Ok(ProviderEvent::Stop(_)))));
    assert_eq!(server.requests().len(), 1, "no silent re-POST");
}

#[tokio::test]
async fn a_stream_that_ends_without_finishing_is_an_error() {
    let partial = frames(&[(
        None,
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
    )]);
    let server = MockModel::start(vec![sse(&partial)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let err = err_of(&run(&provider, request("m")).await);
    assert_eq!(err.kind, ProviderErrorKind::Network);
    assert!(err.message.contains("ended before"), "{}", err.message);
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let partial = frames(&[(
        None,
        json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
    )]);
    let server = FaultServer::start([Fault::sse_then(partial, End::Stall)]);
    let mut config = client(&server.v1(), "m");
    config.http = config.http.idle_timeout(Duration::from_millis(300));
    let provider = OpenAiProvider::new(config);
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Timeout);
    assert!(err.message.contains("idle"), "{}", err.message);
    assert!(items.contains(&Ok(ProviderEvent::TextDelta("Hel".into()))));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_silent_server_before_the_response_head_is_a_retried_timeout() {
    // Reads the request and never answers: no response head.
    let server = FaultServer::start([Fault::Silent]);
    let mut config = client(&server.v1(), "m");
    config.http = config
        .http
        .idle_timeout(Duration::from_millis(200))
        .max_retries(1);
    let provider = OpenAiProvider::new(config);
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Timeout);
    assert_eq!(
        attempts(&items).len(),
        3,
        "two attempts and one retry: {items:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let mut config = client(&format!("{}/v1", refused_url()), "m");
    config.http = config.http.max_retries(1);
    let provider = OpenAiProvider::new(config);
    let items = run(&provider, request("m")).await;
    let err = err_of(&items);
    assert_eq!(err.kind, ProviderErrorKind::Network);
    assert!(err.message.contains("cannot connect"), "{}", err.message);
    assert!(matches!(
        attempts(&items)[..],
        [
            ProviderEvent::RequestStarted {
                attempt: 1,
                max_attempts: 2
            },
            ProviderEvent::RetryScheduled {
                attempt: 2,
                max_attempts: 2,
                ..
            },
            ProviderEvent::RequestStarted {
                attempt: 2,
                max_attempts: 2
            },
        ]
    ));
}

#[tokio::test]
async fn a_stop_without_done_still_finishes() {
    let body = frames(&[(
        None,
        json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "length"}]}),
    )]);
    let server = MockModel::start(vec![sse(&body)]);
    let provider = OpenAiProvider::new(client(&server.v1(), "m"));
    let events = ok_events(run(&provider, request("m")).await);
    assert_eq!(stop(&events), ProviderStop::MaxTokens);
}

#[tokio::test]
async fn providers_on_one_shared_client_reuse_its_connection() {
    use agent_providers::{build_provider_on, build_provider_with, ProviderConfig, ProviderId};
    use agent_providers::{ClientConfig, SharedHttp};

    let server = MockModel::start(vec![Reply::chat_text("one"), Reply::chat_text("two")]);
    let mut config = ProviderConfig::new(ProviderId::OpenAi);
    config.base_url = Some(server.v1());
    config.model = Some("mock-model-small".into());
    let http = SharedHttp::new(fast_http());
    // A model listing, then a session's provider: one connection, kept alive.
    let lister = build_provider_on(&config, &http).expect("builds");
    let listed = tokio::time::timeout(WAIT, lister.list_models())
        .await
        .expect("in time")
        .expect("listed");
    assert_eq!(listed.len(), MockModel::MODELS.len());
    let session = build_provider_on(&config, &http).expect("builds");
    ok_events(run(session.as_ref(), request("mock-model-small")).await);
    assert_eq!(
        server.connections(),
        1,
        "the listing's connection is reused"
    );
    // A provider built on its own client opens its own.
    let alone = build_provider_with(&config, &fast_http()).expect("builds");
    ok_events(run(alone.as_ref(), request("mock-model-small")).await);
    assert_eq!(server.connections(), 2);
    // Sharing a client means its timeouts and retries.
    let shared = ClientConfig::new(server.v1(), "m").shared_http(&http);
    assert_eq!(&shared.http, http.config());
}
