//! Amazon Bedrock as it answers: ConverseStream bodies in Amazon's binary event-stream
//! framing (written here by hand: prelude, string headers, JSON payload, CRC-32s), and
//! AWS's error answers (`x-amzn-errortype` with a `{"message": …}` body).
//!
//! Each message carries `:event-type`, `:content-type: application/json` and
//! `:message-type: event` (or `:exception-type` and `:message-type: exception`), as the
//! service sends them; payloads carry the `p` padding field Bedrock adds.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::Reply;

/// CRC-32 (IEEE 802.3, the framing's checksum).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// One event-stream message with string headers and `payload`.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(name.len() as u8);
        head.extend_from_slice(name.as_bytes());
        head.push(7); // string
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(head.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let message_crc = crc32(&out);
    out.extend_from_slice(&message_crc.to_be_bytes());
    out
}

/// An event message of type `event` with JSON `payload`.
pub fn event(event: &str, mut payload: Value) -> Vec<u8> {
    payload["p"] = json!("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ");
    frame(
        &[
            (":event-type", event),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An exception message inside the stream (`throttlingException`, …).
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// A ConverseStream answer under construction; it opens with `messageStart`.
#[derive(Debug, Clone)]
pub struct Stream {
    frames: Vec<Vec<u8>>,
    blocks: u64,
}

impl Default for Stream {
    fn default() -> Self {
        Self::new()
    }
}

impl Stream {
    /// A stream opened by `messageStart`.
    pub fn new() -> Self {
        Self {
            frames: vec![event("messageStart", json!({"role": "assistant"}))],
            blocks: 0,
        }
    }

    fn next_block(&mut self) -> u64 {
        self.blocks += 1;
        self.blocks - 1
    }

    /// A text block, one delta per word.
    pub fn text(mut self, text: &str) -> Self {
        let index = self.next_block();
        for word in text.split_inclusive(' ') {
            self.frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"text": word}}),
            ));
        }
        self.frames.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        self
    }

    /// A reasoning block with its signature.
    pub fn reasoning(mut self, text: &str, signature: &str) -> Self {
        let index = self.next_block();
        for word in text.split_inclusive(' ') {
            self.frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"text": word}}}),
            ));
        }
        self.frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": signature}}}),
        ));
        self.frames.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        self
    }

    /// A tool use block whose input JSON text streams in two halves.
    pub fn tool_use(mut self, id: &str, name: &str, input: &str) -> Self {
        let index = self.next_block();
        self.frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
        ));
        let mid = (0..=input.len() / 2)
            .rev()
            .find(|i| input.is_char_boundary(*i))
            .unwrap_or(0);
        for part in [&input[..mid], &input[mid..]] {
            if !part.is_empty() {
                self.frames.push(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": part}}}),
                ));
            }
        }
        self.frames.push(event(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        self
    }

    /// Ends the stream: `messageStop` with `reason`, then `metadata` with usage (input,
    /// output, cache read, cache write).
    pub fn stop(mut self, reason: &str, usage: (u64, u64, u64, u64)) -> Self {
        let (input, output, read, write) = usage;
        self.frames
            .push(event("messageStop", json!({"stopReason": reason})));
        self.frames.push(event(
            "metadata",
            json!({"usage": {"inputTokens": input, "outputTokens": output,
                             "totalTokens": input + output + read + write,
                             "cacheReadInputTokens": read, "cacheWriteInputTokens": write},
                   "metrics": {"latencyMs": 321}}),
        ));
        self
    }

    /// Adds a raw frame (an exception, a corrupted frame).
    pub fn push(mut self, frame: Vec<u8>) -> Self {
        self.frames.push(frame);
        self
    }

    /// The frames so far.
    pub fn frames(&self) -> &[Vec<u8>] {
        &self.frames
    }

    /// The answer: 200, `application/vnd.amazon.eventstream`, one chunk per frame.
    pub fn reply(self) -> Reply {
        reply(self.frames)
    }
}

/// A 200 event-stream answer of these frames, one chunk each.
pub fn reply(frames: Vec<Vec<u8>>) -> Reply {
    Reply {
        status: 200,
        headers: vec![
            (
                "content-type".into(),
                "application/vnd.amazon.eventstream".into(),
            ),
            (
                "x-amzn-requestid".into(),
                "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into(),
            ),
        ],
        chunks: frames.into_iter().map(Bytes::from).collect(),
    }
}

/// A complete text answer (usage 10 in, 5 out).
pub fn text(answer: &str) -> Reply {
    Stream::new()
        .text(answer)
        .stop("end_turn", (10, 5, 0, 0))
        .reply()
}

/// A complete turn calling `name` as `id` with the input JSON text `input`.
pub fn tool_use(id: &str, name: &str, input: &str) -> Reply {
    Stream::new()
        .tool_use(id, name, input)
        .stop("tool_use", (10, 5, 0, 0))
        .reply()
}

/// An AWS error answer: `status`, `x-amzn-errortype: KIND:…`, `{"message": …}`.
pub fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, json!({ "message": message })).header(
        "x-amzn-errortype",
        &format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    )
}

/// 403 `ExpiredTokenException`, as AWS refuses expired temporary credentials.
pub fn expired_token() -> Reply {
    error(
        403,
        "ExpiredTokenException",
        "The security token included in the request is expired",
    )
}

/// 403 `InvalidSignatureException`, as AWS refuses a signature it does not compute.
pub fn invalid_signature() -> Reply {
    error(
        403,
        "InvalidSignatureException",
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_ieee_checksum() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }
}
