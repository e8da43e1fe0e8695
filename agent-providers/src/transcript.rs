//! Helpers shared by the transcript mappings of the three APIs.

use agent_core::ContentBlock;
use base64::Engine;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Standard base64 of `data`.
pub(crate) fn base64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A `data:` URL holding an image.
pub(crate) fn data_url(mime_type: &str, data: &[u8]) -> String {
    format!("data:{mime_type};base64,{}", base64(data))
}

/// Tool-call arguments as the JSON text OpenAI expects (`{}` when the model's arguments
/// were not valid JSON and were stored as `null`).
pub(crate) fn args_text(args: &Value) -> String {
    match args {
        Value::Null => "{}".to_string(),
        other => other.to_string(),
    }
}

/// Tool-call arguments as the JSON object Anthropic expects.
pub(crate) fn args_object(args: &Value) -> Value {
    match args {
        Value::Object(_) => args.clone(),
        _ => Value::Object(Default::default()),
    }
}

/// The text blocks of a tool result joined with newlines.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        if let ContentBlock::Text { text } = block {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

/// Deserializes a string field leniently: a string is kept, an array of `{"text": …}`
/// parts is joined, anything else (null, objects, numbers) is absent.
pub(crate) fn lenient_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(match value {
        Some(Value::String(s)) => Some(s),
        Some(Value::Array(parts)) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(text)
        }
        _ => None,
    })
}

/// Deserializes any value as an optional string: non-strings (and `""`) are absent.
pub(crate) fn lenient_nonempty<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(match value {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    })
}

/// Deserializes a token count leniently: non-negative integers (or integral floats)
/// are kept, anything else is absent.
pub(crate) fn lenient_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(match value {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        _ => None,
    })
}

/// Deserializes a list leniently: `null` is empty.
pub(crate) fn lenient_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}
