//! `view_image {path}`: a PNG, JPEG, GIF or WebP file of the workspace, handed to the model
//! as an image (each provider sends it in its API's form). `read_file` on an image file
//! returns the same.

use std::path::Path;
use std::sync::Arc;

use agent_core::{
    async_trait, permission::Assessment, ContentBlock, SideEffect, Tool, ToolContext, ToolError,
    ToolOutput,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::common::{
    assess_read_path, blocking, parse_args, resolve_read, schema_for, str_arg, Config, ToolsConfig,
};
use crate::scrub::finish_output;

/// The largest image `view_image` (and `read_file`) hands to the model: 10 MiB.
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// The image type of `head` (a file's first bytes), by its signature.
pub fn sniff_image(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Loads the image at `path` (shown as `display`): its type and bytes, or why not.
pub(crate) fn load_image(path: &Path, display: &str) -> Result<(&'static str, Vec<u8>), String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "file not found".to_string(),
        _ => e.to_string(),
    })?;
    if meta.is_dir() {
        return Err("it is a directory".to_string());
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "the image is {} bytes, over the {MAX_IMAGE_BYTES}-byte limit",
            meta.len()
        ));
    }
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let mime = sniff_image(&data)
        .ok_or_else(|| format!("{display} is not a PNG, JPEG, GIF or WebP image"))?;
    Ok((mime, data))
}

/// The result both tools return for an image.
pub(crate) fn image_output(display: &str, mime: &'static str, data: Vec<u8>) -> ToolOutput {
    ToolOutput {
        content: vec![
            ContentBlock::text(format!("Viewing {display} ({mime}).")),
            ContentBlock::image(mime, data),
        ],
        ..ToolOutput::default()
    }
}

/// Arguments of `view_image`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ViewImageArgs {
    /// Path of the image to look at.
    #[serde(alias = "file", alias = "file_path", alias = "image")]
    pub path: String,
}

/// Shows an image file to the model.
#[derive(Debug, Clone)]
pub struct ViewImage {
    config: Config,
}

impl ViewImage {
    /// The tool for `config`.
    pub fn new(config: Arc<ToolsConfig>) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for ViewImage {
    fn name(&self) -> &str {
        "view_image"
    }

    fn description(&self) -> &str {
        "Look at an image file. Use this to see a screenshot, diagram, mockup or photo the user \
         mentioned but did not attach, or one a previous tool wrote to disk. Accepts PNG, JPEG, \
         GIF and WebP up to 10 MiB."
    }

    fn parameters(&self) -> Value {
        schema_for::<ViewImageArgs>()
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn assess(&self, args: &Value, _cwd: &Path) -> Assessment {
        assess_read_path(&self.config, self.name(), str_arg(args, "path"))
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ViewImageArgs = parse_args(self.name(), args)?;
        let resolved = resolve_read(&self.config, self.name(), &args.path)?;
        let output = blocking(move || {
            let (mime, data) = load_image(&resolved.path, &resolved.display).map_err(|e| {
                ToolError::Failed(format!("Error viewing {}: {e}", resolved.display))
            })?;
            Ok(image_output(&resolved.display, mime, data))
        })
        .await?;
        Ok(finish_output(output, self.config.output_cap))
    }
}
