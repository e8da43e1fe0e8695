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

    /// Whether this Chat Completions request is a model call of sub-agent specialist
    /// `name`'s child: its system prompt (the first message) names `Specialist: <name>`.
    pub fn specialist_call(&self, name: &str) -> bool {
        self.json()["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("Specialist: {name}\n")))
    }

    /// How many model calls came before this Chat Completions request in its transcript
    /// (its `assistant` messages).
    pub fn earlier_calls(&self) -> usize {
        self.json()["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
            .unwrap_or(0)
    }

    /// The background task ids (`task_id: …` lines) in the tool results of this Chat
    /// Completions request, in order, each once.
    pub fn task_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for message in self.json()["messages"].as_array().into_iter().flatten() {
            if message["role"] != "tool" {
                continue;
            }
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            for id in text.lines().filter_map(|l| l.strip_prefix("task_id: ")) {
                if !ids.iter().any(|known| known == id.trim()) {
                    ids.push(id.trim().to_string());
                }
            }
        }
        ids
    }

    /// The tool names this Chat Completions request offered (`tools[].function.name`).
    pub fn offered_tools(&self) -> Vec<String> {
        self.json()["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect()
    }

    /// The content of the `tool` message answering call `id` in this Chat Completions
    /// request (a string as it is, other content as JSON text).
    pub fn tool_message(&self, id: &str) -> Option<String> {
        self.json()["messages"].as_array()?.iter().find_map(|m| {
            (m["role"] == "tool" && m["tool_call_id"] == id).then(|| match &m["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
        })
    }
}
