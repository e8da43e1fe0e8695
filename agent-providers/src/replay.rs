//! Decoding of recorded streaming response bodies, without HTTP.
//!
//! [`decode_stream`] runs a body through exactly the code a live request uses once the
//! response headers are in: the server-sent-event parser, the API's decoder and the driver
//! that queues provider events. It exists for benchmarks (decoding throughput from recorded
//! streams) and for hosts that replay captured streams.

use agent_core::provider::ProviderStream;
use bytes::Bytes;
use futures::Stream;

use crate::sse::replay;

/// The streaming wire format of a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamFormat {
    /// OpenAI Chat Completions `chat.completion.chunk` events (and compatible servers).
    OpenAiChat,
    /// OpenAI Responses API events.
    OpenAiResponses,
    /// Anthropic Messages API events.
    Anthropic,
}

/// Decodes an SSE response body, delivered as `chunks` (as they would arrive from the
/// socket), into provider events. No request is made and no HTTP client is built, so the
/// stream carries no `RequestStarted`/`ResponseStarted` events; errors and the terminal
/// events are those of a live request.
pub fn decode_stream<S>(format: StreamFormat, chunks: S) -> ProviderStream
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    match format {
        StreamFormat::OpenAiChat => {
            replay(crate::openai::chat::streaming::ChatDecoder::new(), chunks)
        }
        StreamFormat::OpenAiResponses => replay(
            crate::openai::responses::streaming::ResponsesDecoder::new(),
            chunks,
        ),
        StreamFormat::Anthropic => replay(
            crate::anthropic::streaming::AnthropicDecoder::new(None),
            chunks,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::provider::{ProviderEvent, ProviderStop};
    use futures::StreamExt;

    /// A body split mid-event must decode like the whole body.
    #[tokio::test]
    async fn chat_body_in_odd_chunks_decodes() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let chunks: Vec<Bytes> = body
            .as_bytes()
            .chunks(7)
            .map(Bytes::copy_from_slice)
            .collect();
        let events: Vec<_> = decode_stream(StreamFormat::OpenAiChat, futures::stream::iter(chunks))
            .collect()
            .await;
        let mut text = String::new();
        let mut stop = None;
        for event in events {
            match event.expect("no error") {
                ProviderEvent::TextDelta(t) => text.push_str(&t),
                ProviderEvent::Stop(s) => stop = Some(s),
                _ => {}
            }
        }
        assert_eq!(text, "Hello");
        assert_eq!(stop, Some(ProviderStop::EndTurn));
    }

    #[tokio::test]
    async fn truncated_anthropic_body_is_an_error() {
        let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n";
        let events: Vec<_> = decode_stream(
            StreamFormat::Anthropic,
            futures::stream::iter([Bytes::from_static(body.as_bytes())]),
        )
        .collect()
        .await;
        assert!(events.iter().any(Result::is_err), "{events:?}");
    }
}
