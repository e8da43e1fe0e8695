//! HTML to Markdown for `web_fetch`: headings, paragraphs, links (made absolute), lists,
//! code blocks, inline code, emphasis, quotes, images and simple tables are kept; scripts,
//! styles and other non-content elements are dropped.
//!
//! The document is parsed by [`tl`] (a small, fast HTML parser: about 30 KiB in a release
//! binary, where the html5ever-based converters add about 1 MiB); this module renders its
//! tree.

use reqwest::Url;

/// Elements dropped with everything inside them.
const DROPPED: &[&str] = &[
    "script", "style", "head", "noscript", "svg", "template", "iframe", "object", "embed",
    "canvas", "button", "select", "option", "input", "textarea", "form",
];
/// Elements that are blocks of their own.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "figure",
    "figcaption",
    "details",
    "summary",
    "dl",
    "dt",
    "dd",
    "address",
    "body",
    "html",
    "caption",
];
/// Deepest element nesting rendered (deeper content is skipped, so a hostile page cannot
/// exhaust the stack).
const MAX_DEPTH: usize = 200;

/// Converts `html` to Markdown; links and images resolve against `base`.
pub fn html_to_markdown(html: &str, base: Option<&Url>) -> String {
    let Ok(dom) = tl::parse(html, tl::ParserOptions::default()) else {
        return String::new();
    };
    let parser = dom.parser();
    let mut out = Renderer {
        parser,
        base,
        text: String::new(),
        lists: Vec::new(),
        links: None,
    };
    for handle in dom.children() {
        out.node(*handle, 0);
    }
    tidy(&out.text)
}

/// Links a page keeps (zut's `webPageMaxLinks`).
pub(crate) const MAX_PAGE_LINKS: usize = 256;
/// Bytes of link labels and URLs a page keeps (zut's `webPageMaxLinkBytes`).
const MAX_PAGE_LINK_BYTES: usize = 4 * 1024;
/// The longest URL kept (zut's `webPageMaxURLBytes`).
pub(crate) const MAX_URL_BYTES: usize = 4 * 1024;
/// Characters of a link's label kept.
const MAX_LABEL_CHARS: usize = 256;
/// Characters of a page's title kept.
const MAX_TITLE_CHARS: usize = 512;

/// A page as the browsing tools show it ([`page_markdown`]).
#[derive(Debug, Default)]
pub(crate) struct PageMarkdown {
    /// The `<title>`, whitespace collapsed (empty without one).
    pub(crate) title: String,
    /// The content as Markdown, each link kept as its label.
    pub(crate) text: String,
    /// The links, in order: label (the URL when it has none) and absolute URL.
    pub(crate) links: Vec<(String, String)>,
}

/// The page view of `html` for the browsing tools, as zut extracts a page: the title; the
/// content of the first `<article>`, else `<main>`, else `<body>` (else the document) as
/// Markdown, links kept as their labels; and the http(s) links, resolved against `base`
/// without their fragments, each label and URL once (at most 256, 4 KiB in all).
pub(crate) fn page_markdown(html: &str, base: &Url) -> PageMarkdown {
    let Ok(dom) = tl::parse(html, tl::ParserOptions::default()) else {
        return PageMarkdown::default();
    };
    let parser = dom.parser();
    let first = |tag: &str| dom.query_selector(tag).and_then(|mut found| found.next());
    let title = first("title")
        .and_then(|h| h.get(parser))
        .map(|node| decode_entities(&node.inner_text(parser)))
        .map(|t| {
            bound_chars(
                &t.split_whitespace().collect::<Vec<_>>().join(" "),
                MAX_TITLE_CHARS,
            )
        })
        .unwrap_or_default();
    let mut out = Renderer {
        parser,
        base: Some(base),
        text: String::new(),
        lists: Vec::new(),
        links: Some(Links::default()),
    };
    match first("article")
        .or_else(|| first("main"))
        .or_else(|| first("body"))
    {
        Some(content) => out.node(content, 0),
        None => {
            for handle in dom.children() {
                out.node(*handle, 0);
            }
        }
    }
    PageMarkdown {
        title,
        text: tidy(&out.text),
        links: out.links.map(|l| l.list).unwrap_or_default(),
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub(crate) fn bound_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The absolute http(s) URL of a link on a page at `base`, without its fragment.
fn page_link(base: Option<&Url>, href: &str) -> Option<String> {
    if href.is_empty() || href.len() > MAX_URL_BYTES {
        return None;
    }
    let mut url = base?.join(href).ok()?;
    url.set_fragment(None);
    let plain = matches!(url.scheme(), "http" | "https")
        && url.username().is_empty()
        && url.password().is_none();
    let url = url.to_string();
    (plain && url.len() <= MAX_URL_BYTES).then_some(url)
}

/// The links a page view collects.
#[derive(Debug, Default)]
struct Links {
    list: Vec<(String, String)>,
    bytes: usize,
}

impl Links {
    fn add(&mut self, label: &str, url: String) {
        if self.list.len() >= MAX_PAGE_LINKS {
            return;
        }
        let label = match label.is_empty() {
            true => url.clone(),
            false => bound_chars(label, MAX_LABEL_CHARS),
        };
        let size = label.len() + url.len();
        if self.bytes + size > MAX_PAGE_LINK_BYTES
            || self.list.iter().any(|(l, u)| *l == label && *u == url)
        {
            return;
        }
        self.bytes += size;
        self.list.push((label, url));
    }
}

struct Renderer<'p, 'b> {
    parser: &'p tl::Parser<'p>,
    base: Option<&'b Url>,
    text: String,
    /// Open lists: `None` for bullets, `Some(n)` for the next number.
    lists: Vec<Option<usize>>,
    /// In a page view: links are collected here and shown as their labels.
    links: Option<Links>,
}

impl Renderer<'_, '_> {
    fn at_line_start(&self) -> bool {
        self.text.is_empty() || self.text.ends_with('\n')
    }

    /// Ends the current line and leaves one blank line.
    fn block_break(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let trimmed = self.text.trim_end_matches([' ', '\n']).len();
        self.text.truncate(trimmed);
        self.text.push_str("\n\n");
    }

    fn line_break(&mut self) {
        let trimmed = self.text.trim_end_matches(' ').len();
        self.text.truncate(trimmed);
        self.text.push('\n');
    }

    fn push_text(&mut self, raw: &str) {
        let decoded = decode_entities(raw);
        let mut collapsed = String::with_capacity(decoded.len());
        let mut space = false;
        for c in decoded.chars() {
            if c.is_whitespace() {
                space = true;
            } else {
                if space && !collapsed.is_empty() {
                    collapsed.push(' ');
                }
                space = false;
                collapsed.push(c);
            }
        }
        if collapsed.is_empty() {
            if space && !self.at_line_start() && !self.text.ends_with(' ') {
                self.text.push(' ');
            }
            return;
        }
        let leading = decoded.starts_with(char::is_whitespace);
        if leading && !self.at_line_start() && !self.text.ends_with(' ') {
            self.text.push(' ');
        }
        self.text.push_str(&collapsed);
        if space {
            self.text.push(' ');
        }
    }

    fn resolve(&self, href: &str) -> String {
        match self.base.and_then(|b| b.join(href).ok()) {
            Some(url) => url.to_string(),
            None => href.to_string(),
        }
    }

    /// The rendered inline content of `tag`'s children, on its own.
    fn inline_of(&mut self, tag: &tl::HTMLTag<'_>, depth: usize) -> String {
        let saved = std::mem::take(&mut self.text);
        for child in tag.children().top().iter() {
            self.node(*child, depth + 1);
        }
        let inner = std::mem::replace(&mut self.text, saved);
        inner.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn node(&mut self, handle: tl::NodeHandle, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(node) = handle.get(self.parser) else {
            return;
        };
        match node {
            tl::Node::Raw(bytes) => self.push_text(&bytes.as_utf8_str()),
            tl::Node::Comment(_) => {}
            tl::Node::Tag(tag) => self.tag(tag, depth),
        }
    }

    fn children(&mut self, tag: &tl::HTMLTag<'_>, depth: usize) {
        for child in tag.children().top().iter() {
            self.node(*child, depth + 1);
        }
    }

    fn attr(tag: &tl::HTMLTag<'_>, name: &str) -> Option<String> {
        tag.attributes()
            .get(name)
            .flatten()
            .map(|v| decode_entities(&v.as_utf8_str()).trim().to_string())
    }

    fn tag(&mut self, tag: &tl::HTMLTag<'_>, depth: usize) {
        let name = tag.name().as_utf8_str().to_ascii_lowercase();
        let name = name.as_str();
        if DROPPED.contains(&name) {
            return;
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = usize::from(name.as_bytes()[1] - b'0');
                let title = self.inline_of(tag, depth);
                self.block_break();
                if !title.is_empty() {
                    self.text.push_str(&"#".repeat(level));
                    self.text.push(' ');
                    self.text.push_str(&title);
                }
                self.block_break();
            }
            "br" => self.line_break(),
            "hr" => {
                self.block_break();
                self.text.push_str("---");
                self.block_break();
            }
            "a" => {
                let label = self.inline_of(tag, depth);
                let href = Self::attr(tag, "href").unwrap_or_default();
                if self.links.is_some() {
                    if let Some(url) = page_link(self.base, &href) {
                        if let Some(links) = self.links.as_mut() {
                            links.add(&label, url);
                        }
                    }
                    self.push_inline(&label);
                    return;
                }
                let lower = href.to_ascii_lowercase();
                if label.is_empty() {
                    return;
                }
                if href.is_empty() || href.starts_with('#') || lower.starts_with("javascript:") {
                    self.push_inline(&label);
                } else {
                    let link = format!("[{}]({})", label, self.resolve(&href));
                    self.push_inline(&link);
                }
            }
            "img" if self.links.is_some() => {}
            "img" => {
                let alt = Self::attr(tag, "alt").unwrap_or_default();
                if let Some(src) = Self::attr(tag, "src").filter(|s| !s.starts_with("data:")) {
                    if !alt.is_empty() {
                        let image = format!("![{alt}]({})", self.resolve(&src));
                        self.push_inline(&image);
                    }
                }
            }
            "strong" | "b" => self.wrapped(tag, depth, "**"),
            "em" | "i" => self.wrapped(tag, depth, "*"),
            "del" | "s" | "strike" => self.wrapped(tag, depth, "~~"),
            "code" | "kbd" | "samp" | "tt" => {
                let code = self.inline_of(tag, depth);
                if !code.is_empty() {
                    let fence = if code.contains('`') { "``" } else { "`" };
                    self.push_inline(&format!("{fence}{code}{fence}"));
                }
            }
            "pre" => self.pre(tag),
            "ul" | "ol" => {
                let start = match name {
                    "ol" => Some(
                        Self::attr(tag, "start")
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(1),
                    ),
                    _ => None,
                };
                if self.lists.is_empty() {
                    self.block_break();
                } else if !self.at_line_start() {
                    self.line_break();
                }
                self.lists.push(start);
                self.children(tag, depth);
                self.lists.pop();
                if self.lists.is_empty() {
                    self.block_break();
                }
            }
            "li" => {
                if !self.at_line_start() {
                    self.line_break();
                }
                let indent = "  ".repeat(self.lists.len().saturating_sub(1));
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "- ".to_string(),
                };
                let start = self.text.len();
                self.text.push_str(&indent);
                self.text.push_str(&marker);
                let content = self.text.len();
                self.children(tag, depth);
                if self.text[content..].trim().is_empty() {
                    // An item with nothing to read (an icon, a button) is left out.
                    self.text.truncate(start);
                } else if !self.at_line_start() {
                    self.line_break();
                }
            }
            "blockquote" => {
                let saved = std::mem::take(&mut self.text);
                let lists = std::mem::take(&mut self.lists);
                self.children(tag, depth);
                let inner = tidy(&std::mem::replace(&mut self.text, saved));
                self.lists = lists;
                if !inner.is_empty() {
                    self.block_break();
                    for line in inner.lines() {
                        self.text.push_str(if line.is_empty() { ">" } else { "> " });
                        self.text.push_str(line);
                        self.text.push('\n');
                    }
                    self.block_break();
                }
            }
            "tr" => {
                if !self.at_line_start() {
                    self.line_break();
                }
                let mut cells = Vec::new();
                let mut header = false;
                for child in tag.children().top().iter() {
                    if let Some(tl::Node::Tag(cell)) = child.get(self.parser) {
                        let cell_name = cell.name().as_utf8_str().to_ascii_lowercase();
                        if cell_name == "td" || cell_name == "th" {
                            header |= cell_name == "th";
                            cells.push(self.inline_of(cell, depth + 1).replace('|', "\\|"));
                        }
                    }
                }
                if !cells.is_empty() {
                    self.text.push_str(&format!("| {} |", cells.join(" | ")));
                    self.line_break();
                    if header {
                        let rule = vec!["---"; cells.len()].join(" | ");
                        self.text.push_str(&format!("| {rule} |"));
                        self.line_break();
                    }
                }
            }
            "table" | "thead" | "tbody" | "tfoot" => {
                if name == "table" {
                    self.block_break();
                }
                self.children(tag, depth);
                if name == "table" {
                    self.block_break();
                }
            }
            _ if BLOCKS.contains(&name) => {
                self.block_break();
                self.children(tag, depth);
                self.block_break();
            }
            _ => self.children(tag, depth),
        }
    }

    fn push_inline(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn wrapped(&mut self, tag: &tl::HTMLTag<'_>, depth: usize, mark: &str) {
        let inner = self.inline_of(tag, depth);
        if !inner.is_empty() {
            self.push_inline(&format!("{mark}{inner}{mark}"));
        }
    }

    fn pre(&mut self, tag: &tl::HTMLTag<'_>) {
        let mut language = Self::attr(tag, "class").and_then(|c| language_of(&c));
        let mut code = String::new();
        collect_raw(self.parser, tag, &mut code, &mut language, 0);
        let code = decode_entities(&code);
        let code = code.trim_matches('\n');
        self.block_break();
        let fence = if code.contains("```") { "~~~" } else { "```" };
        self.text.push_str(fence);
        self.text.push_str(language.as_deref().unwrap_or(""));
        self.text.push('\n');
        self.text.push_str(code);
        self.text.push('\n');
        self.text.push_str(fence);
        self.block_break();
    }
}

/// The language of a `language-x` / `lang-x` class.
fn language_of(class: &str) -> Option<String> {
    class.split_whitespace().find_map(|c| {
        c.strip_prefix("language-")
            .or_else(|| c.strip_prefix("lang-"))
            .filter(|l| !l.is_empty())
            .map(str::to_string)
    })
}

/// The text inside a `<pre>`, tags removed and whitespace kept; the language of a `<code>`
/// inside it is taken when the `<pre>` has none.
fn collect_raw(
    parser: &tl::Parser<'_>,
    tag: &tl::HTMLTag<'_>,
    out: &mut String,
    language: &mut Option<String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for child in tag.children().top().iter() {
        match child.get(parser) {
            Some(tl::Node::Raw(bytes)) => out.push_str(&bytes.as_utf8_str()),
            Some(tl::Node::Tag(inner)) => {
                let name = inner.name().as_utf8_str().to_ascii_lowercase();
                if name == "br" {
                    out.push('\n');
                    continue;
                }
                if name == "code" && language.is_none() {
                    *language = Renderer::attr(inner, "class").and_then(|c| language_of(&c));
                }
                collect_raw(parser, inner, out, language, depth + 1);
            }
            _ => {}
        }
    }
}

/// Trailing spaces removed, at most one blank line in a row (outside code blocks), and no
/// blank lines at either end.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    let mut fenced = false;
    for line in text.lines() {
        let line = if fenced { line } else { line.trim_end() };
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
        }
        if line.trim().is_empty() && !fenced {
            blank += 1;
            continue;
        }
        if !out.is_empty() && blank > 0 {
            out.push('\n');
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// Decodes the character references HTML pages use most (named ones of Latin-1 text and
/// typography, and every numeric one); unknown names stay as they are.
pub(crate) fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .map(|e| e + 1);
        let decoded = end.filter(|&e| rest[e..].starts_with(';')).and_then(|e| {
            let name = &rest[1..e];
            let c = match name.strip_prefix('#') {
                Some(num) => {
                    let code = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok(),
                        None => num.parse().ok(),
                    };
                    code.and_then(char::from_u32).map(String::from)
                }
                None => named_entity(name).map(str::to_string),
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push_str(&c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn named_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => " ",
        "ndash" => "–",
        "mdash" => "—",
        "hellip" => "…",
        "lsquo" => "‘",
        "rsquo" => "’",
        "ldquo" => "“",
        "rdquo" => "”",
        "laquo" => "«",
        "raquo" => "»",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "middot" => "·",
        "bull" => "•",
        "times" => "×",
        "divide" => "÷",
        "para" => "¶",
        "sect" => "§",
        "deg" => "°",
        "larr" => "←",
        "rarr" => "→",
        "uarr" => "↑",
        "darr" => "↓",
        "euro" => "€",
        "pound" => "£",
        "yen" => "¥",
        "cent" => "¢",
        "shy" => "",
        "zwj" => "\u{200d}",
        "zwnj" => "\u{200c}",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_is_kept_and_scripts_dropped() {
        let base = Url::parse("https://docs.example.com/guide/intro.html").expect("url");
        let html = r#"<!doctype html><html><head><title>T</title><style>p{}</style></head>
            <body><h1>Getting <em>started</em></h1>
            <p>Read the <a href="../api/index.html">API &amp; types</a> first.<br>Then go.</p>
            <script>alert("x")</script>
            <ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul>
            <pre><code class="language-rust">fn main() {
    println!("&lt;hi&gt;");
}</code></pre>
            <blockquote><p>quoted</p></blockquote>
            <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
            </body></html>"#;
        let md = html_to_markdown(html, Some(&base));
        let expected = "# Getting *started*\n\n\
            Read the [API & types](https://docs.example.com/api/index.html) first.\nThen go.\n\n\
            - one\n- two\n  1. a\n  2. b\n\n\
            ```rust\nfn main() {\n    println!(\"<hi>\");\n}\n```\n\n\
            > quoted\n\n\
            | k | v |\n| --- | --- |\n| a | 1 |";
        assert_eq!(md, expected);
        assert!(!md.contains("alert"));
    }

    #[test]
    fn entities_decode() {
        assert_eq!(
            decode_entities("a&amp;b &#65;&#x42; &nope; & x"),
            "a&b AB &nope; & x"
        );
    }
}
