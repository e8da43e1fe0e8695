//! Vertex AI against a server answering as Google documents it, with a local OAuth token
//! endpoint that checks the service account's signed JWT against the test key's public half.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::provider::{ProviderErrorKind, ProviderStop};
use agent_providers::vertex::{auth::Credentials, VertexProvider};
use agent_providers::{build_provider_with, ProviderConfig, ProviderId};
use base64::Engine;
use serde_json::{json, Value};
use test_support::{gemini, Request};

use crate::common::*;

/// The test service account's key (PKCS#8) and its public half (PKCS#1), made for these
/// tests with `openssl genpkey -algorithm RSA`; they sign nothing anywhere else.
const PRIVATE_KEY: &str = include_str!("keys/service-account-test.pem");
const PUBLIC_KEY: &str = include_str!("keys/service-account-test.pub.pem");
const EMAIL: &str = "agent-test@proj-1.iam.gserviceaccount.com";

fn b64url(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .expect("base64url")
}

/// The form fields of a token request.
fn form(request: &Request) -> Vec<(String, String)> {
    request
        .text()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%3A", ":").replace("%2F", "/")))
        .collect()
}

/// What is wrong with the JWT bearer grant `request` (checked as Google's endpoint would:
/// grant type, RS256 signature by the test key, issuer, audience, scope, lifetime).
fn check_grant(request: &Request, token_uri: &str) -> Result<Value, String> {
    let form = form(request);
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .ok_or(format!("no {name}"))
    };
    if field("grant_type")? != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
        return Err("grant_type".into());
    }
    let assertion = field("assertion")?;
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("not a JWT".into());
    };
    let der: String = PUBLIC_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(der)
        .map_err(|e| e.to_string())?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, der)
        .verify(format!("{header}.{claims}").as_bytes(), &b64url(signature))
        .map_err(|_| "Invalid JWT Signature.".to_string())?;
    let header: Value = serde_json::from_slice(&b64url(header)).map_err(|e| e.to_string())?;
    let claims: Value = serde_json::from_slice(&b64url(claims)).map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" || header["kid"] != "key-test-1" {
        return Err(format!("header {header}"));
    }
    if claims["iss"] != EMAIL
        || claims["aud"] != token_uri
        || claims["scope"] != "https://www.googleapis.com/auth/cloud-platform"
        || claims["exp"]
            .as_u64()
            .zip(claims["iat"].as_u64())
            .map(|(e, i)| e - i)
            != Some(3600)
    {
        return Err(format!("claims {claims}"));
    }
    Ok(claims)
}

/// A service account key file whose `token_uri` is `token_uri`.
fn key_file(token_uri: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "vertex-sa-{}-{}.json",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let key = json!({
        "type": "service_account",
        "project_id": "proj-1",
        "private_key_id": "key-test-1",
        "private_key": PRIVATE_KEY,
        "client_email": EMAIL,
        "client_id": "1234567890",
        "token_uri": token_uri,
    });
    std::fs::write(&path, key.to_string()).expect("write the key file");
    path
}

/// A Vertex server on 127.0.0.1 whose `/token` checks grants and hands out `ya29.test-N`
/// tokens living `lifetime` seconds, and whose model routes answer `replies` (only for the
/// current token).
fn server(lifetime: u64, replies: Vec<Reply>) -> MockModel {
    let replies = std::sync::Mutex::new(replies.into_iter());
    MockModel::start(test_support::Script::respond(move |request, earlier| {
        let issued = earlier.iter().filter(|r| r.path == "/token").count();
        if request.path == "/token" {
            let uri = format!("http://{}/token", request.header("host").unwrap_or(""));
            return match check_grant(request, &uri) {
                Ok(_) => gemini::token(&format!("ya29.test-{}", issued + 1), lifetime),
                Err(why) => gemini::token_refused(&why),
            };
        }
        if request.header("authorization") != Some(format!("Bearer ya29.test-{issued}").as_str()) {
            return gemini::error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials.",
            );
        }
        replies
            .lock()
            .expect("replies")
            .next()
            .unwrap_or_else(|| gemini::error(500, "INTERNAL", "no scripted reply"))
    }))
}

fn provider(server: &MockModel, model: &str, location: &str) -> VertexProvider {
    let credentials = Credentials::from_file(&key_file(&format!("{}/token", server.url())))
        .expect("the key file");
    assert_eq!(credentials.project(), Some("proj-1"));
    VertexProvider::new(
        client(&server.url(), model),
        "proj-1",
        location,
        credentials,
    )
}

#[tokio::test]
async fn gemini_on_vertex_with_a_service_account_token_cached_across_calls() {
    let server = server(
        3600,
        vec![
            gemini::text("One."),
            gemini::call("get_weather", json!({"city": "Oslo"})),
        ],
    );
    let provider = provider(&server, "gemini-2.5-pro", "us-central1");
    let events = ok_events(run(&provider, request("")).await);
    assert_eq!(text(&events), "One.");
    let mut second = request("");
    second.tools = vec![weather_tool()];
    let events = ok_events(run(&provider, second).await);
    assert_eq!(stop(&events), ProviderStop::ToolUse);

    let sent = server.requests();
    let paths: Vec<&str> = sent.iter().map(|r| r.path.as_str()).collect();
    let model = "/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    assert_eq!(paths, ["/token", model, model], "one token for both calls");
    assert_eq!(sent[1].header("authorization"), Some("Bearer ya29.test-1"));
    assert_eq!(sent[1].header("x-goog-api-key"), None);
    assert_eq!(sent[1].json()["contents"][0]["parts"][0]["text"], "Hi");
}

#[tokio::test]
async fn a_token_about_to_expire_is_exchanged_again() {
    // A lifetime under a minute is replaced before every call.
    let server = server(30, vec![gemini::text("a"), gemini::text("b")]);
    let provider = provider(&server, "gemini-2.5-flash", "global");
    assert_eq!(text(&ok_events(run(&provider, request("")).await)), "a");
    assert_eq!(text(&ok_events(run(&provider, request("")).await)), "b");
    let tokens = server
        .requests()
        .iter()
        .filter(|r| r.path == "/token")
        .count();
    assert_eq!(tokens, 2);
}

#[tokio::test]
async fn claude_on_vertex_goes_through_stream_raw_predict() {
    let server = server(
        3600,
        vec![Reply::sse(
            vendor::anthropic::Stream::new(12)
                .thinking("Short.", "sig-v")
                .text("Hello from Claude.")
                .stop("end_turn", 6),
        )],
    );
    let provider = provider(&server, "claude-sonnet-4-5@20250929", "us-east5");
    let events = ok_events(run(&provider, request("")).await);
    assert_eq!(text(&events), "Hello from Claude.");
    assert_eq!(reasoning(&events), "Short.");
    let sent = &server.requests()[1];
    assert_eq!(
        sent.path,
        "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    let body = sent.json();
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert_eq!(body.get("model"), None, "the URL names the model");
    assert_eq!(
        body["max_tokens"], 64000,
        "the catalogue knows the @ snapshot"
    );
    assert_eq!(body["messages"][0]["content"][0]["text"], "Hi");
    assert_eq!(sent.header("anthropic-version"), None);
    // Regional Claude Sonnet 4.5 costs 10 % more than global.
    let info =
        agent_core::Provider::model_info(&provider, "claude-sonnet-4-5@20250929").expect("info");
    let input = info.pricing.map(|p| p.input).unwrap_or_default();
    assert!((input - 3.3).abs() < 1e-9, "{input}");
}

#[tokio::test]
async fn a_refused_key_is_an_auth_error_and_the_model_is_never_asked() {
    let server = MockModel::start([gemini::token_refused("Invalid JWT Signature.")]);
    let provider = provider(&server, "gemini-2.5-pro", "us-central1");
    let err = err_of(&run(&provider, request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert!(
        err.message
            .contains("invalid_grant: Invalid JWT Signature."),
        "{}",
        err.message
    );
    assert!(!err.message.contains("BEGIN PRIVATE KEY"));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn vertex_errors_are_read_as_googles() {
    let server = server(
        3600,
        vec![
            gemini::error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-2.5-pro."),
            Reply::json(404, json!([{"error": {"code": 404, "message": "Publisher Model `projects/proj-1/locations/us-central1/publishers/google/models/gemini-9` was not found or your project does not have access to it.", "status": "NOT_FOUND"}}])),
        ],
    );
    let provider = provider(&server, "gemini-9", "us-central1");
    let err = err_of(&run(&provider, request("")).await);
    assert_eq!(err.kind, ProviderErrorKind::NotFound);
    assert!(err.message.contains("Publisher Model"), "{}", err.message);
    assert_eq!(server.request_count(), 3, "token, the 429, the retry");
}

#[test]
fn vertex_settings_come_from_flags_the_environment_or_the_key_file() {
    let http = fast_http();
    let mut config = ProviderConfig::new(ProviderId::Vertex);
    config.api_key = Some("ya29.given-token-0123".into());
    config.region = Some("us central".into());
    let err = build_provider_with(&config, &http)
        .err()
        .expect("bad location");
    assert!(
        err.to_string().contains("invalid Vertex AI location"),
        "{err}"
    );
    config.region = Some("europe-west4".into());
    config.project = Some("proj-9".into());
    let provider = build_provider_with(&config, &http).expect("a token and a project");
    assert_eq!(provider.id(), "vertex");
    assert_eq!(provider.models()[0].id, "gemini-2.5-pro");
    // A region given to a provider that takes none is refused.
    let mut openai = ProviderConfig::new(ProviderId::OpenAi);
    openai.base_url = Some("http://127.0.0.1:9/v1".into());
    openai.region = Some("eu".into());
    let err = build_provider_with(&openai, &http)
        .err()
        .expect("vertex only");
    assert!(err.to_string().contains("--region"), "{err}");
}

#[tokio::test]
async fn a_given_access_token_is_used_as_is() {
    let server = MockModel::start([gemini::text("ok")]);
    let provider = VertexProvider::new(
        client(&server.url(), "gemini-2.5-pro"),
        "proj-2",
        "global",
        Credentials::access_token("ya29.given-0123456789"),
    );
    assert_eq!(text(&ok_events(run(&provider, request("")).await)), "ok");
    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer ya29.given-0123456789")
    );
    assert!(sent
        .path
        .starts_with("/v1/projects/proj-2/locations/global/publishers/google/"));
}
