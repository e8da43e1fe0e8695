//! Transcript types: messages and their content blocks.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The human (or host program) driving the agent; also synthetic notes such as a
    /// compaction summary.
    User,
    /// The model.
    Assistant,
    /// Results of the tool calls of the preceding assistant message, one block per call.
    Tool,
}

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
    /// When the message was added to the transcript.
    pub time: DateTime<Utc>,
    /// True for messages the agent wrote itself (compaction summaries, recovery nudges)
    /// rather than the user or the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

impl Message {
    /// A message with the given role and content, stamped now.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content,
            time: Utc::now(),
            synthetic: false,
        }
    }

    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::text(text)])
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentBlock::text(text)])
    }

    /// Marks the message as written by the agent itself.
    #[must_use = "returns the changed value"]
    pub fn synthetic(mut self) -> Self {
        self.synthetic = true;
        self
    }

    /// The concatenated text blocks of this message (reasoning excluded).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls this message makes, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// A tool invocation proposed by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; results refer to it.
    pub id: String,
    /// Name of the tool.
    pub name: String,
    /// Parsed arguments, or `null` when the model's argument text was not valid JSON.
    pub args: Value,
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, stored as raw bytes (base64 in JSON).
    Image {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// The decoded image bytes.
        #[serde(with = "base64_bytes")]
        data: Bytes,
    },
    /// Model reasoning ("thinking"), kept so providers that require it can be sent it back.
    Reasoning {
        /// The reasoning text or summary as streamed.
        text: String,
        /// Provider signature that authenticates the reasoning (Anthropic thinking blocks).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Provider-specific replay data (for example an OpenAI Responses reasoning item with
        /// its encrypted content), passed back verbatim by the provider that produced it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opaque: Option<Value>,
    },
    /// A tool call made by the assistant.
    ToolCall(ToolCall),
    /// The result of one tool call; its content holds text and image blocks.
    ToolResult {
        /// Id of the call this answers.
        call_id: String,
        /// True when the tool failed or was not run.
        is_error: bool,
        /// Text and image blocks.
        content: Vec<ContentBlock>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image block.
    pub fn image(mime_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        Self::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }
}

/// The input of one prompt: text plus optional images.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserInput {
    /// The prompt text.
    pub text: String,
    /// Attached images as `(mime type, bytes)`.
    pub images: Vec<(String, Bytes)>,
}

impl UserInput {
    /// Text-only input.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// Adds an image.
    #[must_use = "returns the changed value"]
    pub fn with_image(mut self, mime_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        self.images.push((mime_type.into(), data.into()));
        self
    }

    /// True when there is neither text (ignoring whitespace) nor an image.
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.images.is_empty()
    }

    /// The user message this input becomes.
    pub fn into_message(self) -> Message {
        let mut content = Vec::with_capacity(1 + self.images.len());
        if !self.text.is_empty() {
            content.push(ContentBlock::text(self.text));
        }
        for (mime_type, data) in self.images {
            content.push(ContentBlock::Image { mime_type, data });
        }
        Message::new(Role::User, content)
    }
}

impl From<&str> for UserInput {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for UserInput {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

pub(crate) mod base64_bytes {
    use base64::Engine;
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(data: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(data))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(Bytes::from)
            .map_err(serde::de::Error::custom)
    }
}
