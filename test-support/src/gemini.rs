//! Google's model APIs as they answer: Gemini `streamGenerateContent?alt=sse` streams (the
//! Gemini API's and Vertex AI's), Google's error bodies, and the OAuth token endpoint a
//! service account's signed JWT is exchanged at.
//!
//! Each chunk is a `GenerateContentResponse` (`candidates[0].content.parts`, `usageMetadata`,
//! `modelVersion`, `responseId`) framed as `data: …\r\n\r\n`, as Google frames it; the last
//! chunk carries `finishReason` and the final usage. Function calls come whole, one part
//! each, with the `thoughtSignature` Gemini 3 attaches to them.

use serde_json::{json, Value};

use crate::sse::{Sse, Vendor};
use crate::Reply;

/// A Gemini stream under construction.
#[derive(Debug, Clone)]
pub struct Stream {
    model: String,
    frames: Vec<String>,
}

impl Default for Stream {
    fn default() -> Self {
        Self::new()
    }
}

impl Stream {
    /// A stream from `gemini-test`.
    pub fn new() -> Self {
        Self {
            model: "gemini-test".into(),
            frames: Vec::new(),
        }
    }

    /// One chunk holding `parts` (and, when given, `finishReason` and usage).
    fn chunk(&mut self, parts: Vec<Value>, finish: Option<&str>, usage: Option<Value>) {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        let mut chunk = json!({
            "candidates": [candidate],
            "modelVersion": self.model,
            "responseId": "resp-test-1",
        });
        if let Some(usage) = usage {
            chunk["usageMetadata"] = usage;
        }
        self.frames.push(format!("data: {chunk}\r\n\r\n"));
    }

    /// A thought summary part (`thought: true`).
    pub fn thought(mut self, text: &str) -> Self {
        self.chunk(vec![json!({"text": text, "thought": true})], None, None);
        self
    }

    /// Answer text, one chunk per word.
    pub fn text(mut self, text: &str) -> Self {
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        for word in words {
            self.chunk(vec![json!({"text": word})], None, None);
        }
        self
    }

    /// A text part carrying a thought signature.
    pub fn signed_text(mut self, text: &str, signature: &str) -> Self {
        self.chunk(
            vec![json!({"text": text, "thoughtSignature": signature})],
            None,
            None,
        );
        self
    }

    /// One chunk of function calls `(name, args, signature)`, as Gemini sends parallel calls
    /// (only the first signed, as Gemini 3 does).
    pub fn calls(mut self, calls: &[(&str, Value, Option<&str>)]) -> Self {
        let parts = calls
            .iter()
            .map(|(name, args, signature)| {
                let mut part = json!({"functionCall": {"name": name, "args": args}});
                if let Some(signature) = signature {
                    part["thoughtSignature"] = json!(signature);
                }
                part
            })
            .collect();
        self.chunk(parts, None, None);
        self
    }

    /// Ends the stream: a chunk with an empty text part, `finishReason` and
    /// `usageMetadata` (prompt, candidates, thoughts, cached tokens).
    pub fn finish(mut self, reason: &str, usage: (u64, u64, u64, u64)) -> Sse {
        let (prompt, candidates, thoughts, cached) = usage;
        let mut meta = json!({
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates + thoughts,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        });
        if thoughts > 0 {
            meta["thoughtsTokenCount"] = json!(thoughts);
        }
        if cached > 0 {
            meta["cachedContentTokenCount"] = json!(cached);
        }
        self.chunk(vec![json!({"text": ""})], Some(reason), Some(meta));
        self.sse()
    }

    /// The stream as it is so far (cut before its `finishReason`).
    pub fn sse(self) -> Sse {
        Sse {
            vendor: Vendor::Other,
            frames: self.frames,
        }
    }
}

/// A complete text answer (usage 10 in, 5 out).
pub fn text(answer: &str) -> Reply {
    Reply::sse(Stream::new().text(answer).finish("STOP", (10, 5, 0, 0)))
}

/// A complete turn calling `name` with `args` (a JSON object), signed.
pub fn call(name: &str, args: Value) -> Reply {
    Reply::sse(
        Stream::new()
            .calls(&[(name, args, Some("sig-call-1"))])
            .finish("STOP", (10, 5, 0, 0)),
    )
}

/// Google's error body for HTTP `code` with status name `status`
/// (`{"error": {"code", "message", "status"}}`).
pub fn error(code: u16, status: &str, message: &str) -> Reply {
    Reply::json(
        code,
        json!({"error": {"code": code, "message": message, "status": status}}),
    )
}

/// 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` detail asking for `delay` (`"1s"`), as the
/// Gemini API answers a rate limit.
pub fn rate_limited(delay: &str) -> Reply {
    Reply::json(
        429,
        json!({"error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                 "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
            ]
        }}),
    )
}

/// 400 `INVALID_ARGUMENT` with the `API_KEY_INVALID` reason: how the Gemini API refuses a
/// bad key.
pub fn invalid_key() -> Reply {
    Reply::json(
        400,
        json!({"error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                         "metadata": {"service": "generativelanguage.googleapis.com"}}]
        }}),
    )
}

/// 503 `UNAVAILABLE`: the model is overloaded.
pub fn overloaded() -> Reply {
    error(
        503,
        "UNAVAILABLE",
        "The model is overloaded. Please try again later.",
    )
}

/// The OAuth token endpoint's answer to a JWT bearer grant (RFC 7523).
pub fn token(access_token: &str, expires_in: u64) -> Reply {
    Reply::json(
        200,
        json!({"access_token": access_token, "expires_in": expires_in, "token_type": "Bearer"}),
    )
}

/// The token endpoint refusing a grant (`invalid_grant`), as Google's does for a bad
/// signature or an unknown key.
pub fn token_refused(description: &str) -> Reply {
    Reply::json(
        400,
        json!({"error": "invalid_grant", "error_description": description}),
    )
}
