//! The `opaque` records of reasoning blocks: what an API needs sent back verbatim beside the
//! reasoning text. agent-core keeps them as JSON in the transcript (and session files), so
//! their shape is a stored format: a `type` and the API's own field names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A reasoning block's `opaque` record, borrowed from the transcript's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Opaque<'a> {
    /// Claude's encrypted reasoning (`redacted_thinking`, from Anthropic or Bedrock).
    RedactedThinking {
        /// The encrypted reasoning, as the API gave it.
        data: &'a str,
    },
    /// A Gemini thought summary's thought signature.
    GeminiThought {
        /// The signature.
        thought_signature: &'a str,
    },
    /// The thought signature of a Gemini part that is not a thought: a function call's
    /// when it names the call, else the text part's it followed.
    GeminiSignature {
        /// The signature.
        thought_signature: &'a str,
        /// The id of the call the signature belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<&'a str>,
    },
}

impl<'a> Opaque<'a> {
    /// The record `value` holds, if it is one of these.
    pub(crate) fn of(value: &'a Value) -> Option<Self> {
        Self::deserialize(value).ok()
    }

    /// The record as the JSON a reasoning block keeps (`None` only if it cannot be
    /// serialized, which a record of strings always can).
    pub(crate) fn to_value(self) -> Option<Value> {
        serde_json::to_value(self).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_keep_their_stored_shape() {
        let stored = [
            json!({"type": "redacted_thinking", "data": "RED"}),
            json!({"type": "gemini_thought", "thoughtSignature": "T1"}),
            json!({"type": "gemini_signature", "thoughtSignature": "S0"}),
            json!({"type": "gemini_signature", "thoughtSignature": "S1", "callId": "c1"}),
        ];
        for value in &stored {
            let record = Opaque::of(value).expect("a record");
            assert_eq!(record.to_value().as_ref(), Some(value));
        }
        assert_eq!(
            Opaque::of(&stored[3]),
            Some(Opaque::GeminiSignature {
                thought_signature: "S1",
                call_id: Some("c1")
            })
        );
        // OpenAI's reasoning items and malformed records are not these.
        assert_eq!(
            Opaque::of(&json!({"type": "reasoning", "id": "rs_1"})),
            None
        );
        assert_eq!(
            Opaque::of(&json!({"type": "redacted_thinking", "data": 1})),
            None
        );
    }
}
