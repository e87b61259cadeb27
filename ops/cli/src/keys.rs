//! `airlock keys ...`: the stack's keys. `add-operator NAME` makes a person's own operator key
//! (`keys/operators/NAME.key`): answers signed with it are NAME's, verified by the gate, so the
//! two-person rule counts people and "who answered" is not a typed name. `rotate
//! auditor|gate|bridge` gives a signer a new key ([`crate::rotate`]).

use crate::home::Home;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Make operator NAME's own key (kept when it exists); the running gate trusts it at once.
    AddOperator {
        /// The person's name: lowercase letters, digits, `-`, `_` and `.`.
        name: String,
    },
    /// The operators' keys the gate trusts (`keys/operators/*.pub`).
    Operators,
    /// A new key for the auditor, the gate or the chat bridge: the old one is kept as a
    /// verifier of what it signed (`keys/<signer>.keys`) and the running stack switches to the
    /// new one without losing a request. Exits 3 when the switch was not seen in time.
    Rotate(crate::rotate::RotateArgs),
}

pub async fn run(home: &Home, command: KeysCommand) -> anyhow::Result<ExitCode> {
    let stack = home.stack();
    match command {
        KeysCommand::Rotate(args) => crate::rotate::run(home, args).await,
        KeysCommand::AddOperator { name } => {
            let verifier = match stack.add_operator(&name) {
                Ok(v) => v,
                Err(e @ airlock_client::ClientError::BadOperatorName { .. }) => {
                    eprintln!("airlock keys: {e}");
                    return Ok(ExitCode::from(crate::run::status::USAGE));
                }
                Err(e) => return Err(e.into()),
            };
            println!("operator {name}: {verifier}");
            println!(
                "  private key {} (keep it to yourself)",
                stack.operator_key(&name).display()
            );
            println!("  answer as {name}: airlock override approve ID --operator {name} --reason \"...\"");
            if reload_gate(home) {
                println!("  the running override-gate reloaded its keys");
            }
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::Operators => {
            let dir = stack.operators_dir();
            let mut found = Vec::new();
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.extension().is_some_and(|e| e == "pub") {
                        let name = path
                            .file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        let key = std::fs::read_to_string(&path).unwrap_or_default();
                        found.push(format!("{name}  {}", key.trim()));
                    }
                }
            }
            found.sort();
            if found.is_empty() {
                println!(
                    "no operator keys in {} (`airlock keys add-operator NAME`)",
                    dir.display()
                );
            }
            for line in found {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Asks the stack's running gate (if this home runs one) to re-read its keys now, with SIGHUP;
/// a gate elsewhere notices the new file on its own (`[gate] watch`).
fn reload_gate(home: &Home) -> bool {
    let Ok(text) = std::fs::read_to_string(home.stack_file()) else {
        return false;
    };
    let Ok(info) = serde_json::from_str::<airlock_client::StackInfo>(&text) else {
        return false;
    };
    let Some(pid) = info.services.get(airlock_protocol::roles::GATE.command).copied() else {
        return false;
    };
    // SAFETY: kill(2) with a pid read from our own stack file and a signal number; no memory is
    // shared with the callee.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) == 0 }
}
