//! The page store of zut's browsing tools: the sources a search returned and the pages
//! opened, each under an opaque reference (`web-1`, `web-2`, …), in memory only.
//!
//! It is bounded as zut's `BrowsingStore` is: at most [`WEB_PAGES_MAX_DOCUMENTS`]
//! references and [`WEB_PAGES_MAX_BYTES`] of text (URLs, titles, lines and links); the
//! reference used least recently is dropped first, and a page larger than the whole budget
//! is not kept. [`WebPages::clear`] forgets everything, and a search or page that was under
//! way then is not kept either.

use std::sync::{Arc, Mutex, MutexGuard};

/// The most references a store keeps (zut's `webPageMaxDocuments`).
pub const WEB_PAGES_MAX_DOCUMENTS: usize = 32;
/// The most bytes of text a store keeps (zut's `webPageMaxStoreBytes`, 64 KiB).
pub const WEB_PAGES_MAX_BYTES: usize = 64 * 1024;

/// An opened page: its text as numbered lines and its links, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Page {
    /// The page's `<title>`, if any.
    pub(crate) title: String,
    /// The text, one entry a line (no blank lines).
    pub(crate) lines: Vec<String>,
    /// The links: label and absolute URL.
    pub(crate) links: Vec<(String, String)>,
}

/// What a reference names.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// A URL a search returned, not fetched yet.
    Source,
    /// A fetched page.
    Page(Arc<Page>),
}

/// A stored reference.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    /// `web-N`.
    pub(crate) id: String,
    /// The source's URL, or where the page was fetched from (after redirects).
    pub(crate) url: String,
    pub(crate) entry: Entry,
}

#[derive(Debug)]
struct Stored {
    doc: Doc,
    touched: u64,
    size: usize,
}

#[derive(Debug, Default)]
struct Store {
    generation: u64,
    /// The last id given.
    next: u64,
    /// Use order: bumped by every add and get.
    clock: u64,
    docs: Vec<Stored>,
    used: usize,
}

/// The page store one set of browsing tools shares (cheap to clone: clones share it).
#[derive(Debug, Clone, Default)]
pub struct WebPages {
    store: Arc<Mutex<Store>>,
}

impl WebPages {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets every reference; what is under way now is not kept when it ends.
    pub fn clear(&self) {
        let mut store = self.lock();
        store.generation += 1;
        store.docs.clear();
        store.used = 0;
    }

    /// How many references the store holds.
    pub fn len(&self) -> usize {
        self.lock().docs.len()
    }

    /// Whether the store holds no reference.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of text the store holds.
    pub fn bytes(&self) -> usize {
        self.lock().used
    }

    /// The store's generation now (a later [`WebPages::clear`] changes it).
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Keeps `url` as a source; `None` when the store was cleared since `generation`.
    pub(crate) fn add_source(&self, url: &str, generation: u64) -> Option<String> {
        self.add(url, Entry::Source, generation)
    }

    /// Keeps `page`, fetched from `url`; `None` when it is larger than the whole store or
    /// the store was cleared since `generation`.
    pub(crate) fn add_page(&self, url: &str, page: Page, generation: u64) -> Option<String> {
        self.add(url, Entry::Page(Arc::new(page)), generation)
    }

    fn add(&self, url: &str, entry: Entry, generation: u64) -> Option<String> {
        let size = url.len()
            + match &entry {
                Entry::Source => 0,
                Entry::Page(page) => {
                    page.title.len()
                        + page.lines.iter().map(String::len).sum::<usize>()
                        + page
                            .links
                            .iter()
                            .map(|(label, url)| label.len() + url.len())
                            .sum::<usize>()
                }
            };
        let mut store = self.lock();
        if generation != store.generation || size > WEB_PAGES_MAX_BYTES {
            return None;
        }
        while store.docs.len() >= WEB_PAGES_MAX_DOCUMENTS
            || (!store.docs.is_empty() && store.used + size > WEB_PAGES_MAX_BYTES)
        {
            let Some(oldest) = store
                .docs
                .iter()
                .enumerate()
                .min_by_key(|(_, d)| d.touched)
                .map(|(i, _)| i)
            else {
                break;
            };
            let dropped = store.docs.swap_remove(oldest);
            store.used -= dropped.size;
        }
        store.next += 1;
        store.clock += 1;
        let id = format!("web-{}", store.next);
        let touched = store.clock;
        store.docs.push(Stored {
            doc: Doc {
                id: id.clone(),
                url: url.to_string(),
                entry,
            },
            touched,
            size,
        });
        store.used += size;
        Some(id)
    }

    /// The reference `id`, marked as just used.
    pub(crate) fn get(&self, id: &str) -> Option<Doc> {
        let mut store = self.lock();
        store.clock += 1;
        let touched = store.clock;
        let stored = store.docs.iter_mut().find(|d| d.doc.id == id)?;
        stored.touched = touched;
        Some(stored.doc.clone())
    }

    /// The reference `id` without marking it used (for a permission prompt).
    pub(crate) fn peek(&self, id: &str) -> Option<Doc> {
        let store = self.lock();
        store
            .docs
            .iter()
            .find(|d| d.doc.id == id)
            .map(|d| d.doc.clone())
    }

    /// Forgets `id`.
    pub(crate) fn remove(&self, id: &str) {
        let mut store = self.lock();
        if let Some(i) = store.docs.iter().position(|d| d.doc.id == id) {
            let dropped = store.docs.swap_remove(i);
            store.used -= dropped.size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(bytes: usize) -> Page {
        Page {
            title: String::new(),
            lines: vec!["x".repeat(bytes)],
            links: Vec::new(),
        }
    }

    #[test]
    fn the_least_recently_used_reference_goes_first() {
        let pages = WebPages::new();
        let g = pages.generation();
        let first = pages.add_source("https://a.test/", g).expect("kept");
        let ids: Vec<String> = (1..WEB_PAGES_MAX_DOCUMENTS)
            .map(|i| {
                pages
                    .add_source(&format!("https://a.test/{i}"), g)
                    .expect("kept")
            })
            .collect();
        assert_eq!(pages.len(), WEB_PAGES_MAX_DOCUMENTS);
        // Using the first keeps it; the second is now the least recently used.
        assert!(pages.get(&first).is_some());
        pages.add_source("https://b.test/", g).expect("kept");
        assert_eq!(pages.len(), WEB_PAGES_MAX_DOCUMENTS);
        assert!(pages.get(&first).is_some());
        assert!(pages.get(&ids[0]).is_none(), "the oldest was dropped");
        assert!(pages.get(&ids[1]).is_some());
    }

    #[test]
    fn bytes_are_bounded_and_a_clear_wins_over_work_under_way() {
        let pages = WebPages::new();
        let g = pages.generation();
        let a = pages.add_page("u", page(30 * 1024), g).expect("kept");
        let b = pages.add_page("u", page(30 * 1024), g).expect("kept");
        let c = pages.add_page("u", page(30 * 1024), g).expect("kept");
        assert!(pages.bytes() <= WEB_PAGES_MAX_BYTES);
        assert!(pages.get(&a).is_none(), "dropped to make room");
        assert!(pages.get(&b).is_some() && pages.get(&c).is_some());
        // Larger than the whole store: not kept, and nothing dropped for it.
        assert!(pages.add_page("u", page(WEB_PAGES_MAX_BYTES), g).is_none());
        assert_eq!(pages.len(), 2);
        pages.clear();
        assert!(pages.is_empty() && pages.bytes() == 0);
        assert!(pages.add_source("https://a.test/", g).is_none(), "stale");
        let fresh = pages.generation();
        assert_eq!(
            pages.add_source("https://a.test/", fresh).as_deref(),
            Some("web-4"),
            "ids are never reused"
        );
    }
}
