//! The coding tools for [`agent_core`]: read, write, edit, list, glob, grep, bash and plan,
//! with workspace confinement, risk classification and secret scrubbing.
//!
//! [`ToolSet`] is the entry point front ends use: the default tools for a workspace,
//! filtered by name, plus any tools of your own.

#![warn(missing_docs)]

mod toolset;

pub use toolset::{ToolSet, ToolSetError};
