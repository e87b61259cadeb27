//! Helpers of the chat-bridge tests: a real Synapse homeserver and Matrix users that talk to it
//! through the client-server API, as a human's client would.

pub mod matrix;
pub mod synapse;
