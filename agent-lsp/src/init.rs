//! The `initialize` request's parameters, with only what this client says.
//!
//! lsp-types' `InitializeParams` carries every capability the protocol has; serializing it
//! compiles all of their serializers into a binary. These structs hold what the tools use:
//! document sync with saves, versioned diagnostics, definitions (with links), references,
//! implementations, type definitions, hover, document and workspace symbols, configuration
//! and workspace folders.

use serde::Serialize;
use serde_json::Value;

/// `initialize`'s parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams<'a> {
    pub(crate) process_id: u32,
    /// Deprecated by the protocol, read by older servers (bash-language-server).
    pub(crate) root_uri: &'a str,
    pub(crate) workspace_folders: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) initialization_options: Option<&'a Value>,
    pub(crate) capabilities: Capabilities,
    pub(crate) client_info: ClientInfo,
}

/// Who the client is.
#[derive(Debug, Serialize)]
pub(crate) struct ClientInfo {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
}

impl Default for ClientInfo {
    fn default() -> Self {
        Self {
            name: "agent-sdk",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// The client's capabilities.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Capabilities {
    workspace: Workspace,
    text_document: TextDocument,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Workspace {
    configuration: bool,
    workspace_folders: bool,
    symbol: Empty,
}

impl Default for Workspace {
    fn default() -> Self {
        Self {
            configuration: true,
            workspace_folders: true,
            symbol: Empty {},
        }
    }
}

/// `{}`: supported, with no options.
#[derive(Debug, Default, Serialize)]
struct Empty {}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TextDocument {
    synchronization: Synchronization,
    publish_diagnostics: PublishDiagnostics,
    hover: Hover,
    definition: Goto,
    type_definition: Goto,
    implementation: Goto,
    references: Empty,
    document_symbol: DocumentSymbol,
}

impl Default for TextDocument {
    fn default() -> Self {
        let goto = || Goto { link_support: true };
        Self {
            synchronization: Synchronization { did_save: true },
            publish_diagnostics: PublishDiagnostics {
                version_support: true,
            },
            hover: Hover {
                content_format: ["markdown", "plaintext"],
            },
            definition: goto(),
            type_definition: goto(),
            implementation: goto(),
            references: Empty {},
            document_symbol: DocumentSymbol {
                hierarchical_document_symbol_support: true,
            },
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Synchronization {
    did_save: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PublishDiagnostics {
    version_support: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Hover {
    content_format: [&'static str; 2],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Goto {
    link_support: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentSymbol {
    hierarchical_document_symbol_support: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capabilities_ask_for_what_the_tools_use_and_fit_lsp_types() {
        let folders = serde_json::json!([{"uri": "file:///w", "name": "w"}]);
        let options = serde_json::json!({"tsserver": {"useSyntaxServer": "never"}});
        let params = InitializeParams {
            process_id: 7,
            root_uri: "file:///w",
            workspace_folders: &folders,
            initialization_options: Some(&options),
            capabilities: Capabilities::default(),
            client_info: ClientInfo::default(),
        };
        let json = serde_json::to_value(&params).expect("serializes");
        let caps = &json["capabilities"];
        assert_eq!(caps["textDocument"]["definition"]["linkSupport"], true);
        assert_eq!(
            caps["textDocument"]["publishDiagnostics"]["versionSupport"],
            true
        );
        assert_eq!(
            caps["textDocument"]["hover"]["contentFormat"][0],
            "markdown"
        );
        assert_eq!(caps["workspace"]["configuration"], true);
        assert_eq!(caps["textDocument"]["synchronization"]["didSave"], true);
        assert_eq!(json["clientInfo"]["name"], "agent-sdk");
        // What a server reads it as: lsp-types' own type parses it.
        let parsed: lsp_types::InitializeParams =
            serde_json::from_value(json).expect("lsp-types reads it");
        assert_eq!(parsed.process_id, Some(7));
        let text = parsed.capabilities.text_document.expect("textDocument");
        assert_eq!(text.definition.and_then(|d| d.link_support), Some(true));
        assert_eq!(parsed.initialization_options, Some(options));
    }
}
