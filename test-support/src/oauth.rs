//! An MCP server behind OAuth, with its own authorization server, on 127.0.0.1 (port 0):
//! what every front end's tests of MCP OAuth log in to.
//!
//! - `POST /mcp` needs `Authorization: Bearer <a token it issued, not expired>`; otherwise
//!   `401` with `WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource/mcp"`.
//!   It answers MCP in JSON (no event streams): `initialize`, `tools/list` (one read-only
//!   tool, `whoami`) and `tools/call` (`whoami` answers `authorized as <client id>`);
//!   notifications get `202`; `GET /mcp` gets `405`.
//! - RFC 9728 resource metadata at `/.well-known/oauth-protected-resource/mcp`, RFC 8414
//!   metadata at `/.well-known/oauth-authorization-server`, dynamic registration at
//!   `/register`, `/authorize` redirecting straight to the client's `redirect_uri` with a
//!   code (as a browser that is already logged in would), `/token` for the
//!   `authorization_code` (PKCE verifier required) and `refresh_token` grants.
//!
//! [`Behaviour`] makes it misbehave the ways a client must survive, and [`OAuthServer`]
//! counts what clients asked for.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{json, Value};

use crate::background::Background;

/// How the server behaves; the default is a well-behaved one.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// `expires_in` of the access tokens it issues (seconds).
    pub expires_in: u64,
    /// Its authorization-server metadata is not JSON.
    pub malformed_metadata: bool,
    /// Its token endpoint answers `500` to every grant.
    pub failing_token_endpoint: bool,
    /// It refuses refresh tokens (`invalid_grant`).
    pub refuse_refresh: bool,
    /// `/authorize` redirects with a `state` other than the client's.
    pub wrong_state: bool,
    /// `/authorize` answers with a page and never redirects (no callback comes).
    pub no_redirect: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            expires_in: 3600,
            malformed_metadata: false,
            failing_token_endpoint: false,
            refuse_refresh: false,
            wrong_state: false,
            no_redirect: false,
        }
    }
}

/// What clients asked for, so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// `/authorize` requests.
    pub authorizations: usize,
    /// `/token` requests with `grant_type=authorization_code`.
    pub code_grants: usize,
    /// `/token` requests with `grant_type=refresh_token`.
    pub refresh_grants: usize,
    /// `/register` requests.
    pub registrations: usize,
    /// `POST /mcp` requests that carried a valid token.
    pub authorized_requests: usize,
    /// `POST /mcp` requests answered `401`.
    pub refused_requests: usize,
}

#[derive(Default)]
struct State {
    counts: Counts,
    /// Issued access tokens: expiry (Unix seconds) and client id.
    access: HashMap<String, (u64, String)>,
    /// Issued refresh tokens: client id.
    refresh: HashMap<String, String>,
    /// Authorization codes: client id.
    codes: HashMap<String, String>,
}

struct Shared {
    behaviour: Behaviour,
    state: Mutex<State>,
    next: AtomicU64,
    base: Mutex<String>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn base(&self) -> String {
        self.base.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The running server; stops when dropped.
pub struct OAuthServer {
    server: Background,
    shared: Arc<Shared>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `application/x-www-form-urlencoded` pairs (also a query string).
pub fn form_pairs(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name), percent_decode(value))
        })
        .collect()
}

/// A form or query component decoded: `+` is a space, `%XX` a byte (a bad escape stays as is).
pub(crate) fn percent_decode(part: &str) -> String {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl OAuthServer {
    /// Starts a well-behaved server.
    pub fn start() -> Self {
        Self::with(Behaviour::default())
    }

    /// Starts a server that behaves as `behaviour` says.
    pub fn with(behaviour: Behaviour) -> Self {
        let shared = Arc::new(Shared {
            behaviour,
            state: Mutex::default(),
            next: AtomicU64::new(0),
            base: Mutex::new(String::new()),
        });
        let serving = shared.clone();
        let server = Background::spawn("oauth-mcp", move |stream| {
            let shared = serving.clone();
            async move {
                let service =
                    hyper::service::service_fn(move |request| handle(request, shared.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }
        });
        *shared.base.lock().unwrap_or_else(|e| e.into_inner()) =
            format!("http://127.0.0.1:{}", server.addr.port());
        Self { server, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base())
    }

    /// What clients asked for so far.
    pub fn counts(&self) -> Counts {
        self.shared.state().counts.clone()
    }

    /// Every access and refresh token issued so far (to check none leaked).
    pub fn issued_tokens(&self) -> Vec<String> {
        let state = self.shared.state();
        state
            .access
            .keys()
            .chain(state.refresh.keys())
            .cloned()
            .collect()
    }

    /// Makes every access token issued so far expired (their refresh tokens still work).
    pub fn expire_access_tokens(&self) {
        for (expiry, _) in self.shared.state().access.values_mut() {
            *expiry = 0;
        }
    }
}

type Body = Full<Bytes>;

fn reply(status: u16, content_type: &str, body: impl Into<Bytes>) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(body.into()));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

fn json_reply(status: u16, value: Value) -> hyper::Response<Body> {
    reply(status, "application/json", value.to_string())
}

async fn handle(
    request: hyper::Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<hyper::Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let query = parts.uri.query().unwrap_or("").to_string();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let base = shared.base();
    let behaviour = &shared.behaviour;
    let response = match (parts.method.as_str(), parts.uri.path()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => json_reply(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => match behaviour.malformed_metadata {
            true => reply(200, "application/json", "{\"issuer\": "),
            false => json_reply(
                200,
                json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"]
                }),
            ),
        },
        ("POST", "/register") => {
            shared.state().counts.registrations += 1;
            let request: Value = serde_json::from_str(&body).unwrap_or_default();
            json_reply(
                201,
                json!({
                    "client_id": shared.next("client"),
                    "redirect_uris": request["redirect_uris"],
                    "token_endpoint_auth_method": "none"
                }),
            )
        }
        ("GET", "/authorize") => {
            shared.state().counts.authorizations += 1;
            let params = form_pairs(&query);
            let client = params.get("client_id").cloned().unwrap_or_default();
            let redirect = params.get("redirect_uri").cloned().unwrap_or_default();
            let state = match behaviour.wrong_state {
                true => "not-the-clients-state".to_string(),
                false => params.get("state").cloned().unwrap_or_default(),
            };
            let has_pkce = params.get("code_challenge_method").map(String::as_str) == Some("S256")
                && params.contains_key("code_challenge");
            if behaviour.no_redirect || !has_pkce {
                reply(200, "text/html", "<p>Log in</p>")
            } else {
                let code = shared.next("code");
                shared.state().codes.insert(code.clone(), client);
                let location = format!(
                    "{redirect}?code={code}&state={}",
                    state
                        .replace('%', "%25")
                        .replace('&', "%26")
                        .replace('+', "%2B")
                );
                let mut response = reply(302, "text/plain", "");
                if let Ok(value) = hyper::header::HeaderValue::from_str(&location) {
                    response
                        .headers_mut()
                        .insert(hyper::header::LOCATION, value);
                }
                response
            }
        }
        ("POST", "/token") => token(&shared, &form_pairs(&body)),
        ("POST", "/mcp") => mcp(&shared, &header("authorization"), &body),
        ("GET", "/mcp") => reply(405, "text/plain", "Method Not Allowed"),
        _ => reply(404, "text/plain", "Not Found"),
    };
    Ok(response)
}

fn token(shared: &Shared, params: &HashMap<String, String>) -> hyper::Response<Body> {
    let behaviour = &shared.behaviour;
    let grant = params.get("grant_type").map(String::as_str).unwrap_or("");
    match grant {
        "authorization_code" => shared.state().counts.code_grants += 1,
        "refresh_token" => shared.state().counts.refresh_grants += 1,
        _ => {}
    }
    if behaviour.failing_token_endpoint {
        return json_reply(
            500,
            json!({"error": "server_error", "error_description": "the token service is down"}),
        );
    }
    let refused = |description: &str| {
        json_reply(
            400,
            json!({"error": "invalid_grant", "error_description": description}),
        )
    };
    let client = match grant {
        "authorization_code" => {
            if !params.contains_key("code_verifier") {
                return refused("PKCE code_verifier missing");
            }
            let code = params.get("code").cloned().unwrap_or_default();
            match shared.state().codes.remove(&code) {
                Some(client) => client,
                None => return refused("unknown code"),
            }
        }
        "refresh_token" => {
            if behaviour.refuse_refresh {
                return refused("refresh token revoked");
            }
            let token = params.get("refresh_token").cloned().unwrap_or_default();
            match shared.state().refresh.get(&token) {
                Some(client) => client.clone(),
                None => return refused("unknown refresh token"),
            }
        }
        _ => {
            return json_reply(400, json!({"error": "unsupported_grant_type"}));
        }
    };
    let access = shared.next("access-token-secret");
    let refresh = shared.next("refresh-token-secret");
    {
        let mut state = shared.state();
        state.access.insert(
            access.clone(),
            (now() + behaviour.expires_in, client.clone()),
        );
        state.refresh.insert(refresh.clone(), client);
    }
    json_reply(
        200,
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": behaviour.expires_in,
            "refresh_token": refresh
        }),
    )
}

fn mcp(shared: &Shared, authorization: &str, body: &str) -> hyper::Response<Body> {
    let token = authorization
        .strip_prefix("Bearer ")
        .unwrap_or("")
        .trim()
        .to_string();
    let client = {
        let state = shared.state();
        state
            .access
            .get(&token)
            .filter(|(expiry, _)| *expiry > now())
            .map(|(_, client)| client.clone())
    };
    let Some(client) = client else {
        shared.state().counts.refused_requests += 1;
        let mut response = json_reply(
            401,
            json!({"error": "invalid_token", "error_description": "authorization required"}),
        );
        let challenge = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            shared.base()
        );
        if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(hyper::header::WWW_AUTHENTICATE, value);
        }
        return response;
    };
    shared.state().counts.authorized_requests += 1;
    let message: Value = serde_json::from_str(body).unwrap_or_default();
    let Some(id) = message.get("id").cloned() else {
        return reply(202, "text/plain", "");
    };
    let result = match message["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test-server", "version": "1.0.0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says which OAuth client is calling.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }]}),
        "tools/call" => {
            json!({"content": [{"type": "text", "text": format!("authorized as {client}")}]})
        }
        _ => json!({}),
    };
    json_reply(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The `$BROWSER` of a front end's tests: `curl`, following the authorization endpoint's
/// redirect to the client's callback as a browser would; a [`Skip`](crate::component::Skip)
/// without curl (a failure with `AGENT_SDK_CURL=required`, as `.ci/run` sets it).
pub fn curl_browser() -> Result<String, crate::component::Skip> {
    let curl = crate::component::on_path("curl").ok_or_else(|| {
        crate::component::Skip::new(
            crate::component::CURL_REQUIRED,
            "curl, the OAuth tests' browser",
            "curl is not on PATH",
            "install curl",
        )
    })?;
    Ok(format!(
        "{} -fsSL --max-time 20 -o /dev/null %s",
        curl.display()
    ))
}
