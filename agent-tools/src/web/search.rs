//! `web_search {query, limit?, domains?}` over a configured backend, as Zero configures it:
//! `ZERO_WEBSEARCH_BASE_URL` (required; without it the tool is not offered),
//! `ZERO_WEBSEARCH_API_KEY` (optional bearer token) and `ZERO_WEBSEARCH_PROVIDER` (`searxng`
//! for SearXNG's `GET /search?q=&format=json`; any other value is forwarded to the generic
//! backend, which takes `POST {"query","limit","provider"?}` and answers `[{title,url,
//! snippet,score?}]` or `{"results": [...]}`).
//!
//! zut's backend, DuckDuckGo's HTML results page ([`SearchBackend::duckduckgo`]), is one
//! more shape ([`SearchProvider::DuckDuckGoHtml`]); no variable selects it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_core::{async_trait, SideEffect, Tool, ToolContext, ToolError, ToolOutput};
use reqwest::Url;
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error_chain;
use crate::common::{parse_args, schema_for, Config, ToolsConfig};
use crate::scrub::finish_output;

/// Results returned when the call gives no limit.
const DEFAULT_LIMIT: usize = 5;
/// The most results a call gets.
const MAX_LIMIT: usize = 10;
/// Timeout of one search.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a backend's answer read.
const BODY_LIMIT: usize = 256 * 1024;
/// Redirects followed (same host and scheme only).
const REDIRECTS: usize = 5;

/// The shape of the backend's API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchProvider {
    /// The generic JSON backend (`POST {"query","limit","provider"?}`), with the provider
    /// name it is told, if any.
    Generic(Option<String>),
    /// A SearXNG instance (`GET {base}/search?q=&format=json`).
    Searxng,
    /// DuckDuckGo's HTML results page (`GET {base}?q=`, answered with `text/html`): zut's
    /// backend ([`SearchBackend::duckduckgo`]).
    DuckDuckGoHtml,
}

/// A configured search backend. The API key is a secret: it is never printed.
#[derive(Clone)]
pub struct SearchBackend {
    base_url: String,
    api_key: Option<SecretString>,
    provider: SearchProvider,
}

impl std::fmt::Debug for SearchBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchBackend")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("provider", &self.provider)
            .finish()
    }
}

impl SearchBackend {
    /// A backend at `base_url` speaking `provider`'s API.
    pub fn new(base_url: impl Into<String>, provider: SearchProvider) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            provider,
        }
    }

    /// zut's backend: DuckDuckGo's HTML results page at its fixed address
    /// ([`DUCKDUCKGO_HTML`](super::DUCKDUCKGO_HTML)).
    pub fn duckduckgo() -> Self {
        Self::new(super::DUCKDUCKGO_HTML, SearchProvider::DuckDuckGoHtml)
    }

    /// Sends `key` as a bearer token.
    #[must_use = "returns the changed value"]
    pub fn api_key(mut self, key: SecretString) -> Self {
        self.api_key = Some(key);
        self
    }

    /// The backend Zero's variables configure, if `ZERO_WEBSEARCH_BASE_URL` is set.
    pub fn from_env() -> Option<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`SearchBackend::from_env`] with the variables read through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |name| {
            lookup(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let base_url = get("ZERO_WEBSEARCH_BASE_URL")?;
        let provider = match get("ZERO_WEBSEARCH_PROVIDER") {
            Some(p) if p.eq_ignore_ascii_case("searxng") => SearchProvider::Searxng,
            other => SearchProvider::Generic(other),
        };
        let mut backend = Self::new(base_url, provider);
        if let Some(key) = get("ZERO_WEBSEARCH_API_KEY") {
            agent_core::secrets::register_secret(&key);
            backend.api_key = Some(SecretString::from(key));
        }
        Some(backend)
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The API's shape.
    pub fn provider(&self) -> &SearchProvider {
        &self.provider
    }

    /// The backend's name in a sentence ("DuckDuckGo HTML", "SearXNG", or the generic
    /// backend's provider name, else "the search backend").
    pub(crate) fn label(&self) -> String {
        match &self.provider {
            SearchProvider::DuckDuckGoHtml => "DuckDuckGo HTML".to_string(),
            SearchProvider::Searxng => "SearXNG".to_string(),
            SearchProvider::Generic(Some(name)) => name.clone(),
            SearchProvider::Generic(None) => "the search backend".to_string(),
        }
    }

    /// The backend's name in an error ("DuckDuckGo", as zut words them; else [`label`]).
    ///
    /// [`label`]: Self::label
    pub(crate) fn error_label(&self) -> String {
        match &self.provider {
            SearchProvider::DuckDuckGoHtml => "DuckDuckGo".to_string(),
            _ => self.label(),
        }
    }
}

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebSearchArgs {
    /// Search query.
    pub query: String,
    /// Maximum number of results to return (default 5, at most 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub limit: Option<i64>,
    /// Optional list of allowed hostnames; results outside these hosts are filtered out.
    #[serde(default)]
    pub domains: Option<Vec<String>>,
}

/// Searches the web through the configured backend.
#[derive(Debug, Clone)]
pub struct WebSearch {
    config: Config,
    backend: SearchBackend,
    client: Arc<OnceLock<reqwest::Client>>,
}

impl WebSearch {
    /// The tool for `config`, asking `backend`. No client is built until the first call.
    pub fn new(config: Arc<ToolsConfig>, backend: SearchBackend) -> Self {
        Self {
            config,
            backend,
            client: Arc::default(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        // Redirects stay on the host and scheme asked, so neither the query nor the key
        // goes elsewhere.
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() > REDIRECTS {
                return attempt.error(format!("stopped after {REDIRECTS} redirects"));
            }
            let Some(origin) = attempt.previous().first() else {
                return attempt.follow();
            };
            let (host, scheme) = (attempt.url().host_str(), attempt.url().scheme());
            if host != origin.host_str() {
                let message = format!("refusing cross-host redirect to {:?}", host.unwrap_or(""));
                return attempt.error(message);
            }
            if scheme != origin.scheme() {
                let message = format!(
                    "refusing redirect that changes scheme {:?}→{scheme:?}",
                    origin.scheme()
                );
                return attempt.error(message);
            }
            attempt.follow()
        });
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(super::tls_config()?)
            .redirect(policy)
            .timeout(TIMEOUT)
            .user_agent(concat!("agent-sdk-web-search/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(self.client.get_or_init(|| client))
    }
}

/// One hit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub(crate) title: String,
    pub(crate) url: String,
    pub(crate) snippet: String,
    pub(crate) score: f64,
}

/// What kind of failure a search met (zut's texts tell them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SearchFailure {
    /// The request could not be built or sent, or its body not read.
    Failed,
    /// The request timed out.
    TimedOut,
    /// The backend answered with a status other than 2xx.
    Unavailable,
    /// The answer was not the backend's shape.
    Unparseable,
}

/// A failed search: its kind and the words `web_search` shows.
#[derive(Debug, Clone)]
pub(crate) struct SearchError {
    pub(crate) kind: SearchFailure,
    pub(crate) message: String,
}

impl SearchError {
    fn new(kind: SearchFailure, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

#[derive(Serialize)]
struct GenericRequest<'a> {
    query: &'a str,
    limit: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
}

/// A score given as a number or a numeric string; anything else counts as none.
fn lenient_score<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    let score = match value {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    Ok(score.filter(|s: &f64| s.is_finite()).unwrap_or(0.0))
}

#[derive(Deserialize)]
struct GenericHit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    snippet: String,
    #[serde(default, deserialize_with = "lenient_score")]
    score: f64,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum GenericAnswer {
    Bare(Vec<GenericHit>),
    Wrapped { results: Vec<GenericHit> },
}

#[derive(Deserialize)]
struct SearxngAnswer {
    #[serde(default)]
    results: Vec<SearxngHit>,
}

#[derive(Deserialize)]
struct SearxngHit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
    #[serde(default, deserialize_with = "lenient_score")]
    score: f64,
}

fn canonical_host(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    let host = match raw.contains("://") {
        true => Url::parse(raw).ok()?.host_str()?.to_string(),
        false => raw.split(['/', '?', '#']).next()?.to_string(),
    };
    let host = host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    let host = host.strip_prefix("www.").unwrap_or(host);
    (!host.is_empty() && !host.contains(char::is_whitespace)).then(|| host.to_string())
}

fn format_hits(hits: &[Hit]) -> String {
    let mut lines = Vec::with_capacity(hits.len() * 2);
    for (index, hit) in hits.iter().enumerate() {
        let title = match hit.title.trim() {
            "" => "(untitled)",
            title => title,
        };
        let mut header = format!("{}. {title} — {}", index + 1, hit.url.trim());
        let rounded = (hit.score * 100.0).round() / 100.0;
        if rounded >= 0.01 {
            header.push_str(&format!(" — score {rounded:.2}"));
        }
        lines.push(header);
        let snippet = hit.snippet.trim();
        if !snippet.is_empty() {
            lines.push(format!("   {snippet}"));
        }
    }
    lines.join("\n")
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = BODY_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == BODY_LIMIT {
            break;
        }
    }
    Ok(body)
}

impl WebSearch {
    /// The backend this tool asks.
    pub(crate) fn backend(&self) -> &SearchBackend {
        &self.backend
    }

    /// Asks the backend for at most `limit` hits (the generic backend is told the limit and
    /// may answer more).
    pub(crate) async fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, SearchError> {
        use SearchFailure::{Failed, TimedOut, Unavailable, Unparseable};
        let client = self.client().map_err(|e| SearchError::new(Failed, e))?;
        let backend = &self.backend;
        let searxng = backend.provider == SearchProvider::Searxng;
        let html = backend.provider == SearchProvider::DuckDuckGoHtml;
        let label = match &backend.provider {
            SearchProvider::Searxng => "searxng",
            SearchProvider::DuckDuckGoHtml => "duckduckgo",
            SearchProvider::Generic(_) => "search",
        };
        let mut request = match &backend.provider {
            SearchProvider::DuckDuckGoHtml => {
                let mut url = Url::parse(&backend.base_url).map_err(|e| {
                    SearchError::new(Failed, format!("build duckduckgo request: {e}"))
                })?;
                url.set_fragment(None);
                url.set_query(None);
                url.query_pairs_mut().append_pair("q", query);
                client.get(url)
            }
            SearchProvider::Searxng => {
                let mut url = Url::parse(&format!(
                    "{}/search",
                    backend.base_url.trim_end_matches('/')
                ))
                .map_err(|e| SearchError::new(Failed, format!("build searxng request: {e}")))?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                client.get(url)
            }
            SearchProvider::Generic(provider) => {
                let url = Url::parse(&backend.base_url)
                    .map_err(|e| SearchError::new(Failed, format!("build search request: {e}")))?;
                let body = serde_json::to_vec(&GenericRequest {
                    query,
                    limit,
                    provider: provider.as_deref(),
                })
                .map_err(|e| SearchError::new(Failed, format!("encode search request: {e}")))?;
                client
                    .post(url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body)
            }
        };
        let accept = if html {
            "text/html"
        } else {
            "application/json"
        };
        request = request.header(reqwest::header::ACCEPT, accept);
        if let Some(key) = &backend.api_key {
            request = request.bearer_auth(key.expose_secret());
        }
        let response = request.send().await.map_err(|e| {
            let kind = if e.is_timeout() { TimedOut } else { Failed };
            SearchError::new(kind, format!("{label} request failed: {}", error_chain(&e)))
        })?;
        let status = response.status();
        let html_answer = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html"));
        let body = read_body(response).await.map_err(|e| {
            let kind = if e.is_timeout() { TimedOut } else { Failed };
            SearchError::new(kind, format!("read {label} response: {}", error_chain(&e)))
        })?;
        if !status.is_success() {
            // The status only: a body may echo the request (its key included).
            let name = match label {
                "searxng" => "searxng backend",
                "duckduckgo" => "duckduckgo",
                _ => "search backend",
            };
            let message = format!("{name} returned HTTP {}", status.as_u16());
            return Err(SearchError::new(Unavailable, message));
        }
        if html {
            if !html_answer {
                let message = "duckduckgo answered with something other than HTML";
                return Err(SearchError::new(Unavailable, message));
            }
            return match super::duckduckgo::parse(&String::from_utf8_lossy(&body)) {
                Ok(hits) => Ok(hits),
                Err(super::duckduckgo::NoResults::Empty) => Ok(Vec::new()),
                Err(super::duckduckgo::NoResults::Challenge) => Err(SearchError::new(
                    Unavailable,
                    "duckduckgo answered with a challenge instead of results",
                )),
                Err(super::duckduckgo::NoResults::Unparseable) => Err(SearchError::new(
                    Unparseable,
                    "duckduckgo answered with a page that holds no results",
                )),
            };
        }
        if searxng {
            let answer: SearxngAnswer = serde_json::from_slice(&body).map_err(|e| {
                SearchError::new(Unparseable, format!("decode searxng response: {e}"))
            })?;
            Ok(answer
                .results
                .into_iter()
                .filter(|h| !h.url.trim().is_empty())
                .take(limit)
                .map(|h| Hit {
                    title: h.title,
                    url: h.url,
                    snippet: h.content,
                    score: h.score,
                })
                .collect())
        } else {
            if body.iter().all(u8::is_ascii_whitespace) {
                return Err(SearchError::new(
                    Unparseable,
                    "empty search backend response",
                ));
            }
            let answer: GenericAnswer = serde_json::from_slice(&body)
                .map_err(|e| SearchError::new(Unparseable, format!("parse search results: {e}")))?;
            let hits = match answer {
                GenericAnswer::Bare(hits) | GenericAnswer::Wrapped { results: hits } => hits,
            };
            Ok(hits
                .into_iter()
                .map(|h| Hit {
                    title: h.title,
                    url: h.url,
                    snippet: h.snippet,
                    score: h.score,
                })
                .collect())
        }
    }
}

#[async_trait]
impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> &str {
        "Search the web for a query and return ranked results (title, URL, snippet). \
         Complements web_fetch, which retrieves a single known URL."
    }

    fn parameters(&self) -> Value {
        schema_for::<WebSearchArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Network
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WebSearchArgs = parse_args(self.name(), args)?;
        let invalid =
            |e: &str| ToolError::Failed(format!("Error: Invalid arguments for web_search: {e}"));
        if args.query.trim().is_empty() {
            return Err(invalid("query is required"));
        }
        let limit = match args.limit {
            None => DEFAULT_LIMIT,
            Some(n) if n < 1 => return Err(invalid("limit must be at least 1")),
            Some(n) => usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
        };
        let domains: Option<Vec<String>> = args
            .domains
            .map(|d| d.iter().filter_map(|h| canonical_host(h)).collect());
        if domains.as_ref().is_some_and(Vec::is_empty) {
            return Err(ToolError::Failed(
                "Error: web_search 'domains' argument was provided but contained no valid hostnames; remove the argument or pass valid hostnames".to_string(),
            ));
        }
        let mut hits = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Cancelled("the search was cancelled".to_string()))
            }
            hits = self.search(&args.query, limit) => hits.map_err(|e| {
                ToolError::Failed(format!("Error performing web search: {}", e.message))
            })?,
        };
        if let Some(domains) = &domains {
            if !hits.is_empty() {
                hits.retain(|h| {
                    canonical_host(&h.url)
                        .filter(|_| h.url.contains("://"))
                        .is_some_and(|host| domains.contains(&host))
                });
                if hits.is_empty() {
                    return Err(ToolError::Failed(format!(
                        "Error: no web_search results matched domains={domains:?}; loosen the allowlist or remove the domains argument"
                    )));
                }
            }
        }
        if hits.is_empty() {
            let output = ToolOutput::text(format!("No results for query: {}", args.query));
            return Ok(finish_output(output, self.config.output_cap));
        }
        hits.truncate(limit);
        let output = ToolOutput::text(format_hits(&hits));
        Ok(finish_output(output, self.config.output_cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_comes_from_zeros_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(SearchBackend::from_lookup(env(&[])).is_none());
        assert!(SearchBackend::from_lookup(env(&[("ZERO_WEBSEARCH_BASE_URL", "  ")])).is_none());
        let searx = SearchBackend::from_lookup(env(&[
            ("ZERO_WEBSEARCH_BASE_URL", "http://127.0.0.1:8888"),
            ("ZERO_WEBSEARCH_PROVIDER", "SearXNG"),
            ("ZERO_WEBSEARCH_API_KEY", "sk-search-secret-0123456789"),
        ]))
        .expect("configured");
        assert_eq!(searx.provider(), &SearchProvider::Searxng);
        assert!(!format!("{searx:?}").contains("sk-search-secret"));
        let generic = SearchBackend::from_lookup(env(&[
            ("ZERO_WEBSEARCH_BASE_URL", "https://search.example/api"),
            ("ZERO_WEBSEARCH_PROVIDER", "exa"),
        ]))
        .expect("configured");
        assert_eq!(
            generic.provider(),
            &SearchProvider::Generic(Some("exa".into()))
        );
    }

    #[test]
    fn hits_render_as_zeros_numbered_list() {
        let hits = [
            Hit {
                title: "Serde".into(),
                url: "https://serde.rs".into(),
                snippet: "A framework".into(),
                score: 0.914,
            },
            Hit {
                title: " ".into(),
                url: "https://x.test".into(),
                snippet: String::new(),
                score: 0.001,
            },
        ];
        assert_eq!(
            format_hits(&hits),
            "1. Serde — https://serde.rs — score 0.91\n   A framework\n2. (untitled) — https://x.test"
        );
        assert_eq!(
            canonical_host("https://WWW.React.dev:443/x").as_deref(),
            Some("react.dev")
        );
    }
}
