//! Server-sent event streams as each vendor sends them.
//!
//! [`chat`], [`responses`] and [`anthropic`] build streams event by event with the fields,
//! event names and terminators the real APIs use (ids, `object`, `sequence_number`, `ping`,
//! `[DONE]`, usage placement); [`Sse::raw`] takes any body, e.g. a recorded fixture. These are
//! test fixtures, so they are built with `json!` rather than typed wire structs.

use serde_json::{json, Value};

/// Who encoded a stream; decides the response headers the mock server sends with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// OpenAI (Chat Completions and Responses): `x-request-id`.
    OpenAi,
    /// Anthropic: `request-id`.
    Anthropic,
    /// Any other server (llama.cpp, LiteLLM, a recording): no extra headers.
    Other,
}

/// An event stream: complete SSE frames (each ending in a blank line), sent one per chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Sse {
    /// Who encoded it.
    pub vendor: Vendor,
    /// The frames, each `event: …\ndata: …\n\n` or `data: …\n\n`.
    pub frames: Vec<String>,
}

impl Sse {
    /// A stream from a raw body (a recording, a hand-written stream), one frame per blank
    /// line; text after the last blank line is kept as a final, unterminated piece.
    pub fn raw(body: &str) -> Self {
        Self {
            vendor: Vendor::Other,
            frames: body.split_inclusive("\n\n").map(str::to_string).collect(),
        }
    }

    /// A stream of `data:` frames with these JSON payloads (no `event:` lines).
    pub fn data(payloads: impl IntoIterator<Item = Value>) -> Self {
        Self {
            vendor: Vendor::Other,
            frames: payloads.into_iter().map(|p| frame(None, &p)).collect(),
        }
    }

    /// The whole body.
    pub fn body(&self) -> String {
        self.frames.concat()
    }

    /// Adds a frame at the end (e.g. a broken one).
    pub fn push(mut self, frame: impl Into<String>) -> Self {
        self.frames.push(frame.into());
        self
    }

    /// The stream without its last `n` frames (a stream cut before its terminal events).
    pub fn without_last(mut self, n: usize) -> Self {
        let keep = self.frames.len().saturating_sub(n);
        self.frames.truncate(keep);
        self
    }
}

/// One SSE frame: `event: <name>\n` (when named) and `data: <json>\n\n`.
pub fn frame(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The words of `text` with their leading spaces, as models stream them.
fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, word) in text.split(' ').enumerate() {
        match i {
            0 if word.is_empty() => {}
            0 => out.push(word.to_string()),
            _ => out.push(format!(" {word}")),
        }
    }
    if out.is_empty() && !text.is_empty() {
        out.push(text.to_string());
    }
    out
}

/// OpenAI Chat Completions `chat.completion.chunk` streams.
pub mod chat {
    use super::*;

    /// A Chat Completions stream under construction. It opens with the role chunk
    /// (`{"role":"assistant","content":"","refusal":null}`), as OpenAI sends it.
    #[derive(Debug, Clone)]
    pub struct Stream {
        model: String,
        frames: Vec<String>,
        calls: u64,
    }

    impl Default for Stream {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Stream {
        /// A stream from model `gpt-test`.
        pub fn new() -> Self {
            Self::model("gpt-test")
        }

        /// A stream from `model`.
        pub fn model(model: &str) -> Self {
            let mut stream = Self {
                model: model.to_string(),
                frames: Vec::new(),
                calls: 0,
            };
            stream.chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            );
            stream
        }

        fn chunk(&mut self, delta: Value, finish: Option<&str>) {
            let chunk = json!({
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1_764_000_000,
                "model": self.model,
                "service_tier": "default",
                "system_fingerprint": "fp_test",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                "usage": null,
            });
            self.frames.push(frame(None, &chunk));
        }

        /// Answer text, one chunk per word.
        pub fn text(mut self, text: &str) -> Self {
            for piece in pieces(text) {
                self.chunk(json!({"content": piece}), None);
            }
            self
        }

        /// Answer text in one chunk, as it is (not split into words): a delta a test
        /// expects to see whole.
        pub fn delta(mut self, text: &str) -> Self {
            self.chunk(json!({"content": text}), None);
            self
        }

        /// Reasoning text under `reasoning_content` (DeepSeek, llama.cpp, vLLM), one chunk
        /// per word.
        pub fn reasoning(mut self, text: &str) -> Self {
            for piece in pieces(text) {
                self.chunk(json!({"reasoning_content": piece}), None);
            }
            self
        }

        /// A tool call: a chunk with id, name and empty arguments, then `args` in two halves.
        pub fn tool_call(mut self, id: &str, name: &str, args: &str) -> Self {
            let index = self.calls;
            self.calls += 1;
            self.chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                None,
            );
            let mid = (0..=args.len() / 2)
                .rev()
                .find(|i| args.is_char_boundary(*i))
                .unwrap_or(0);
            for part in [&args[..mid], &args[mid..]] {
                if !part.is_empty() {
                    self.chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                        None,
                    );
                }
            }
            self
        }

        /// The finish chunk (`stop`, `tool_calls`, `length`, `content_filter`), with an
        /// empty delta.
        pub fn finish(mut self, reason: &str) -> Self {
            self.chunk(json!({}), Some(reason));
            self
        }

        /// The usage chunk (`choices: []`), as sent with `stream_options.include_usage`.
        pub fn usage(mut self, prompt: u64, completion: u64, cached: u64) -> Self {
            let chunk = json!({
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1_764_000_000,
                "model": self.model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
                },
            });
            self.frames.push(frame(None, &chunk));
            self
        }

        /// Ends the stream with `data: [DONE]`.
        pub fn done(mut self) -> Sse {
            self.frames.push("data: [DONE]\n\n".to_string());
            self.unfinished()
        }

        /// The stream as it stands, with no finish chunk and no `[DONE]`: the start of a
        /// stream that breaks off (a reset, a cut, a stall).
        pub fn unfinished(self) -> Sse {
            Sse {
                vendor: Vendor::OpenAi,
                frames: self.frames,
            }
        }
    }

    /// A complete text answer with usage.
    pub fn text(answer: &str) -> Sse {
        Stream::new()
            .text(answer)
            .finish("stop")
            .usage(10, 5, 0)
            .done()
    }

    /// A complete turn calling tool `name` with the argument text `args` (call id `call_1`).
    pub fn tool_call(name: &str, args: &str) -> Sse {
        Stream::new()
            .tool_call("call_1", name, args)
            .finish("tool_calls")
            .usage(10, 5, 0)
            .done()
    }
}

/// OpenAI Responses API streams.
pub mod responses {
    use super::*;

    /// A Responses stream under construction; it opens with `response.created` and
    /// `response.in_progress`, and every event carries its `sequence_number`.
    #[derive(Debug, Clone)]
    pub struct Stream {
        model: String,
        frames: Vec<String>,
        output: Vec<Value>,
        sequence: u64,
    }

    impl Default for Stream {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Stream {
        /// A stream from model `gpt-test`.
        pub fn new() -> Self {
            let mut stream = Self {
                model: "gpt-test".into(),
                frames: Vec::new(),
                output: Vec::new(),
                sequence: 0,
            };
            let response = stream.response("in_progress", None);
            stream.event("response.created", json!({"response": response}));
            stream.event("response.in_progress", json!({"response": response}));
            stream
        }

        fn response(&self, status: &str, usage: Option<Value>) -> Value {
            json!({
                "id": "resp_test", "object": "response", "created_at": 1_764_000_000,
                "status": status, "model": self.model, "output": self.output,
                "store": false, "usage": usage,
            })
        }

        fn event(&mut self, kind: &str, mut data: Value) {
            data["type"] = json!(kind);
            data["sequence_number"] = json!(self.sequence);
            self.sequence += 1;
            self.frames.push(frame(Some(kind), &data));
        }

        /// A reasoning item with a summary and `encrypted_content`.
        pub fn reasoning(mut self, summary: &str, encrypted: &str) -> Self {
            let index = self.output.len();
            let id = format!("rs_{index}");
            self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
            );
            self.event(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": 0,
                       "part": {"type": "summary_text", "text": ""}}),
            );
            for piece in pieces(summary) {
                self.event(
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": piece}),
                );
            }
            let item = json!({"id": id, "type": "reasoning", "encrypted_content": encrypted,
                              "summary": [{"type": "summary_text", "text": summary}]});
            self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            );
            self.output.push(item);
            self
        }

        /// An assistant message with `text`, one delta per word.
        pub fn text(mut self, text: &str) -> Self {
            let index = self.output.len();
            let id = format!("msg_{index}");
            self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress",
                       "role": "assistant", "content": []}}),
            );
            self.event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0,
                       "part": {"type": "output_text", "annotations": [], "text": ""}}),
            );
            for piece in pieces(text) {
                self.event(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece, "logprobs": []}),
                );
            }
            self.event(
                "response.output_text.done",
                json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
            );
            let part = json!({"type": "output_text", "annotations": [], "text": text});
            self.event(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
            );
            let item = json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
                              "content": [part]});
            self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            );
            self.output.push(item);
            self
        }

        /// A function call with `call_id`, `name` and the argument text `args`.
        pub fn function_call(mut self, call_id: &str, name: &str, args: &str) -> Self {
            let index = self.output.len();
            let id = format!("fc_{index}");
            self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress",
                       "call_id": call_id, "name": name, "arguments": ""}}),
            );
            self.event(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": args}),
            );
            self.event(
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": index, "arguments": args}),
            );
            let item = json!({"id": id, "type": "function_call", "status": "completed",
                              "call_id": call_id, "name": name, "arguments": args});
            self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            );
            self.output.push(item);
            self
        }

        /// Ends the stream with `response.completed` carrying usage.
        pub fn completed(mut self, input: u64, output: u64, cached: u64) -> Sse {
            let usage = json!({
                "input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + output,
            });
            let response = self.response("completed", Some(usage));
            self.event("response.completed", json!({"response": response}));
            Sse {
                vendor: Vendor::OpenAi,
                frames: self.frames,
            }
        }
    }

    /// A complete text answer with usage.
    pub fn text(answer: &str) -> Sse {
        Stream::new().text(answer).completed(10, 5, 0)
    }

    /// A complete turn calling `name` with `args` (call id `call_1`).
    pub fn function_call(name: &str, args: &str) -> Sse {
        Stream::new()
            .function_call("call_1", name, args)
            .completed(10, 5, 0)
    }
}

/// Anthropic Messages streams.
pub mod anthropic {
    use super::*;

    /// A Messages stream under construction; it opens with `message_start` (carrying the
    /// input usage) and a `ping`, as the API sends them.
    #[derive(Debug, Clone)]
    pub struct Stream {
        frames: Vec<String>,
        blocks: u64,
    }

    impl Stream {
        /// A stream whose `message_start` reports `input_tokens` (and no cache use).
        pub fn new(input_tokens: u64) -> Self {
            let mut stream = Self {
                frames: Vec::new(),
                blocks: 0,
            };
            stream.event(
                "message_start",
                json!({"message": {"id": "msg_test", "type": "message", "role": "assistant",
                       "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
                       "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                                 "cache_read_input_tokens": 0, "output_tokens": 1}}}),
            );
            stream.event("ping", json!({}));
            stream
        }

        fn event(&mut self, kind: &str, mut data: Value) {
            data["type"] = json!(kind);
            self.frames.push(frame(Some(kind), &data));
        }

        fn block(&mut self, start: Value, deltas: Vec<Value>) {
            let index = self.blocks;
            self.blocks += 1;
            self.event(
                "content_block_start",
                json!({"index": index, "content_block": start}),
            );
            for delta in deltas {
                self.event(
                    "content_block_delta",
                    json!({"index": index, "delta": delta}),
                );
            }
            self.event("content_block_stop", json!({"index": index}));
        }

        /// A text block, one delta per word.
        pub fn text(mut self, text: &str) -> Self {
            let deltas = pieces(text)
                .into_iter()
                .map(|t| json!({"type": "text_delta", "text": t}))
                .collect();
            self.block(json!({"type": "text", "text": ""}), deltas);
            self
        }

        /// A thinking block with its signature.
        pub fn thinking(mut self, text: &str, signature: &str) -> Self {
            let mut deltas: Vec<Value> = pieces(text)
                .into_iter()
                .map(|t| json!({"type": "thinking_delta", "thinking": t}))
                .collect();
            deltas.push(json!({"type": "signature_delta", "signature": signature}));
            self.block(
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            );
            self
        }

        /// A `tool_use` block whose input JSON text `input` streams in two halves.
        pub fn tool_use(mut self, id: &str, name: &str, input: &str) -> Self {
            let mid = (0..=input.len() / 2)
                .rev()
                .find(|i| input.is_char_boundary(*i))
                .unwrap_or(0);
            let deltas = [&input[..mid], &input[mid..]]
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            self.block(
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                deltas,
            );
            self
        }

        /// Ends the stream: `message_delta` with `stop_reason` and the output usage, then
        /// `message_stop`.
        pub fn stop(mut self, reason: &str, output_tokens: u64) -> Sse {
            self.event(
                "message_delta",
                json!({"delta": {"stop_reason": reason, "stop_sequence": null},
                       "usage": {"output_tokens": output_tokens}}),
            );
            self.event("message_stop", json!({}));
            Sse {
                vendor: Vendor::Anthropic,
                frames: self.frames,
            }
        }
    }

    /// A complete text answer.
    pub fn text(answer: &str) -> Sse {
        Stream::new(10).text(answer).stop("end_turn", 5)
    }

    /// A complete turn calling `name` with the input JSON text `input` (id `toolu_1`).
    pub fn tool_use(name: &str, input: &str) -> Sse {
        Stream::new(10)
            .tool_use("toolu_1", name, input)
            .stop("tool_use", 5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(sse: &Sse) -> Vec<Value> {
        sse.frames
            .iter()
            .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("json"))
            .collect()
    }

    #[test]
    fn whole_deltas_stay_whole_and_an_unfinished_stream_has_no_terminator() {
        let sse = chat::Stream::new().delta("reset soon").unfinished();
        assert_eq!(sse.vendor, Vendor::OpenAi);
        assert_eq!(sse.frames.len(), 2, "the role chunk and one delta");
        let data = payloads(&sse);
        assert_eq!(data[1]["choices"][0]["delta"]["content"], "reset soon");
        assert!(data
            .iter()
            .all(|d| d["choices"][0]["finish_reason"].is_null()));
        assert!(!sse.body().contains("[DONE]"));
    }

    #[test]
    fn chat_streams_open_with_the_role_and_end_with_done() {
        let sse = chat::text("Hello there");
        assert!(sse.frames.iter().all(|f| f.ends_with("\n\n")));
        assert_eq!(
            sse.frames.last().map(String::as_str),
            Some("data: [DONE]\n\n")
        );
        let data = payloads(&sse);
        assert_eq!(data[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = data
            .iter()
            .filter_map(|d| d["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "Hello there");
        assert_eq!(data.last().expect("usage")["usage"]["total_tokens"], 15);
    }

    #[test]
    fn anthropic_and_responses_streams_name_their_events() {
        let sse = anthropic::tool_use("get_weather", "{\"city\":\"Paris\"}");
        assert!(sse.frames[0].starts_with("event: message_start\n"));
        let input: String = payloads(&sse)
            .iter()
            .filter_map(|d| d["delta"]["partial_json"].as_str())
            .collect();
        assert_eq!(input, "{\"city\":\"Paris\"}");
        let sse = responses::text("ok");
        let data = payloads(&sse);
        let sequence: Vec<u64> = data
            .iter()
            .filter_map(|d| d["sequence_number"].as_u64())
            .collect();
        assert_eq!(sequence, (0..data.len() as u64).collect::<Vec<_>>());
        assert_eq!(
            data.last().expect("completed")["type"],
            "response.completed"
        );
    }

    #[test]
    fn raw_bodies_split_on_blank_lines() {
        let sse = Sse::raw("data: 1\n\ndata: 2\n\ndata: 3");
        assert_eq!(sse.frames, ["data: 1\n\n", "data: 2\n\n", "data: 3"]);
        assert_eq!(sse.body(), "data: 1\n\ndata: 2\n\ndata: 3");
    }
}
