//! What a server answers: replies in sequence, replies chosen by what a request contains,
//! or a function of the request; and the journal of requests received.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::request::Request;

type Matcher = Box<dyn Fn(&Request) -> bool + Send>;
type Responder<R> = Box<dyn FnMut(&Request, &[Request]) -> R + Send>;

/// Replies played one after the other; the last one repeats.
struct Sequence<R> {
    replies: Vec<R>,
    served: usize,
}

impl<R: Clone> Sequence<R> {
    fn new(replies: Vec<R>) -> Self {
        Self { replies, served: 0 }
    }

    fn next(&mut self) -> Option<R> {
        let index = self.served.min(self.replies.len().checked_sub(1)?);
        self.served += 1;
        self.replies.get(index).cloned()
    }
}

/// How a server picks the reply to each request.
///
/// - A sequence (`[a, b, c]` or a `Vec`, converted with `into()`): one reply per request
///   in order, the last one repeating.
/// - Routes ([`Script::route`]): the first route whose predicate accepts the request plays
///   its own sequence (so "the first request naming `case-429` gets a 429, later ones get
///   text"); requests no route accepts play the [`Script::fallback`] sequence.
/// - A function ([`Script::respond`]) of the request and the requests before it.
///
/// A request nothing answers gets HTTP 500 `no scripted reply` from the mock server and a
/// closed connection from the fault server.
pub struct Script<R> {
    routes: Vec<(Matcher, Sequence<R>)>,
    fallback: Sequence<R>,
    responder: Option<Responder<R>>,
}

impl<R: Clone> Default for Script<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Clone> Script<R> {
    /// A script that answers nothing yet.
    pub fn new() -> Self {
        Self {
            routes: Vec::new(),
            fallback: Sequence::new(Vec::new()),
            responder: None,
        }
    }

    /// Plays `replies` in order to the requests `when` accepts.
    pub fn route(
        mut self,
        when: impl Fn(&Request) -> bool + Send + 'static,
        replies: impl IntoIterator<Item = R>,
    ) -> Self {
        self.routes
            .push((Box::new(when), Sequence::new(replies.into_iter().collect())));
        self
    }

    /// Plays `replies` in order to the requests no route accepts.
    pub fn fallback(mut self, replies: impl IntoIterator<Item = R>) -> Self {
        self.fallback = Sequence::new(replies.into_iter().collect());
        self
    }

    /// Answers every request with `f(request, earlier requests)`.
    pub fn respond(f: impl FnMut(&Request, &[Request]) -> R + Send + 'static) -> Self {
        Self {
            responder: Some(Box::new(f)),
            ..Self::new()
        }
    }

    /// The reply to `request`, given the requests received before it.
    pub(crate) fn pick(&mut self, request: &Request, earlier: &[Request]) -> Option<R> {
        if let Some(responder) = &mut self.responder {
            return Some(responder(request, earlier));
        }
        match self.routes.iter_mut().find(|(when, _)| when(request)) {
            Some((_, replies)) => replies.next(),
            None => self.fallback.next(),
        }
    }
}

impl<R: Clone> From<Vec<R>> for Script<R> {
    fn from(replies: Vec<R>) -> Self {
        Self::new().fallback(replies)
    }
}

impl<R: Clone, const N: usize> From<[R; N]> for Script<R> {
    fn from(replies: [R; N]) -> Self {
        Self::new().fallback(replies)
    }
}

/// The requests a server received, with waits for them.
#[derive(Default)]
pub(crate) struct Journal {
    requests: Mutex<Vec<Request>>,
    arrived: Condvar,
    notify: tokio::sync::Notify,
}

impl Journal {
    fn lock(&self) -> MutexGuard<'_, Vec<Request>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `request` and picks its reply from `script`.
    pub(crate) fn record<R: Clone>(
        &self,
        request: Request,
        script: &Mutex<Script<R>>,
    ) -> Option<R> {
        let reply = {
            let mut requests = self.lock();
            let reply = script
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pick(&request, &requests);
            requests.push(request);
            reply
        };
        self.arrived.notify_all();
        self.notify.notify_waiters();
        reply
    }

    pub(crate) fn snapshot(&self) -> Vec<Request> {
        self.lock().clone()
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    /// Waits (blocking the thread) until `n` requests have arrived or `timeout` passes.
    pub(crate) fn wait_blocking(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<Request>, Timeout> {
        let deadline = Instant::now() + timeout;
        let mut requests = self.lock();
        while requests.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Timeout {
                    wanted: n,
                    received: requests.clone(),
                });
            }
            requests = self
                .arrived
                .wait_timeout(requests, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(requests.clone())
    }

    /// Waits (asynchronously, on any runtime) until `n` requests have arrived or `timeout`
    /// passes.
    pub(crate) async fn wait(&self, n: usize, timeout: Duration) -> Result<Vec<Request>, Timeout> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Created before the check, so an arrival in between still wakes it.
            let arrived = self.notify.notified();
            {
                let requests = self.lock();
                if requests.len() >= n {
                    return Ok(requests.clone());
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Err(Timeout {
                    wanted: n,
                    received: self.snapshot(),
                });
            }
        }
    }
}

/// A wait for requests ran out of time; holds those that did arrive.
#[derive(Debug, Clone)]
pub struct Timeout {
    /// How many requests were awaited.
    pub wanted: usize,
    /// The requests that arrived in time.
    pub received: Vec<Request>,
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "waited for {} request(s), {} arrived",
            self.wanted,
            self.received.len()
        )
    }
}

impl std::error::Error for Timeout {}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Request {
        Request {
            method: "POST".into(),
            path: "/".into(),
            headers: vec![],
            body: bytes::Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    #[test]
    fn sequences_repeat_their_last_reply_and_routes_keep_their_own_count() {
        let mut script: Script<u32> = Script::new()
            .route(|r| r.contains("case-429"), [429, 200])
            .fallback([1, 2]);
        let picks: Vec<Option<u32>> = ["x", "case-429", "y", "case-429", "z", "case-429"]
            .iter()
            .map(|b| script.pick(&req(b), &[]))
            .collect();
        assert_eq!(
            picks,
            [Some(1), Some(429), Some(2), Some(200), Some(2), Some(200)]
        );
        let mut empty: Script<u32> = Script::new();
        assert_eq!(empty.pick(&req("x"), &[]), None);
    }

    #[test]
    fn a_responder_sees_the_earlier_requests() {
        let mut script = Script::respond(|r: &Request, earlier: &[Request]| {
            earlier.iter().filter(|e| e.body == r.body).count()
        });
        let first = script.pick(&req("a"), &[]);
        let second = script.pick(&req("a"), &[req("a"), req("b")]);
        assert_eq!((first, second), (Some(0), Some(1)));
    }
}
