//! The repository's rule files and threat list, compiled into the binary so the engine works
//! with no files around. Each rule file is there twice: as written (its text makes the rules'
//! version) and as JSON converted by build.rs (what is parsed at start-up).

pub const THREATS_FILE: &str = "threats/threats.toml";
pub const THREATS: &str = include_str!("../threats/threats.toml");

macro_rules! rule_file {
    ($name:literal) => {
        (
            concat!($name, ".toml"),
            include_str!(concat!("../rules/", $name, ".toml")),
            include_str!(concat!(env!("OUT_DIR"), "/rules-json/", $name, ".json")),
        )
    };
}

/// The built-in rules' version, computed by build.rs as [`RuleSet::compile`] computes it.
///
/// [`RuleSet::compile`]: crate::rules::RuleSet::compile
pub const RULES_VERSION: &str = include_str!(concat!(env!("OUT_DIR"), "/rules-json/version.txt"));

/// (file name, TOML text, JSON text) of each built-in rule file.
pub const RULE_FILES: &[(&str, &str, &str)] = &[
    rule_file!("bash-general"),
    rule_file!("behaviours"),
    rule_file!("bash-malicious"),
    rule_file!("bash-privileged"),
    rule_file!("common"),
    rule_file!("flow"),
    rule_file!("intent"),
    rule_file!("python-api"),
    rule_file!("python-bandit"),
    rule_file!("python-malicious"),
    rule_file!("python-privileged"),
    rule_file!("tools"),
    rule_file!("unknown"),
];

#[cfg(test)]
mod tests {
    use super::RULE_FILES;
    use crate::rules::RuleSet;

    #[test]
    fn the_prebuilt_rules_are_the_toml_rules_and_every_expression_is_valid() {
        let toml: Vec<(String, String)> = RULE_FILES
            .iter()
            .map(|(n, t, _)| (n.to_string(), t.to_string()))
            .collect();
        // The TOML path checks every regular expression's syntax, which the prebuilt path trusts.
        let checked = RuleSet::compile(&toml).expect("built-in rule files are valid");
        let prebuilt = RuleSet::compile_prebuilt(RULE_FILES, super::RULES_VERSION).expect("prebuilt rules load");
        assert_eq!(checked.version, prebuilt.version);
        assert_eq!(checked.rules.len(), prebuilt.rules.len());
        assert_eq!(checked.effects.tools.len(), prebuilt.effects.tools.len());
    }
}
