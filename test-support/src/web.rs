//! [`DocsServer`]: a web server on 127.0.0.1 (port 0) for the web tools' tests. It serves
//! real documentation pages shipped in `test-support/web/` (an mdBook page of Rust By
//! Example, a rustdoc crate index; both MIT/Apache-2.0, from the Rust documentation), a
//! redirect chain, a page larger than any cap, an image, and two search backends:
//! SearXNG's `GET /search?q=…&format=json` and the generic `POST /api/search` JSON shape
//! that Zero's `web_search` speaks.
//!
//! | path | answer |
//! |---|---|
//! | `/book/hello.html` | the Rust By Example page (`text/html`) |
//! | `/std_detect/index.html` | the rustdoc page (`text/html`) |
//! | `/redirect/N` | `302` to `/redirect/N-1`; `/redirect/0` redirects to `/book/hello.html` |
//! | `/big.txt` | 1 MiB of text (`text/plain`) |
//! | `/red.png` | a 4×4 PNG (`image/png`) |
//! | `/search?q=…&format=json` | SearXNG results for the query |
//! | `POST /api/search` | `{"results": [...]}` (the generic shape) |
//! | `/moved-away` | `302` to another host (`http://localhost:<port>/book/hello.html`) |
//! | `/` | an index of the pages above (`text/html`, relative links), as a static server lists a directory |
//! | `/local/search?q=…&format=json` | SearXNG results that are this server's pages (for zut's `web_open`) |
//! | `/html/?q=…` | a DuckDuckGo HTML results page of this server's pages (`q=captcha`: a challenge; `q=nothing`: no results) |
//!
//! Every request is recorded (method, path with query, headers, body).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;

use crate::background::Background;
use crate::request::Request;

/// The directory of the shipped pages.
pub fn pages_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("web")
}

/// A shipped file's bytes.
///
/// # Panics
///
/// When the file is missing: the fixtures ship with the crate.
pub fn page(name: &str) -> Vec<u8> {
    let path = pages_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The 4×4 red PNG the server serves at `/red.png`.
pub fn red_png() -> Vec<u8> {
    page("red-4x4.png")
}

/// The running server; dropping it stops it.
pub struct DocsServer {
    server: Background,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl DocsServer {
    /// Starts the server.
    ///
    /// # Panics
    ///
    /// When 127.0.0.1:0 cannot be bound or a fixture is missing.
    pub fn start() -> Self {
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let pages = Arc::new(Pages {
            book: Bytes::from(page("rust-by-example-hello.html")),
            rustdoc: Bytes::from(page("std_detect-index.html")),
            png: Bytes::from(red_png()),
        });
        let shared = requests.clone();
        let server = Background::spawn("docs-server", move |stream| {
            let (requests, pages) = (shared.clone(), pages.clone());
            async move {
                let service = hyper::service::service_fn(move |request| {
                    handle(request, requests.clone(), pages.clone())
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            }
        });
        Self { server, requests }
    }

    /// `http://127.0.0.1:<port>` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The requests served so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

struct Pages {
    book: Bytes,
    rustdoc: Bytes,
    png: Bytes,
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: u16, content_type: &str, body: Bytes) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(body).boxed());
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

fn redirect(to: &str) -> hyper::Response<Body> {
    let mut response = reply(302, "text/plain", Bytes::from_static(b"moved"));
    if let Ok(value) = hyper::header::HeaderValue::from_str(to) {
        response
            .headers_mut()
            .insert(hyper::header::LOCATION, value);
    }
    response
}

/// The value of `key` in a query string, percent-decoded (`+` as a space).
fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| crate::oauth::percent_decode(v))
    })
}

fn search_results(query: &str) -> serde_json::Value {
    serde_json::json!([
        {
            "title": format!("Hello World - Rust By Example ({query})"),
            "url": "https://doc.rust-lang.org/rust-by-example/hello.html",
            "content": "This is the source code of the traditional Hello World program.",
            "score": 0.93
        },
        {
            "title": "std_detect - Rust",
            "url": "https://doc.rust-lang.org/std_detect/index.html",
            "content": "Run-time feature detection for the Rust standard library.",
            "score": 0.5
        },
        {"title": "no url", "url": "", "content": "dropped"}
    ])
}

/// The pages `/` lists, with their titles.
const LISTED: &[(&str, &str)] = &[
    ("book/hello.html", "Hello World - Rust By Example"),
    ("std_detect/index.html", "std_detect - Rust"),
    ("big.txt", "1 MiB of text"),
    ("red.png", "A red PNG"),
    ("redirect/2", "Two redirects to Hello World"),
];

/// `/`: the listed pages, as a static file server lists a directory.
fn index_page() -> String {
    let items: String = LISTED
        .iter()
        .map(|(path, title)| format!("<li><a href=\"{path}\">{path}</a> — {title}</li>\n"))
        .collect();
    format!(
        "<!DOCTYPE html>\n<html><head><title>Index of /</title></head>\n<body><h1>Index of /</h1>\n<ul>\n{items}</ul></body></html>\n"
    )
}

/// SearXNG results that are this server's own pages (`host` as the request named it): the
/// index first, then the listed pages.
fn local_results(host: &str) -> serde_json::Value {
    let index = serde_json::json!({
        "title": "Index of /",
        "url": format!("http://{host}/"),
        "content": "The documentation pages this server ships.",
    });
    let pages = LISTED.iter().map(|(path, title)| {
        serde_json::json!({
            "title": title,
            "url": format!("http://{host}/{path}"),
            "content": format!("{title}, served at /{path}."),
        })
    });
    serde_json::Value::Array(std::iter::once(index).chain(pages).collect())
}

/// `text` percent-encoded for a query value.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/html/?q=…`: DuckDuckGo's HTML results page as it is shaped (a `result` element per hit,
/// its `result__a` link through DuckDuckGo's `/l/?uddg=` redirect, a `result__snippet`),
/// listing this server's pages; a challenge for `captcha`, no results for `nothing`.
fn duckduckgo_page(host: &str, query: &str) -> String {
    match query {
        "captcha" => {
            return "<html><body><form id=\"challenge-form\">Unfortunately, bots use DuckDuckGo too. Please complete the following challenge.</form></body></html>".to_string()
        }
        "nothing" => {
            return "<html><body><div class=\"no-results\">No results found.</div></body></html>"
                .to_string()
        }
        _ => {}
    }
    let results: String = std::iter::once(("", "Index of /"))
        .chain(LISTED.iter().copied())
        .map(|(path, title)| {
            let target = percent_encode(&format!("http://{host}/{path}"));
            format!(
                "<div class=\"result results_links results_links_deep web-result \">\n\
                 <div class=\"links_main links_deep result__body\">\n\
                 <h2 class=\"result__title\"><a rel=\"nofollow\" class=\"result__a\" href=\"//duckduckgo.com/l/?uddg={target}&amp;rut=0a1b\">{title}</a></h2>\n\
                 <a class=\"result__snippet\" href=\"//duckduckgo.com/l/?uddg={target}\"><b>{title}</b> , served at /{path} .</a>\n\
                 </div></div>\n"
            )
        })
        .collect();
    format!(
        "<!DOCTYPE html>\n<html><head><title>{query} at DuckDuckGo</title><script>var x = 1;</script></head>\n<body><div id=\"links\" class=\"results\">\n{results}</div></body></html>\n"
    )
}

async fn handle(
    request: hyper::Request<Incoming>,
    requests: Arc<Mutex<Vec<Request>>>,
    pages: Arc<Pages>,
) -> Result<hyper::Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or("").to_string();
    let host = parts
        .headers
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Request {
            method: parts.method.to_string(),
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| path.clone(), |p| p.to_string()),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: body.clone(),
        });
    let response = match path.as_str() {
        "/book/hello.html" => reply(200, "text/html; charset=utf-8", pages.book.clone()),
        "/std_detect/index.html" => reply(200, "text/html", pages.rustdoc.clone()),
        "/red.png" => reply(200, "image/png", pages.png.clone()),
        "/big.txt" => reply(
            200,
            "text/plain; charset=utf-8",
            Bytes::from("0123456789abcdef\n".repeat(64 * 1024)),
        ),
        "/moved-away" => {
            let port = host.rsplit(':').next().unwrap_or("80");
            redirect(&format!("http://localhost:{port}/book/hello.html"))
        }
        "/" => reply(200, "text/html; charset=utf-8", Bytes::from(index_page())),
        "/html/" => {
            let q = query_value(&query, "q").unwrap_or_default();
            let page = duckduckgo_page(&host, &q);
            reply(200, "text/html; charset=UTF-8", Bytes::from(page))
        }
        "/local/search" => {
            let q = query_value(&query, "q").unwrap_or_default();
            let answer = serde_json::json!({"query": q, "results": local_results(&host)});
            reply(200, "application/json", Bytes::from(answer.to_string()))
        }
        "/search" => {
            let q = query_value(&query, "q").unwrap_or_default();
            match query_value(&query, "format").as_deref() {
                Some("json") => reply(
                    200,
                    "application/json",
                    Bytes::from(
                        serde_json::json!({"query": q, "results": search_results(&q)}).to_string(),
                    ),
                ),
                _ => reply(
                    403,
                    "text/plain",
                    Bytes::from_static(b"format=json is required"),
                ),
            }
        }
        "/api/search" if parts.method == hyper::Method::POST => {
            let asked: serde_json::Value =
                serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            let q = asked["query"].as_str().unwrap_or("").to_string();
            let results: Vec<serde_json::Value> = search_results(&q)
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    serde_json::json!({"title": r["title"], "url": r["url"], "snippet": r["content"], "score": r["score"].to_string()})
                })
                .collect();
            reply(
                200,
                "application/json",
                Bytes::from(serde_json::json!({ "results": results }).to_string()),
            )
        }
        other => match other.strip_prefix("/redirect/").map(str::parse::<u32>) {
            Some(Ok(0)) => redirect("/book/hello.html"),
            Some(Ok(n)) => redirect(&format!("/redirect/{}", n - 1)),
            _ => reply(404, "text/html", Bytes::from_static(b"<h1>Not Found</h1>")),
        },
    };
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        assert_eq!(
            query_value("q=hello+world%21&format=json", "q").as_deref(),
            Some("hello world!")
        );
        assert_eq!(query_value("a=1", "q"), None);
    }
}
