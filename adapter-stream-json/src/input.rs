//! The strict parser for stream-json input (`prompt` and `message` events), image
//! resolution, and prompt joining, with Zero's exact error texts.

use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value};

use crate::wire::{InputEvent, InputImage, SCHEMA_VERSION};

/// Largest image accepted, in bytes (10 MiB).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// Bad stream-json input; the message is Zero's, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    fn at_line(line: usize, what: impl std::fmt::Display) -> Self {
        Self(format!("Invalid stream-json input at line {line}: {what}"))
    }

    fn not_object(line: usize) -> Self {
        Self::at_line(line, "expected a JSON object.")
    }
}

/// A decoded, validated image.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedImage {
    /// Normalised MIME type (`image/png`, `image/jpeg`, `image/gif` or `image/webp`).
    pub media_type: String,
    /// Decoded bytes.
    pub data: Bytes,
}

/// Parses JSONL input line by line. Blank lines are skipped but counted; one trailing `\r`
/// per line is stripped; parsing stops at the first bad line.
pub fn parse_input(input: &str) -> Result<Vec<InputEvent>, InputError> {
    let mut events = Vec::new();
    for (index, line) in input.split('\n').enumerate() {
        let number = index + 1;
        let line = line.strip_suffix('\r').unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        let raw: Value = serde_json::from_str(line).map_err(|_| InputError::not_object(number))?;
        let map = match raw {
            Value::Object(map) => map,
            // Go decodes the literal `null` into an empty map: it fails the version check.
            Value::Null => Map::new(),
            _ => return Err(InputError::not_object(number)),
        };
        check_fields(&map)
            .map_err(|key| InputError::at_line(number, format!("unknown field {key}")))?;
        let event = decode_event(&map).ok_or_else(|| InputError::not_object(number))?;
        validate_event(&event).map_err(|what| InputError::at_line(number, what))?;
        events.push(event);
    }
    Ok(events)
}

/// Rejects keys outside the allowed set; `role` and `images` only on `message` events. Of
/// several unknown keys the first in byte order is named (Zero names whichever its map
/// yields first; here it does not depend on the map's order either).
fn check_fields(map: &Map<String, Value>) -> Result<(), String> {
    let is_message = map.get("type").and_then(Value::as_str) == Some("message");
    let unknown = map.keys().filter(|key| {
        !(matches!(key.as_str(), "schemaVersion" | "type" | "content")
            || (is_message && matches!(key.as_str(), "role" | "images")))
    });
    match unknown.min() {
        Some(key) => Err(key.clone()),
        None => Ok(()),
    }
}

/// A string field as Go decodes it: absent or `null` is empty, anything but a string fails.
fn string_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => None,
    }
}

/// Decodes into the typed event; `None` on a type mismatch (`"schemaVersion":"2"`, `2.5`, a
/// non-string `content`, …).
fn decode_event(map: &Map<String, Value>) -> Option<InputEvent> {
    let schema_version = match map.get("schemaVersion") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_i64()?,
        Some(_) => return None,
    };
    let images = match map.get("images") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut images = Vec::with_capacity(items.len());
            for item in items {
                let image = match item {
                    Value::Null => InputImage::default(),
                    // Unknown keys inside an image object are ignored, as Go does.
                    Value::Object(obj) => InputImage {
                        media_type: string_field(obj, "mediaType")?,
                        data: string_field(obj, "data")?,
                    },
                    _ => return None,
                };
                images.push(image);
            }
            images
        }
        Some(_) => return None,
    };
    Some(InputEvent {
        schema_version,
        kind: string_field(map, "type")?,
        role: string_field(map, "role")?,
        content: string_field(map, "content")?,
        images,
    })
}

fn validate_event(event: &InputEvent) -> Result<(), &'static str> {
    if event.schema_version != i64::from(SCHEMA_VERSION) {
        return Err("schemaVersion must be 2");
    }
    if event.content.trim().is_empty() && event.images.is_empty() {
        return Err("content is required");
    }
    match event.kind.as_str() {
        "prompt" => Ok(()),
        "message" if event.role == "user" => Ok(()),
        "message" => Err("role must be user"),
        _ => Err("type must be prompt or message"),
    }
}

/// Joins the trimmed contents of all events with blank lines, dropping blank ones.
pub fn resolve_prompt(events: &[InputEvent]) -> Result<String, InputError> {
    let parts: Vec<&str> = events
        .iter()
        .map(|e| e.content.trim())
        .filter(|c| !c.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(InputError(
            "Stream-json input must include at least one prompt or user message event.".into(),
        ));
    }
    Ok(parts.join("\n\n"))
}

/// Decodes and validates every image of every event, in order.
pub fn resolve_images(events: &[InputEvent]) -> Result<Vec<ResolvedImage>, InputError> {
    let mut images = Vec::new();
    for image in events.iter().flat_map(|e| &e.images) {
        images.push(resolve_image(image)?);
    }
    Ok(images)
}

fn too_large() -> InputError {
    InputError(format!(
        "Stream-json image exceeds the {MAX_IMAGE_BYTES} byte limit."
    ))
}

fn resolve_image(image: &InputImage) -> Result<ResolvedImage, InputError> {
    // Go's DecodedLen for padded standard base64: checked before decoding anything.
    if image.data.len() / 4 * 3 > MAX_IMAGE_BYTES {
        return Err(too_large());
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(image.data.as_bytes())
        .map_err(|err| {
            InputError(format!(
                "Stream-json image data is not valid base64: {}",
                go_base64_error(&image.data, &err)
            ))
        })?;
    if data.len() > MAX_IMAGE_BYTES {
        return Err(too_large());
    }
    let media_type = normalize_media_type(&image.media_type).ok_or_else(|| {
        InputError(format!(
            "Stream-json image has an unsupported image media type {}.",
            go_quote(&image.media_type)
        ))
    })?;
    Ok(ResolvedImage {
        media_type,
        data: Bytes::from(data),
    })
}

/// Go's `base64.CorruptInputError` text: `illegal base64 data at input byte N`.
fn go_base64_error(data: &str, err: &base64::DecodeError) -> String {
    let offset = match err {
        base64::DecodeError::InvalidByte(offset, _)
        | base64::DecodeError::InvalidLastSymbol(offset, _) => *offset,
        base64::DecodeError::InvalidLength(len) => *len,
        base64::DecodeError::InvalidPadding => data.len(),
    };
    format!("illegal base64 data at input byte {offset}")
}

/// Normalises an image media type: lower-cased and trimmed, a `data:<m>;base64,` wrapper
/// unwrapped, short names (`png`, `jpg`, …) expanded, `image/jpg` made `image/jpeg`. Only
/// png, jpeg, gif and webp are allowed.
pub fn normalize_media_type(media_type: &str) -> Option<String> {
    let mut m = media_type.trim().to_ascii_lowercase();
    if let Some(rest) = m.strip_prefix("data:") {
        let inner = rest.split([';', ',']).next().unwrap_or_default();
        m = inner.trim().to_string();
    }
    let m = match m.as_str() {
        "png" | "image/png" => "image/png",
        "jpeg" | "jpg" | "image/jpeg" | "image/jpg" => "image/jpeg",
        "gif" | "image/gif" => "image/gif",
        "webp" | "image/webp" => "image/webp",
        _ => return None,
    };
    Some(m.to_string())
}

/// Quotes a string the way Go's `%q` does for ordinary text.
pub fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &str) -> String {
        parse_input(input).expect_err("input must be rejected").0
    }

    #[test]
    fn errors_match_zero() {
        assert_eq!(
            err("{\"type\":\"prompt\""),
            "Invalid stream-json input at line 1: expected a JSON object."
        );
        assert_eq!(
            err("\n\n[1]"),
            "Invalid stream-json input at line 3: expected a JSON object."
        );
        assert_eq!(
            err("null"),
            "Invalid stream-json input at line 1: schemaVersion must be 2"
        );
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"prompt","content":"x","Content":"y"}"#),
            "Invalid stream-json input at line 1: unknown field Content"
        );
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"prompt","content":"x","role":"user"}"#),
            "Invalid stream-json input at line 1: unknown field role"
        );
        // Of several, the first in byte order, whatever order they came in.
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"prompt","zeta":1,"role":"user","content":"x"}"#),
            "Invalid stream-json input at line 1: unknown field role"
        );
        assert_eq!(
            err(r#"{"schemaVersion":"2","type":"prompt","content":"x"}"#),
            "Invalid stream-json input at line 1: expected a JSON object."
        );
        assert_eq!(
            err(r#"{"schemaVersion":2.5,"type":"prompt","content":"x"}"#),
            "Invalid stream-json input at line 1: expected a JSON object."
        );
        assert_eq!(
            err(r#"{"schemaVersion":1,"type":"prompt","content":"x"}"#),
            "Invalid stream-json input at line 1: schemaVersion must be 2"
        );
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"foo","content":""}"#),
            "Invalid stream-json input at line 1: content is required"
        );
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"message","content":"x"}"#),
            "Invalid stream-json input at line 1: role must be user"
        );
        assert_eq!(
            err(r#"{"schemaVersion":2,"type":"foo","content":"x"}"#),
            "Invalid stream-json input at line 1: type must be prompt or message"
        );
    }

    #[test]
    fn prompts_join_with_blank_lines_and_crlf_is_stripped() {
        let input = "{\"schemaVersion\":2,\"type\":\"message\",\"role\":\"user\",\"content\":\" a \"}\r\n\r\n{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"b\"}\r\n";
        let events = parse_input(input).expect("valid");
        assert_eq!(resolve_prompt(&events).expect("prompt"), "a\n\nb");
        assert!(resolve_prompt(&[]).is_err());
    }

    #[test]
    fn images_are_validated() {
        let ok = InputImage {
            media_type: "JPG".into(),
            data: "aGVsbG8=".into(),
        };
        let image = resolve_image(&ok).expect("valid image");
        assert_eq!(image.media_type, "image/jpeg");
        assert_eq!(&image.data[..], b"hello");
        let bad = InputImage {
            media_type: "image/png".into(),
            data: "not base64!!".into(),
        };
        assert_eq!(
            resolve_image(&bad).expect_err("bad base64").0,
            "Stream-json image data is not valid base64: illegal base64 data at input byte 3"
        );
        let svg = InputImage {
            media_type: "image/svg+xml".into(),
            data: "aGVsbG8=".into(),
        };
        assert_eq!(
            resolve_image(&svg).expect_err("svg").0,
            "Stream-json image has an unsupported image media type \"image/svg+xml\"."
        );
        assert_eq!(
            normalize_media_type("data:image/png;base64,").as_deref(),
            Some("image/png")
        );
    }
}
