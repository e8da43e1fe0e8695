//! The authorization flow's HTTP requests: metadata `GET`s and `POST`s to the registration and
//! token endpoints, each bounded in time and size. Bodies of successful token answers never
//! reach an error message.

use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;

/// Bound on one request of the flow.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest body read from an authorization server.
const MAX_BODY: usize = 1 << 20;
/// Longest piece of an error answer quoted in a message.
const MAX_QUOTED: usize = 300;

/// What a metadata `GET` found.
#[derive(Debug)]
pub(crate) enum Fetched<T> {
    /// A document of the expected shape.
    Found(T),
    /// Nothing there (a 4xx answer, or an HTML page): the next candidate is tried.
    Missing,
    /// A JSON answer that is not the expected document (why).
    Malformed(String),
    /// The request failed or the server erred (why).
    Failed(String),
}

/// Reads at most [`MAX_BODY`] bytes of `response`.
async fn body(response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("reading the answer: {e}"))?;
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(format!("the answer is larger than {MAX_BODY} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

fn is_html(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/html"))
}

/// `GET url` for a JSON metadata document.
pub(crate) async fn get_json<T: DeserializeOwned>(http: &reqwest::Client, url: &str) -> Fetched<T> {
    let request = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(REQUEST_TIMEOUT);
    let response = match request.send().await {
        Ok(response) => response,
        Err(err) => return Fetched::Failed(crate::client::error_chain(&err)),
    };
    let status = response.status();
    if status.is_client_error() || status.is_redirection() || is_html(&response) {
        return Fetched::Missing;
    }
    if !status.is_success() {
        return Fetched::Failed(format!("HTTP {status}"));
    }
    let bytes = match body(response).await {
        Ok(bytes) => bytes,
        Err(why) => return Fetched::Failed(why),
    };
    match serde_json::from_slice::<T>(&bytes) {
        Ok(value) => Fetched::Found(value),
        Err(err) => Fetched::Malformed(err.to_string()),
    }
}

/// An OAuth error answer (`{"error", "error_description"}`), or the start of whatever came.
pub(crate) fn error_text(status: reqwest::StatusCode, bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct OAuthErrorBody {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    let detail = match serde_json::from_slice::<OAuthErrorBody>(bytes) {
        Ok(body) => match body.error_description {
            Some(description) if !description.is_empty() => {
                format!("{}: {description}", body.error)
            }
            _ => body.error,
        },
        Err(_) => String::from_utf8_lossy(bytes).trim().to_string(),
    };
    let detail: String = detail.chars().take(MAX_QUOTED).collect();
    match detail.is_empty() {
        true => format!("HTTP {status}"),
        false => format!("HTTP {status} ({detail})"),
    }
}

/// Sends a `POST` and reads its answer: the status and body, or why it failed.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
) -> Result<(reqwest::StatusCode, Vec<u8>), String> {
    let response = request
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|e| crate::client::error_chain(&e))?;
    let status = response.status();
    let bytes = body(response).await?;
    Ok((status, bytes))
}

/// `application/x-www-form-urlencoded` text of `pairs`.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    serializer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_are_quoted_briefly() {
        let status = reqwest::StatusCode::BAD_REQUEST;
        assert_eq!(
            error_text(
                status,
                br#"{"error":"invalid_grant","error_description":"expired"}"#
            ),
            "HTTP 400 Bad Request (invalid_grant: expired)"
        );
        assert_eq!(
            error_text(status, br#"{"error":"invalid_client"}"#),
            "HTTP 400 Bad Request (invalid_client)"
        );
        assert_eq!(error_text(status, b""), "HTTP 400 Bad Request");
        let long = "x".repeat(1000);
        assert!(error_text(status, long.as_bytes()).len() < 400);
        assert_eq!(form(&[("a", "b c"), ("d", "&=")]), "a=b+c&d=%26%3D");
    }
}
