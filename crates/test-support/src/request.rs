//! A request as a server received it.

use bytes::Bytes;
use serde_json::Value;

/// One request the server received: method, path, headers and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in the order received; names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Bytes,
}

impl Request {
    /// The first value of header `name` (compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; [`Value::Null`] when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the body contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        !needle.is_empty()
            && self
                .body
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
    }

    /// The request line and headers as HTTP/1.1 text (`POST /v1/… HTTP/1.1\r\nname: value…`),
    /// as a proxy echoing the request would show them.
    pub fn head(&self) -> String {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        for (name, value) in &self.headers {
            out.push_str(name);
            out.push_str(": ");
            out.push_str(value);
            out.push_str("\r\n");
        }
        out
    }
}
