//! Fault cases named in the conversation: a test's prompt says `case-<name>`, and the model
//! server (test-support's [`FaultServer`](test_support::FaultServer)) answers by the last
//! such word of the request and by how often that case was asked before in the same round.

#![allow(dead_code)]

use test_support::{Fault, Script};

/// The last `case-<name>` word of a request body (empty when there is none).
pub fn case_of(body: &str) -> String {
    body.rfind("case-")
        .map(|at| {
            body[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the request carries a tool result after the last case word (the model is asked
/// to go on after a tool ran).
pub fn tool_round(body: &str) -> bool {
    let at = body.rfind("case-").unwrap_or(0);
    body[at..].contains("\"role\":\"tool\"")
}

/// A script answering each request with `pick(case, attempt, body)`: the request's case, how
/// many requests of that case and round (first request or after a tool) came before it, and
/// the whole body.
pub fn by_case(pick: fn(&str, usize, &str) -> Fault) -> Script<Fault> {
    Script::respond(move |request, earlier| {
        let body = request.text();
        let key = |body: &str| (case_of(body), tool_round(body));
        let mine = key(&body);
        let attempt = earlier.iter().filter(|e| key(&e.text()) == mine).count();
        pick(&mine.0, attempt, &body)
    })
}
