//! The repository's rule files and threat list, compiled into the binary so the engine works
//! with no files around.

pub const THREATS_FILE: &str = "threats/threats.toml";
pub const THREATS: &str = include_str!("../threats/threats.toml");

const RULE_FILES: &[(&str, &str)] = &[
    ("bash-general.toml", include_str!("../rules/bash-general.toml")),
    ("behaviours.toml", include_str!("../rules/behaviours.toml")),
    ("bash-malicious.toml", include_str!("../rules/bash-malicious.toml")),
    ("bash-privileged.toml", include_str!("../rules/bash-privileged.toml")),
    ("common.toml", include_str!("../rules/common.toml")),
    ("flow.toml", include_str!("../rules/flow.toml")),
    ("python-api.toml", include_str!("../rules/python-api.toml")),
    ("python-bandit.toml", include_str!("../rules/python-bandit.toml")),
    ("python-malicious.toml", include_str!("../rules/python-malicious.toml")),
    (
        "python-privileged.toml",
        include_str!("../rules/python-privileged.toml"),
    ),
    ("tools.toml", include_str!("../rules/tools.toml")),
];

pub fn rule_files() -> Vec<(String, String)> {
    RULE_FILES.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
}
