//! People, not accounts: the `[people]` table maps each person's chat identities and operator
//! keys to one name, so that the two-person rule counts two people (not one person answering
//! from Slack and again from Matrix), and an operator's answer names the person whose key
//! signed it.
//!
//! ```toml
//! [people.alice]
//! matrix = ["@alice:example.org"]
//! slack = ["U0ALICE"]
//! operator_keys = ["alice+1a2b3c4d+..."]
//! ```
//!
//! Operator keys made by `airlock keys add-operator NAME` (`keys/operators/NAME.pub`) belong to
//! the person NAME without being listed.

use crate::CHAT_SYSTEMS;
pub use airlock_protocol::roles::valid_person_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One person's identities.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Person {
    pub matrix: Vec<String>,
    pub slack: Vec<String>,
    pub discord: Vec<String>,
    pub webhook: Vec<String>,
    /// Verifier keys (`name+keyid+base64`) whose signed answers are this person's.
    pub operator_keys: Vec<String>,
}

impl Person {
    fn identities(&self, system: &str) -> &[String] {
        match system {
            "matrix" => &self.matrix,
            "slack" => &self.slack,
            "discord" => &self.discord,
            "webhook" => &self.webhook,
            _ => &[],
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PeopleError {
    #[error("{system} identity {identity:?} is listed for both {first} and {second}")]
    SharedIdentity {
        system: &'static str,
        identity: String,
        first: String,
        second: String,
    },
    #[error("operator key {key:?} is listed for both {first} and {second}")]
    SharedKey { key: String, first: String, second: String },
    #[error("{0:?} is not a person's name (lowercase letters, digits, `-`, `_` and `.`, starting with a letter)")]
    BadName(String),
}

/// Who is who: identities and keys to people.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct People {
    by_identity: BTreeMap<(String, String), String>,
    by_key: BTreeMap<String, String>,
}

impl People {
    /// The table, plus operator keys that belong to the person their file is named after. An
    /// identity or key given to two people is refused: it would let one person count twice.
    pub fn new(
        table: &BTreeMap<String, Person>,
        operator_keys: &BTreeMap<String, String>,
    ) -> Result<Self, PeopleError> {
        let mut people = People::default();
        for (name, person) in table {
            if !valid_person_name(name) {
                return Err(PeopleError::BadName(name.clone()));
            }
            for system in CHAT_SYSTEMS {
                for identity in person.identities(system) {
                    let key = (system.to_owned(), identity.clone());
                    if let Some(first) = people.by_identity.insert(key, name.clone())
                        && &first != name
                    {
                        return Err(PeopleError::SharedIdentity {
                            system,
                            identity: identity.clone(),
                            first,
                            second: name.clone(),
                        });
                    }
                }
            }
            for key in &person.operator_keys {
                people.add_key(key, name)?;
            }
        }
        for (key, name) in operator_keys {
            people.add_key(key, name)?;
        }
        Ok(people)
    }

    fn add_key(&mut self, key: &str, name: &str) -> Result<(), PeopleError> {
        match self.by_key.insert(key.to_owned(), name.to_owned()) {
            Some(first) if first != name => Err(PeopleError::SharedKey {
                key: key.to_owned(),
                first,
                second: name.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// The person a chat identity belongs to.
    pub fn of_identity(&self, system: &str, identity: &str) -> Option<&str> {
        self.by_identity
            .get(&(system.to_owned(), identity.to_owned()))
            .map(String::as_str)
    }

    /// The person an operator key belongs to.
    pub fn of_key(&self, key: &str) -> Option<&str> {
        self.by_key.get(key).map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_identity.is_empty() && self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> BTreeMap<String, Person> {
        toml::from_str(text).expect("people parse")
    }

    #[test]
    fn identities_and_keys_map_to_people() {
        let people = People::new(
            &table(
                r#"
                [alice]
                matrix = ["@alice:x"]
                slack = ["U0ALICE"]
                [bob]
                matrix = ["@bob:x"]
                operator_keys = ["bob+1+k"]
                "#,
            ),
            &[("carol+2+k".to_owned(), "carol".to_owned())].into(),
        )
        .expect("valid");
        assert_eq!(people.of_identity("matrix", "@alice:x"), Some("alice"));
        assert_eq!(people.of_identity("slack", "U0ALICE"), Some("alice"));
        assert_eq!(people.of_identity("slack", "@alice:x"), None);
        assert_eq!(people.of_key("bob+1+k"), Some("bob"));
        assert_eq!(people.of_key("carol+2+k"), Some("carol"));
        assert_eq!(people.of_identity("discord", "nobody"), None);
    }

    #[test]
    fn an_identity_or_key_of_two_people_is_refused() {
        let shared = table("[a]\nmatrix = [\"@x:y\"]\n[b]\nmatrix = [\"@x:y\"]\n");
        assert!(matches!(
            People::new(&shared, &BTreeMap::new()),
            Err(PeopleError::SharedIdentity { .. })
        ));
        let key = table("[a]\noperator_keys = [\"k\"]\n");
        assert!(matches!(
            People::new(&key, &[("k".to_owned(), "b".to_owned())].into()),
            Err(PeopleError::SharedKey { .. })
        ));
        assert!(matches!(
            People::new(&table("[Alice]\n"), &BTreeMap::new()),
            Err(PeopleError::BadName(_))
        ));
        assert!(toml::from_str::<BTreeMap<String, Person>>("[a]\nmatrx = []\n").is_err());
    }
}
