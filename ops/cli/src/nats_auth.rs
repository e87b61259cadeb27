//! NATS users of a stack and the server's `authorization` block. What each user may do comes
//! from the roles table (`airlock_protocol::roles`) through `airlock_bus::permissions`; this file
//! only holds the keys and renders the server config.

use airlock_bus::permissions::{self, Permissions};
use airlock_protocol::roles::{self, ROLES};
use std::path::Path;

/// An nkey user: the public key goes in the server config, the seed stays in `$AIRLOCK_HOME`.
pub struct UserKey {
    pub user: String,
    pub public_key: String,
}

/// Every NATS user of a stack: the table's roles, then the extra client users.
pub fn users(clients: &airlock_bus::ClientsConfig) -> Vec<String> {
    let mut users: Vec<String> = ROLES.iter().map(|r| r.user.to_owned()).collect();
    for client in clients.users() {
        if !users.contains(&client) {
            users.push(client);
        }
    }
    users
}

/// What `user` may do: its role's permissions, or a client's for the extra client users.
pub fn permissions_of(user: &str) -> Permissions {
    match roles::by_user(user) {
        Some(role) => permissions::of_role(role),
        None => permissions::client(user),
    }
}

/// Reads the user's seed, or creates one (mode 0600).
pub fn load_or_create_user(user: &str, seed_file: &Path) -> anyhow::Result<UserKey> {
    let seed = match std::fs::read_to_string(seed_file) {
        Ok(s) => s.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let pair = nkeys::KeyPair::new_user();
            let seed = pair.seed()?;
            if let Some(dir) = seed_file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            airlock_protocol::keys::write_secret(seed_file, format!("{seed}\n").as_bytes())?;
            seed
        }
        Err(e) => return Err(e.into()),
    };
    let pair = nkeys::KeyPair::from_seed(&seed)?;
    Ok(UserKey {
        user: user.to_owned(),
        public_key: pair.public_key(),
    })
}

fn quoted(list: &[String]) -> String {
    list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

/// The `authorization` block of a nats-server config for these users.
pub fn authorization_block(users: &[UserKey]) -> String {
    let mut out = String::from("authorization {\n  users: [\n");
    for user in users {
        let p = permissions_of(&user.user);
        out.push_str(&format!(
            "    # {}\n    {{ nkey: {:?}, permissions: {{ publish: {{ allow: [{}] }}, subscribe: {{ allow: [{}], deny: [{}] }}, allow_responses: true }} }}\n",
            user.user,
            user.public_key,
            quoted(&p.publish),
            quoted(&p.subscribe),
            quoted(&p.deny_subscribe)
        ));
    }
    out.push_str("  ]\n}\n");
    out
}
