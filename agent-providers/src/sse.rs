//! The request driver shared by the HTTP providers: attempts and retries, the idle
//! timeout, and the response body as server-sent events (read by [`parser`]) or, for
//! servers that ignore `stream: true`, as one JSON document.

mod parser;

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agent_core::provider::{ProviderError, ProviderErrorKind, ProviderEvent, ProviderStream};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Future, Stream, StreamExt};

use crate::http::{error_chain, send_error, status_error, truncate, HttpClient, PreparedRequest};
use parser::{EventTooLarge, SseParser};

/// Largest error body read from a failed response.
const MAX_ERROR_BODY: usize = 1 << 20;
/// Largest non-streaming JSON body accepted.
const MAX_JSON_BODY: usize = 64 << 20;
/// Largest server-sent event accepted (its lines without terminators); a server that streams
/// one endless event would otherwise grow memory without bound.
const MAX_SSE_EVENT: usize = 16 << 20;

/// Turns one API's response into provider events.
pub(crate) trait Decoder: Send + 'static {
    /// One server-sent event (`event` is `message` when the frame named none).
    fn event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError>;

    /// A whole JSON body (a server that answered without streaming).
    fn body(&mut self, body: &str, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError>;

    /// True once the terminal event has been seen; the rest of the body is not read.
    fn done(&self) -> bool;

    /// The body ended (or [`Decoder::done`] turned true): emit what is buffered (usage,
    /// stop), or fail when the stream ended before the response was complete.
    fn finish(&mut self, out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError>;

    /// Whether a 2xx body is a binary stream (Amazon's event-stream framing) that
    /// [`Decoder::bytes`] reads, rather than server-sent events or JSON.
    fn binary(&self) -> bool {
        false
    }

    /// The next chunk of a binary body, as it arrived.
    fn bytes(&mut self, _chunk: &[u8], _out: &mut Vec<ProviderEvent>) -> Result<(), ProviderError> {
        Ok(())
    }
}

/// A decode failure with the offending data attached.
pub(crate) fn decode_error(what: &str, err: impl std::fmt::Display, raw: &str) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Decode, format!("{what}: {err}"))
        .retryable(false)
        .with_raw(truncate(raw, 8000))
}

/// The error for a stream that ended before its terminal event.
pub(crate) fn truncated_stream(what: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Network,
        format!("the response stream ended before {what}"),
    )
}

/// Why reading a response body failed.
#[derive(Debug)]
enum BodyError {
    Transport(reqwest::Error),
    Idle(Duration),
    EventTooLarge(usize),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(err) => f.write_str(&error_chain(err)),
            Self::Idle(after) => write!(f, "no data for {:.1} s", after.as_secs_f64()),
            Self::EventTooLarge(limit) => write!(f, "an event exceeded {limit} bytes"),
        }
    }
}

impl BodyError {
    fn into_provider_error(self) -> ProviderError {
        match self {
            Self::Idle(after) => ProviderError::new(
                ProviderErrorKind::Timeout,
                format!(
                    "the response stream was idle for {:.1} s (idle timeout)",
                    after.as_secs_f64()
                ),
            ),
            Self::Transport(err) => ProviderError::new(
                ProviderErrorKind::Network,
                format!("the response stream broke: {}", error_chain(&err)),
            ),
            Self::EventTooLarge(limit) => ProviderError::new(
                ProviderErrorKind::Decode,
                format!("a server-sent event exceeded {limit} bytes"),
            )
            .retryable(false),
        }
    }
}

/// A body stream that fails with [`BodyError::Idle`] when no chunk arrives in time.
struct IdleBody {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    timeout: Duration,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl IdleBody {
    fn new(response: reqwest::Response, timeout: Duration) -> Self {
        Self {
            inner: response.bytes_stream().boxed(),
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

impl Stream for IdleBody {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(item)) => {
                let deadline = tokio::time::Instant::now() + self.timeout;
                self.sleep.as_mut().reset(deadline);
                Poll::Ready(Some(item.map_err(BodyError::Transport)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::Idle(self.timeout)))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// A response body's chunks.
type Body = BoxStream<'static, Result<Bytes, BodyError>>;

enum Phase {
    /// Announce attempt `n`, then send it.
    Attempt(u32),
    /// Send attempt `n`.
    Send(u32),
    /// Wait, then start attempt `n`.
    Wait(u32, Duration),
    /// Look at the first bytes of a 2xx body to tell SSE from plain JSON.
    Sniff(IdleBody),
    /// Read server-sent events.
    Sse(Body, SseParser),
    /// Read a whole JSON body; the bytes so far.
    Json(IdleBody, Vec<u8>),
    /// Hand a binary body's chunks to the decoder.
    Binary(IdleBody),
    /// Nothing more to yield once the queue is empty.
    Finished,
}

struct Driver<D> {
    http: Arc<HttpClient>,
    request: Arc<PreparedRequest>,
    decoder: D,
    queue: VecDeque<Result<ProviderEvent, ProviderError>>,
    /// The decoder's output for one chunk (reused).
    out: Vec<ProviderEvent>,
    phase: Phase,
}

/// Streams one request: attempts with retries before the response starts, then the
/// decoded body. Dropping the stream cancels the request.
pub(crate) fn drive<D: Decoder>(
    http: Arc<HttpClient>,
    request: Result<PreparedRequest, ProviderError>,
    decoder: D,
) -> ProviderStream {
    let request = match request {
        Ok(request) => Arc::new(request),
        Err(err) => return futures::stream::iter([Err(err)]).boxed(),
    };
    let driver = Driver {
        http,
        request,
        decoder,
        queue: VecDeque::new(),
        out: Vec::new(),
        phase: Phase::Attempt(1),
    };
    futures::stream::unfold(driver, |mut driver| async move {
        let item = driver.next_item().await?;
        Some((item, driver))
    })
    .boxed()
}

/// Decodes an already-received SSE body (`chunks` as they would come off the socket) with
/// the same event parser, decoder and driver as a live request, without any HTTP.
pub(crate) fn replay<D, S>(decoder: D, chunks: S) -> ProviderStream
where
    D: Decoder,
    S: Stream<Item = Bytes> + Send + 'static,
{
    let body = chunks.map(Ok::<Bytes, BodyError>).boxed();
    let request = PreparedRequest {
        url: String::new(),
        headers: Default::default(),
        body: Bytes::new(),
        secrets: Vec::new(),
        refine: None,
    };
    let driver = Driver {
        http: Arc::new(HttpClient::new(Default::default())),
        request: Arc::new(request),
        decoder,
        queue: VecDeque::new(),
        out: Vec::new(),
        phase: Phase::Sse(body, SseParser::new(MAX_SSE_EVENT)),
    };
    futures::stream::unfold(driver, |mut driver| async move {
        let item = driver.next_item().await?;
        Some((item, driver))
    })
    .boxed()
}

impl<D: Decoder> Driver<D> {
    async fn next_item(&mut self) -> Option<Result<ProviderEvent, ProviderError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if let Err(err) = item {
                    self.queue.clear();
                    self.phase = Phase::Finished;
                    return Some(Err(self.scrub(err)));
                }
                return Some(item);
            }
            let max_attempts = self.http.config.max_attempts();
            match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Attempt(attempt) => {
                    self.queue.push_back(Ok(ProviderEvent::RequestStarted {
                        attempt,
                        max_attempts,
                    }));
                    self.phase = Phase::Send(attempt);
                }
                Phase::Send(attempt) => match send(&self.http, &self.request).await {
                    Ok(response) => {
                        self.queue.push_back(Ok(ProviderEvent::ResponseStarted));
                        self.phase =
                            Phase::Sniff(IdleBody::new(response, self.http.config.idle_timeout));
                    }
                    Err(err) if err.retryable && attempt < max_attempts => {
                        let delay = self.http.config.retry_delay(attempt, &err);
                        tracing::debug!(
                            attempt,
                            max_attempts,
                            delay_ms = delay.as_millis() as u64,
                            error = %self.request.scrub(err.message.clone()),
                            "provider request failed; retrying"
                        );
                        self.queue.push_back(Ok(ProviderEvent::RetryScheduled {
                            attempt: attempt + 1,
                            max_attempts,
                            delay,
                        }));
                        self.phase = Phase::Wait(attempt + 1, delay);
                    }
                    Err(err) => self.queue.push_back(Err(err)),
                },
                Phase::Wait(attempt, delay) => {
                    tokio::time::sleep(delay).await;
                    self.phase = Phase::Attempt(attempt);
                }
                Phase::Sniff(body) if self.decoder.binary() => self.phase = Phase::Binary(body),
                Phase::Binary(mut body) => match body.next().await {
                    Some(Ok(chunk)) => {
                        let result = self.decoder.bytes(&chunk, &mut self.out);
                        self.queue.extend(self.out.drain(..).map(Ok));
                        match result {
                            Err(err) => self.queue.push_back(Err(err)),
                            Ok(()) if self.decoder.done() => self.finish(),
                            Ok(()) => self.phase = Phase::Binary(body),
                        }
                    }
                    Some(Err(err)) => self.queue.push_back(Err(err.into_provider_error())),
                    None => self.finish(),
                },
                Phase::Sniff(mut body) => match body.next().await {
                    Some(Ok(chunk)) => match chunk.iter().find(|b| !b.is_ascii_whitespace()) {
                        None => self.phase = Phase::Sniff(body),
                        Some(b'{') | Some(b'[') => {
                            self.phase = Phase::Json(body, chunk.to_vec());
                        }
                        Some(_) => {
                            let mut parser = SseParser::new(MAX_SSE_EVENT);
                            let fed = self.events(&mut parser, &chunk);
                            self.fed(fed, body.boxed(), parser);
                        }
                    },
                    Some(Err(err)) => self.queue.push_back(Err(err.into_provider_error())),
                    None => self.finish(),
                },
                Phase::Sse(mut body, mut parser) => match body.next().await {
                    Some(Ok(chunk)) => {
                        let fed = self.events(&mut parser, &chunk);
                        self.fed(fed, body, parser);
                    }
                    Some(Err(err)) => self.queue.push_back(Err(err.into_provider_error())),
                    None => self.finish(),
                },
                Phase::Json(mut body, mut buf) => match body.next().await {
                    Some(Ok(chunk)) => {
                        if buf.len() + chunk.len() > MAX_JSON_BODY {
                            self.queue.push_back(Err(ProviderError::new(
                                ProviderErrorKind::Decode,
                                "the response body is too large",
                            )
                            .retryable(false)));
                        } else {
                            buf.extend_from_slice(&chunk);
                            self.phase = Phase::Json(body, buf);
                        }
                    }
                    Some(Err(err)) => self.queue.push_back(Err(err.into_provider_error())),
                    None => {
                        let text = String::from_utf8_lossy(&buf);
                        let mut out = Vec::new();
                        let result = self.decoder.body(&text, &mut out);
                        self.queue.extend(out.into_iter().map(Ok));
                        match result {
                            Ok(()) => self.finish(),
                            Err(err) => self.queue.push_back(Err(err)),
                        }
                    }
                },
            }
        }
    }

    /// Decodes the events `chunk` completes, queueing what they yield, until the decoder
    /// fails or is done: `Ok(true)` when the body should be read on.
    fn events(&mut self, parser: &mut SseParser, chunk: &[u8]) -> Result<bool, ProviderError> {
        let (decoder, out) = (&mut self.decoder, &mut self.out);
        let mut failed = None;
        let fed = parser.feed(chunk, |event, data| {
            if let Err(err) = decoder.event(event, data, out) {
                failed = Some(err);
                return ControlFlow::Break(());
            }
            match decoder.done() {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        });
        self.queue.extend(self.out.drain(..).map(Ok));
        match (failed, fed) {
            (Some(err), _) => Err(err),
            (None, Err(EventTooLarge(limit))) => {
                Err(BodyError::EventTooLarge(limit).into_provider_error())
            }
            (None, Ok(flow)) => Ok(flow.is_continue()),
        }
    }

    /// Goes on after a chunk's events: reads the body on, finishes, or queues the error.
    fn fed(&mut self, fed: Result<bool, ProviderError>, body: Body, parser: SseParser) {
        match fed {
            Ok(true) => self.phase = Phase::Sse(body, parser),
            Ok(false) => self.finish(),
            Err(err) => self.queue.push_back(Err(err)),
        }
    }

    /// Flushes the decoder at the end of the body.
    fn finish(&mut self) {
        let mut out = Vec::new();
        let result = self.decoder.finish(&mut out);
        self.queue.extend(out.into_iter().map(Ok));
        if let Err(err) = result {
            self.queue.push_back(Err(err));
        }
        self.phase = Phase::Finished;
    }

    fn scrub(&self, mut err: ProviderError) -> ProviderError {
        err.message = self.request.scrub(err.message);
        err.raw = err.raw.map(|raw| self.request.scrub(raw));
        err
    }
}

/// One attempt: the response when it is 2xx, else the typed error.
async fn send(
    http: &HttpClient,
    request: &PreparedRequest,
) -> Result<reqwest::Response, ProviderError> {
    let client = http.client()?;
    let builder = client
        .post(&request.url)
        .headers(request.headers.clone())
        .body(request.body.clone());
    let idle = http.config.idle_timeout;
    let response = match tokio::time::timeout(idle, builder.send()).await {
        Err(_) => {
            return Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                format!(
                    "no response within {:.1} s (idle timeout)",
                    idle.as_secs_f64()
                ),
            ))
        }
        Ok(Err(err)) => return Err(send_error(&err)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let mut body = IdleBody::new(response, idle);
    let mut buf = Vec::new();
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(chunk) => {
                buf.extend_from_slice(&chunk);
                if buf.len() > MAX_ERROR_BODY {
                    break;
                }
            }
            // The status says enough; a broken error body only loses the details.
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let err = status_error(status.as_u16(), &headers, &text);
    Err(match request.refine {
        Some(refine) => refine(err, &headers, &text),
        None => err,
    })
}
