use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(*k, HeaderValue::from_static(v));
    }
    map
}

#[test]
fn retry_after_takes_http_dates_in_every_rfc_9110_format() {
    let at = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
    let now = at - Duration::from_secs(30);
    for value in [
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Wednesday, 21-Oct-15 07:28:00 GMT",
        "Wed Oct 21 07:28:00 2015",
    ] {
        let headers = {
            let mut map = HeaderMap::new();
            map.insert("retry-after", HeaderValue::from_str(value).expect("value"));
            map
        };
        assert_eq!(
            retry_after_at(&headers, now),
            Some(Duration::from_secs(30)),
            "{value}"
        );
        // A date already past asks for no wait.
        assert_eq!(
            retry_after_at(&headers, at + Duration::from_secs(5)),
            Some(Duration::ZERO),
            "{value}"
        );
    }
    let h = headers(&[("retry-after", "Wed, 32 Oct 2015 07:28:00 GMT")]);
    assert_eq!(retry_after_at(&h, now), None, "not a date");
    // retry-after-ms still wins over a date.
    let h = headers(&[
        ("retry-after-ms", "1500"),
        ("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
    ]);
    assert_eq!(retry_after_at(&h, now), Some(Duration::from_millis(1500)));
}

#[test]
fn absurd_retry_after_values_are_ignored_not_a_panic() {
    for (name, value) in [
        ("retry-after", "1e300"),
        ("retry-after", "-1"),
        ("retry-after", "NaN"),
        ("retry-after", "inf"),
        ("retry-after-ms", "1e300"),
        ("retry-after-ms", "-5"),
    ] {
        assert_eq!(
            retry_after(&headers(&[(name, value)])),
            None,
            "{name}: {value}"
        );
    }
    // A bad retry-after-ms falls back to a good retry-after.
    assert_eq!(
        retry_after(&headers(&[
            ("retry-after-ms", "soon"),
            ("retry-after", "2")
        ])),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn server_waits_are_honoured_up_to_the_cap_only() {
    let http = HttpConfig::default()
        .backoff(Duration::from_millis(100), Duration::from_millis(400))
        .max_retry_after(Duration::from_secs(60));
    let asked = |wait: Duration| {
        let mut err = ProviderError::new(ProviderErrorKind::RateLimited, "429");
        err.retry_after = Some(wait);
        err
    };
    assert_eq!(
        http.retry_delay(1, &asked(Duration::from_secs(60))),
        Duration::from_secs(60)
    );
    assert_eq!(http.retry_delay(1, &asked(Duration::ZERO)), Duration::ZERO);
    for retry in 1..=4 {
        let delay = http.retry_delay(retry, &asked(Duration::from_secs(3600)));
        assert!(delay <= Duration::from_millis(400), "capped: {delay:?}");
    }
}

#[test]
fn retry_after_prefers_milliseconds_and_accepts_fractions() {
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
        Some(Duration::from_millis(250))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "1.5")])),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
}

#[test]
fn status_errors_carry_the_api_message_and_kind() {
    let anthropic =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let err = status_error(529, &HeaderMap::new(), anthropic);
    assert_eq!(err.kind, ProviderErrorKind::Overloaded);
    assert!(err.retryable);
    assert!(err.message.contains("Overloaded"));

    let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let err = status_error(400, &HeaderMap::new(), openai);
    assert_eq!(err.kind, ProviderErrorKind::ContextLength);
    assert!(!err.retryable);

    let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let err = status_error(429, &HeaderMap::new(), quota);
    assert_eq!(err.kind, ProviderErrorKind::RateLimited);
    assert!(!err.retryable, "quota errors are not retried");

    let ollama = r#"{"error":"model \"llama9\" not found"}"#;
    let err = status_error(404, &HeaderMap::new(), ollama);
    assert_eq!(err.kind, ProviderErrorKind::NotFound);
    assert!(err.message.contains("llama9"));

    let err = status_error(500, &headers(&[("x-should-retry", "false")]), "oops");
    assert!(!err.retryable);
    assert!(err.message.contains("oops"));
    let err = status_error(400, &headers(&[("x-should-retry", "true")]), "");
    assert!(err.retryable);
}

#[test]
fn context_overflow_is_recognised_in_every_form() {
    let bodies: [(u16, &str); 9] = [
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            400,
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","code":null}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215034 tokens > 200000 maximum"}}"#,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#,
        ),
        (
            413,
            r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#,
        ),
        (
            500,
            r#"{"error":{"code":500,"message":"input is too large to process. increase the physical batch size","type":"server_error"}}"#,
        ),
        (
            400,
            r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - This model's maximum context length is 4096 tokens","type":null,"param":null,"code":"400"}}"#,
        ),
        (
            400,
            r#"{"error":"the input length exceeds the context length"}"#,
        ),
    ];
    for (status, body) in bodies {
        let err = status_error(status, &HeaderMap::new(), body);
        assert_eq!(err.kind, ProviderErrorKind::ContextLength, "{body}");
        assert!(!err.retryable, "{body}");
    }
    // Not an overflow: a rate limit on tokens per minute, an unrelated bad request.
    let tpm = r#"{"error":{"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000.","type":"tokens","code":"rate_limit_exceeded"}}"#;
    assert_eq!(
        status_error(429, &HeaderMap::new(), tpm).kind,
        ProviderErrorKind::RateLimited
    );
    let bad =
        r#"{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error"}}"#;
    assert_eq!(
        status_error(400, &HeaderMap::new(), bad).kind,
        ProviderErrorKind::BadRequest
    );
}

#[test]
fn errors_inside_a_stream_prefer_context_length_over_generic_kinds() {
    assert_eq!(
        api_error_kind(
            None,
            Some("invalid_request_error"),
            "prompt is too long: 1 > 0"
        ),
        ProviderErrorKind::ContextLength
    );
    assert_eq!(
        api_error_kind(Some("context_length_exceeded"), None, "whatever"),
        ProviderErrorKind::ContextLength
    );
    assert_eq!(
        api_error_kind(Some("400"), None, "ContextWindowExceededError: too long"),
        ProviderErrorKind::ContextLength
    );
    assert_eq!(
        api_error_kind(
            Some("rate_limit_exceeded"),
            None,
            "too many tokens per minute"
        ),
        ProviderErrorKind::RateLimited
    );
    assert_eq!(
        api_error_kind(None, Some("overloaded_error"), "Overloaded"),
        ProviderErrorKind::Overloaded
    );
    assert_eq!(
        api_error_kind(None, None, "boom"),
        ProviderErrorKind::Stream
    );
}

#[test]
fn backoff_grows_and_is_capped_with_jitter() {
    let http =
        HttpConfig::default().backoff(Duration::from_millis(100), Duration::from_millis(300));
    for _ in 0..50 {
        let first = http.backoff_delay(1);
        assert!(first <= Duration::from_millis(100) && first >= Duration::from_millis(75));
        let third = http.backoff_delay(3);
        assert!(third <= Duration::from_millis(300) && third >= Duration::from_millis(225));
    }
}

#[test]
fn scrub_removes_the_key() {
    let key = SecretString::from("sk-secret-123");
    assert_eq!(
        scrub("bad key sk-secret-123".into(), Some(&key)),
        "bad key [REDACTED]"
    );
}
