//! DuckDuckGo's HTML results page, zut's search backend (`packages/agent/tools/web_search.go`):
//! `GET https://html.duckduckgo.com/html/?q=…`, each result an element of class `result`
//! whose link is its `result__a` anchor (else a link in its `h2`, else a `result__title`
//! anchor) and whose snippet is its `result__snippet`; DuckDuckGo's `/l/?uddg=` redirect
//! links are unwrapped to their destination. Parsed with `tl`, the crate's HTML parser.

use reqwest::Url;

use super::markdown::decode_entities;
use super::search::Hit;

/// zut's fixed endpoint.
pub const DUCKDUCKGO_HTML: &str = "https://html.duckduckgo.com/html/";

/// Why a results page gave no results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoResults {
    /// A challenge (a captcha, "unusual traffic") instead of results.
    Challenge,
    /// Neither results nor DuckDuckGo's "no results" marker: not a results page.
    Unparseable,
    /// DuckDuckGo found nothing, or nothing with an http(s) destination.
    Empty,
}

/// Words of a challenge page (zut's `hasWebSearchChallengeMarker`).
const CHALLENGE: &[&str] = &[
    "unusual traffic",
    "automated queries",
    "are you a robot",
    "verify you are human",
    "checking your browser",
    "challenge-form",
    "captcha",
];

/// The hits of a results page, in its order, each destination once.
pub(crate) fn parse(html: &str) -> Result<Vec<Hit>, NoResults> {
    let lower = html.to_lowercase();
    let challenge = CHALLENGE.iter().any(|m| lower.contains(m));
    let Ok(dom) = tl::parse(html, tl::ParserOptions::default()) else {
        return Err(match challenge {
            true => NoResults::Challenge,
            false => NoResults::Unparseable,
        });
    };
    let parser = dom.parser();
    let mut results = Vec::new();
    for handle in dom.children() {
        collect(*handle, parser, &mut results);
    }
    if results.is_empty() {
        let marker = dom.nodes().iter().any(|n| {
            n.as_tag().is_some_and(|t| {
                t.attributes().is_class_member("no-results")
                    || t.attributes().is_class_member("zero_click_wrapper")
            })
        });
        return Err(match () {
            _ if challenge => NoResults::Challenge,
            _ if marker || lower.contains("no results") => NoResults::Empty,
            _ => NoResults::Unparseable,
        });
    }
    let mut hits: Vec<Hit> = Vec::with_capacity(results.len());
    for result in results {
        let Some(tag) = result.get(parser).and_then(tl::Node::as_tag) else {
            continue;
        };
        let Some(url) = title_anchor(tag, parser)
            .and_then(|a| href(a))
            .and_then(|h| destination(&h))
        else {
            continue;
        };
        if hits.iter().any(|h| h.url == url) {
            continue;
        }
        let title = title_anchor(tag, parser)
            .map(|a| text(a, parser))
            .unwrap_or_default();
        let snippet = descendants(tag, parser)
            .find(|t| t.attributes().is_class_member("result__snippet"))
            .map(|s| text(s, parser))
            .unwrap_or_default();
        hits.push(Hit {
            title,
            url,
            snippet,
            score: 0.0,
        });
    }
    match hits.is_empty() {
        true => Err(NoResults::Empty),
        false => Ok(hits),
    }
}

/// The outermost elements of class `result` under `handle`.
fn collect(handle: tl::NodeHandle, parser: &tl::Parser<'_>, out: &mut Vec<tl::NodeHandle>) {
    let Some(tag) = handle.get(parser).and_then(tl::Node::as_tag) else {
        return;
    };
    if tag.attributes().is_class_member("result") {
        out.push(handle);
        return;
    }
    for child in tag.children().top().iter() {
        collect(*child, parser, out);
    }
}

/// The elements under `tag`, in document order.
fn descendants<'p, 'a: 'p>(
    tag: &'p tl::HTMLTag<'a>,
    parser: &'p tl::Parser<'a>,
) -> impl Iterator<Item = &'p tl::HTMLTag<'a>> + 'p {
    tag.children()
        .all(parser)
        .iter()
        .filter_map(tl::Node::as_tag)
}

fn is(tag: &tl::HTMLTag<'_>, name: &str) -> bool {
    tag.name().as_utf8_str().eq_ignore_ascii_case(name)
}

fn href(tag: &tl::HTMLTag<'_>) -> Option<String> {
    let value = tag.attributes().get("href").flatten()?.as_utf8_str();
    let value = decode_entities(value.trim());
    (!value.is_empty()).then_some(value)
}

/// A result's link: its `result__a` anchor, else the first link in an `h2`, else a
/// `result__title` anchor.
fn title_anchor<'p, 'a: 'p>(
    tag: &'p tl::HTMLTag<'a>,
    parser: &'p tl::Parser<'a>,
) -> Option<&'p tl::HTMLTag<'a>> {
    let anchor = |t: &&tl::HTMLTag<'_>| is(t, "a") && href(t).is_some();
    descendants(tag, parser)
        .filter(anchor)
        .find(|a| a.attributes().is_class_member("result__a"))
        .or_else(|| {
            descendants(tag, parser)
                .filter(|t| is(t, "h2"))
                .find_map(|h2| descendants(h2, parser).find(anchor))
        })
        .or_else(|| {
            descendants(tag, parser)
                .filter(anchor)
                .find(|a| a.attributes().is_class_member("result__title"))
        })
}

/// An element's text: its text nodes (scripts and styles left out), entities decoded,
/// whitespace collapsed, no space before punctuation.
fn text(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>) -> String {
    fn walk(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>, out: &mut String) {
        for child in tag.children().top().iter() {
            match child.get(parser) {
                Some(tl::Node::Raw(raw)) => {
                    out.push_str(&decode_entities(&raw.as_utf8_str()));
                    out.push(' ');
                }
                Some(tl::Node::Tag(inner))
                    if !["script", "style", "noscript"].iter().any(|n| is(inner, n)) =>
                {
                    walk(inner, parser, out);
                }
                _ => {}
            }
        }
    }
    let mut raw = String::new();
    walk(tag, parser, &mut raw);
    let mut text = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    for p in [".", ",", "!", "?", ":", ";"] {
        text = text.replace(&format!(" {p}"), p);
    }
    text
}

/// A result link's destination: DuckDuckGo's `/l/?uddg=` redirect unwrapped; http(s) only,
/// no user info, host and scheme lowercased, no fragment.
fn destination(href: &str) -> Option<String> {
    let base = Url::parse(DUCKDUCKGO_HTML).ok()?;
    let mut url = base.join(href).ok()?;
    let redirect = matches!(
        url.host_str(),
        Some("duckduckgo.com" | "www.duckduckgo.com" | "html.duckduckgo.com")
    ) && url.port().is_none()
        && url.path().trim_end_matches('/') == "/l";
    if redirect {
        let mut targets = url.query_pairs().filter(|(k, _)| k == "uddg");
        let target = targets.next()?.1.trim().to_string();
        if targets.next().is_some() {
            return None;
        }
        url = Url::parse(&target).ok()?;
    }
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    url.set_fragment(None);
    Some(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<html><body><div id="links" class="results">
<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust%2Dlang.org%2Fbook%2F%23intro&amp;rut=abc">The Rust <b>Programming</b> Language</a></h2>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Affectionately nicknamed &ldquo;the book&rdquo; , <b>Rust</b> .</a>
  </div>
</div>
<div class="result results_links"><h2><a href="https://Example.COM/a">Plain h2</a></h2></div>
<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust-lang.org%2Fbook%2F">Duplicate</a></div>
<div class="result"><a class="result__a" href="javascript:alert(1)">Script</a></div>
<div class="result result--ad"><a class="result__a" href="https://user:pw@example.com/">Creds</a></div>
</div></body></html>"#;

    #[test]
    fn results_are_unwrapped_and_cleaned() {
        let hits = parse(PAGE).expect("hits");
        let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(
            urls,
            ["https://doc.rust-lang.org/book/", "https://example.com/a"]
        );
        assert_eq!(hits[0].title, "The Rust Programming Language");
        assert_eq!(
            hits[0].snippet,
            "Affectionately nicknamed \u{201c}the book\u{201d}, Rust."
        );
        assert_eq!(hits[1].title, "Plain h2");
        assert_eq!(hits[1].snippet, "");
    }

    #[test]
    fn pages_without_results_say_why() {
        let no = r#"<html><body><div class="no-results">No results.</div></body></html>"#;
        assert_eq!(parse(no).err(), Some(NoResults::Empty));
        let challenge =
            r#"<html><body><form id="challenge-form">Are you a robot?</form></body></html>"#;
        assert_eq!(parse(challenge).err(), Some(NoResults::Challenge));
        assert_eq!(
            parse("<html><body><p>hello</p></body></html>").err(),
            Some(NoResults::Unparseable)
        );
        let only_bad = r#"<div class="result"><a class="result__a" href="ftp://x/">x</a></div>"#;
        assert_eq!(parse(only_bad).err(), Some(NoResults::Empty));
    }
}
