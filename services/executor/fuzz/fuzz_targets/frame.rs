//! The frame the executor builds from what Mai sent: any code, arguments, environment and
//! stdin become a frame that the decoder (the bootstrap's reading, in Rust) reads back to
//! exactly those inputs, with the stdin after it untouched.
#![no_main]
use airlock_executor::SandboxConfig;
use airlock_executor::launch::Frame;
use airlock_protocol::{InputFile, Inputs, Language};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

#[derive(Arbitrary, Debug)]
struct Job {
    bash: bool,
    code: Vec<u8>,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    stdin: Vec<u8>,
    files: Vec<(String, Vec<u8>)>,
    wall_ms: u64,
    with_packages: bool,
}

fuzz_target!(|job: Job| {
    let language = if job.bash { Language::Bash } else { Language::Python };
    let inputs = Inputs {
        args: job.args,
        env: job.env,
        stdin: job.stdin,
        files: job
            .files
            .into_iter()
            .map(|(name, content)| InputFile::new(name, content))
            .collect(),
    };
    let config = SandboxConfig::default();
    let frame = Frame::for_job(language, &job.code, &inputs, job.wall_ms, &config, job.with_packages);
    // Only a header past 4 GiB is refused, which no fuzz input reaches.
    let mut bytes = frame.encode().expect("a frame encodes");
    bytes.extend_from_slice(&inputs.stdin);
    let (decoded, rest) = Frame::decode(&bytes).expect("an encoded frame decodes");
    assert_eq!(decoded.language, language);
    assert_eq!(decoded.code, job.code);
    assert_eq!(decoded.args, inputs.args);
    assert_eq!(decoded.files, inputs.files, "every file, in order, with its bytes");
    assert_eq!(decoded.wall_ms, job.wall_ms);
    assert_eq!(rest, inputs.stdin.as_slice());
    if job.with_packages {
        // The job's own variables win over the packages' defaults.
        for (name, value) in &inputs.env {
            assert_eq!(decoded.env.get(name), Some(value));
        }
    } else {
        assert_eq!(decoded.env, inputs.env);
        assert!(decoded.path.is_empty());
    }
    assert_eq!(decoded, frame);
});
