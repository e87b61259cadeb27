//! Helpers of the chat-bridge tests: a real Synapse homeserver and Matrix users that talk to it
//! through the client-server API, as a human's client would.

// Each test file uses its own part of these helpers.
#![allow(dead_code)]

pub mod matrix;
pub mod synapse;
