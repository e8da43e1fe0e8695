//! The coding tools for [`agent_core`]: read, write, edit, list, glob, grep, bash and plan,
//! with workspace confinement, risk classification and secret scrubbing (in progress).

#![warn(missing_docs)]
