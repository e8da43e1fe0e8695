//! `file://` URIs of absolute paths, and back.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::Uri;

use crate::error::LspError;

/// Bytes kept as they are in a URI path; every other byte is percent-encoded.
fn keep(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~')
}

/// The `file://` URI string of an absolute path.
pub(crate) fn file_uri_string(path: &Path) -> String {
    let raw = path.to_string_lossy();
    let mut out = String::with_capacity(raw.len() + 8);
    out.push_str("file://");
    if !raw.starts_with('/') {
        out.push('/');
    }
    for &b in raw.as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `file://` URI of an absolute path.
pub(crate) fn file_uri(path: &Path) -> Result<Uri, LspError> {
    let text = file_uri_string(path);
    Uri::from_str(&text).map_err(|e| LspError::Protocol(format!("{text} is not a URI: {e}")))
}

/// The path of a `file://` URI (`None` for another scheme or a bad escape).
pub(crate) fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` and `file:///x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = rest.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'?' | b'#' => break,
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
    }
    #[cfg(not(unix))]
    {
        Some(PathBuf::from(String::from_utf8_lossy(&out).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_uris() {
        for path in ["/tmp/a b/ü#1%.py", "/plain/file.rs", "/x/[y]/z?.ts"] {
            let uri = file_uri(Path::new(path)).expect("a URI");
            assert!(uri.as_str().starts_with("file:///"), "{}", uri.as_str());
            assert_eq!(uri_path(uri.as_str()), Some(PathBuf::from(path)));
        }
        assert_eq!(
            file_uri_string(Path::new("/a b")),
            "file:///a%20b".to_string()
        );
        assert_eq!(uri_path("file:///a%2"), None);
        assert_eq!(uri_path("untitled:1"), None);
        assert_eq!(
            uri_path("file://localhost/x%20y"),
            Some(PathBuf::from("/x y"))
        );
    }
}
