//! `airlock audit ...`: the operator's view of the audit log. Everything but `tail -f` reads the
//! store directly, so it works while the stack is stopped.

use crate::home::Home;
use airlock_auditlog::export::{MANIFEST, Manifest, export};
use airlock_auditlog::hash::Hash;
use airlock_auditlog::merkle::verify_consistency;
use airlock_auditlog::proof::{HEADER as TLOG_PROOF_HEADER, TlogProof};
use airlock_auditlog::reader::{LogReader, TileReader};
use airlock_auditlog::replay::{Filter, ReplayItem, parse_since, replay};
use airlock_auditlog::store::Store;
use airlock_auditlog::trust::{KeyConfig, KeySet, TrustedKey};
use airlock_auditlog::verify::{VerifyError, VerifyOptions, verify};
use airlock_auditlog::{Entry, SignedCheckpoint};
use airlock_protocol::{SigningKey, VerifierKey};
use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum AuditCommand {
    /// Check the whole log: every entry hash, the hash chain, every tile, the root, the
    /// checkpoint signatures and the blobs. Exits non-zero naming the first bad entry or object:
    /// 1 damaged or tampered with, 3 signatures, 4 history (rollback, fork), 5 the store could
    /// not be read (nothing concluded).
    Verify {
        #[command(flatten)]
        log: LogArgs,
        /// A checkpoint seen earlier: the log must be consistent with it (catches truncation,
        /// rollback and forks).
        #[arg(long)]
        trusted_checkpoint: Option<PathBuf>,
        /// Write the verified checkpoint here, to pass as --trusted-checkpoint next time.
        #[arg(long)]
        save_checkpoint: Option<PathBuf>,
        /// Skip reading every blob.
        #[arg(long)]
        skip_blobs: bool,
        /// Print one JSON object (`ok`, and `kind`, `location`, `reason`, `exit` on failure).
        #[arg(long)]
        json: bool,
    },
    /// Events in log order, with a request's code and the diff to the request it revises.
    Replay {
        #[command(flatten)]
        log: LogArgs,
        #[arg(long)]
        request: Option<String>,
        /// Event kind (submitted, assessed, decided, output, terminal, refused, malformed, ...).
        #[arg(long)]
        kind: Option<String>,
        /// Unix ms, a duration back from now (30m, 2h, 7d), or a UTC date (2026-11-22T10:00Z).
        #[arg(long)]
        since: Option<String>,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// The last entries; with -f, follow new ones live (from the audit stream).
    Tail {
        #[command(flatten)]
        log: LogArgs,
        #[arg(short = 'n', long, default_value_t = 10)]
        lines: u64,
        #[arg(short = 'f', long)]
        follow: bool,
        #[arg(long)]
        json: bool,
    },
    /// Inclusion and consistency proofs (RFC 6962), from the store's tiles.
    #[command(subcommand)]
    Prove(ProveCommand),
    /// Checks a proof: a C2SP tlog-proof receipt, or a consistency proof from `prove consistency`.
    VerifyProof {
        /// The proof file (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        keys: KeyArgs,
    },
    /// The auditor's verifier keys in the signed-note format (name+keyid+base64): the current
    /// one first, then those retired by `airlock keys rotate auditor`, with their dates, as the
    /// key set file `keys/auditor.keys` holds them (`--keys` and both clients read this).
    Pubkey,
    /// A self-contained copy of the log (objects, keys, checkpoint) for someone outside.
    Export {
        /// Destination directory (should be empty).
        dest: PathBuf,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Removes entry bodies and blobs older than the retention; tiles and checkpoints stay
    /// verifiable.
    Prune {
        /// Retention: 30d, 12h, ...
        #[arg(long)]
        older_than: String,
        #[command(flatten)]
        log: LogArgs,
    },
}

#[derive(clap::Subcommand)]
pub enum ProveCommand {
    /// A tlog-proof receipt that entry SEQ is in the current checkpoint.
    Inclusion {
        seq: u64,
        #[command(flatten)]
        log: LogArgs,
    },
    /// A consistency proof between tree sizes OLD and NEW (JSON with both roots).
    Consistency {
        old: u64,
        new: u64,
        #[command(flatten)]
        log: LogArgs,
    },
    /// A receipt for a request's entry of a kind (an execution result, an override answer, ...).
    Request {
        id: String,
        #[arg(long, default_value = "terminal")]
        kind: String,
        #[command(flatten)]
        log: LogArgs,
    },
}

#[derive(clap::Args, Clone, Debug, Default)]
pub struct LogArgs {
    /// The store: a directory, file:///dir, or s3://bucket/prefix?endpoint=... (default: the
    /// stack's, from airlock.toml, else $AIRLOCK_HOME/audit).
    #[arg(long)]
    store: Option<String>,
    #[command(flatten)]
    keys: KeyArgs,
}

#[derive(clap::Args, Clone, Debug, Default)]
pub struct KeyArgs {
    /// A trusted verifier key (name+keyid+base64); repeatable. Default: the auditor's keys from
    /// airlock.toml, its key set ($AIRLOCK_HOME/keys/auditor.keys) and keys/auditor.pub, or an
    /// export's manifest.
    #[arg(long = "key")]
    keys: Vec<String>,
    /// A key set file (as `airlock audit pubkey` prints it): each retired key is trusted for
    /// what was logged up to its retirement.
    #[arg(long = "keys", value_name = "FILE")]
    key_set: Option<PathBuf>,
    /// The log's origin (default: from the config or the export manifest).
    #[arg(long)]
    origin: Option<String>,
}

/// What a command needs: the store, the origin and the trusted keys.
pub(crate) struct Log {
    pub(crate) store: Store,
    origin: String,
    keys: Vec<TrustedKey>,
}

fn auditor_config(home: &Home) -> anyhow::Result<airlock_auditor::Config> {
    if home.config_file().exists() {
        Ok(airlock_auditor::Config::load(&home.config()?)?)
    } else {
        Ok(airlock_auditor::Config {
            origin: crate::stack::AUDITOR_KEY.1.to_owned(),
            key_file: home.private_key("auditor"),
            ..Default::default()
        })
    }
}

/// The auditor's key set: the config's (beside its key file) and the home's, merged.
fn key_set(home: &Home, config: &airlock_auditor::Config) -> anyhow::Result<KeySet> {
    let mut set = config.key_set()?;
    if let Some(home_set) = KeySet::load(&home.stack().auditor_key_set())? {
        for entry in home_set.entries {
            if set.get(&entry.key).is_none() {
                set.entries.push(entry);
            }
        }
    }
    Ok(set)
}

pub(crate) async fn open_log(home: &Home, args: &LogArgs) -> anyhow::Result<Log> {
    let config = auditor_config(home)?;
    let url = match &args.store {
        Some(url) => url.clone(),
        None if config.store != airlock_auditor::Config::default().store => config.store.clone(),
        None => home.audit_store().display().to_string(),
    };
    let store = Store::open(&url)?;
    let manifest: Option<Manifest> = match store.get(MANIFEST).await? {
        Some(bytes) => Some(serde_json::from_slice(&bytes).context("reading the export manifest")?),
        None => None,
    };
    let (origin, keys) = trust(home, &config, &args.keys, manifest.as_ref())?;
    Ok(Log { store, origin, keys })
}

fn trust(
    home: &Home,
    config: &airlock_auditor::Config,
    args: &KeyArgs,
    manifest: Option<&Manifest>,
) -> anyhow::Result<(String, Vec<TrustedKey>)> {
    let origin = args
        .origin
        .clone()
        .or_else(|| manifest.map(|m| m.origin.clone()))
        .unwrap_or_else(|| config.origin.clone());
    let mut keys = Vec::new();
    if !args.keys.is_empty() || args.key_set.is_some() {
        for key in &args.keys {
            keys.push(TrustedKey::always(
                VerifierKey::parse(key).with_context(|| format!("key {key:?}"))?,
            ));
        }
        if let Some(path) = &args.key_set {
            let set = KeySet::load(path)?.with_context(|| format!("no key set at {}", path.display()))?;
            keys.extend(set.trusted());
        }
        return Ok((origin, keys));
    }
    if let Some(manifest) = manifest {
        for key in &manifest.keys {
            keys.push(TrustedKey::from_config(key)?);
        }
        eprintln!("using the verifier keys of the export manifest: compare them with the keys the operators published");
        return Ok((origin, keys));
    }
    for key in &config.verifier_keys {
        keys.push(TrustedKey::from_config(key)?);
    }
    for key in key_set(home, config)?.trusted() {
        if !keys.iter().any(|k| k.key == key.key) {
            keys.push(key);
        }
    }
    if let Ok(text) = std::fs::read_to_string(home.verifier_key("auditor")) {
        let key = VerifierKey::parse(&text)?;
        if !keys.iter().any(|k| k.key == key) {
            keys.push(TrustedKey::always(key));
        }
    }
    if keys.is_empty() {
        bail!(
            "no verifier key: pass --key name+keyid+base64, or create the stack's keys with `airlock init` ({})",
            home.verifier_key("auditor").display()
        );
    }
    Ok((origin, keys))
}

pub async fn run(cmd: AuditCommand, home: &crate::home::Home) -> anyhow::Result<ExitCode> {
    match cmd {
        AuditCommand::Verify {
            log,
            trusted_checkpoint,
            save_checkpoint,
            skip_blobs,
            json,
        } => verify_command(home, &log, trusted_checkpoint, save_checkpoint, skip_blobs, json).await,
        AuditCommand::Replay {
            log,
            request,
            kind,
            since,
            json,
        } => {
            let log = open_log(home, &log).await?;
            let since_ms = match since {
                Some(s) => Some(
                    parse_since(&s, airlock_protocol::now_ms())
                        .with_context(|| format!("--since {s:?}: not a time, a duration (2h) or a date"))?,
                ),
                None => None,
            };
            let filter = Filter {
                request,
                kind,
                since_ms,
                from_seq: 0,
            };
            let (_, items) = replay(&LogReader::new(log.store), &filter).await?;
            for item in &items {
                print_item(item, json);
            }
            if items.is_empty() && !json {
                eprintln!("no matching entries");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Tail {
            log,
            lines,
            follow,
            json,
        } => tail(home, &log, lines, follow, json).await,
        AuditCommand::Prove(command) => prove(home, command).await,
        AuditCommand::VerifyProof { file, keys } => verify_proof(home, &file, &keys).await,
        AuditCommand::Pubkey => {
            let config = auditor_config(home)?;
            let key = match std::fs::read_to_string(home.verifier_key("auditor")) {
                Ok(text) => VerifierKey::parse(text.trim())?,
                Err(_) => SigningKey::load(&config.key_file)
                    .with_context(|| format!("no auditor key in {}", home.verifier_key("auditor").display()))?
                    .verifier(),
            };
            let mut set = key_set(home, &config)?;
            if set.entries.is_empty() {
                // Never rotated: the one key.
                println!("{key}");
                return Ok(ExitCode::SUCCESS);
            }
            if set.get(&key).is_none() {
                set.add_current(key, airlock_protocol::now_ms());
            }
            // The key set's own lines, without its comments: the current key first.
            for line in set.to_text("").lines().filter(|l| !l.starts_with('#')) {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Export { dest, log } => {
            let log = open_log(home, &log).await?;
            let to = Store::open(&dest.display().to_string())?;
            let keys: Vec<KeyConfig> = log
                .keys
                .iter()
                .map(|k| KeyConfig {
                    key: k.key.to_string(),
                    not_before_ms: k.not_before_ms,
                    not_after_ms: k.not_after_ms,
                })
                .collect();
            let manifest = export(&log.store, &to, &log.origin, keys).await?;
            println!(
                "exported {} objects of {} to {}; check it with: airlock audit verify --store {}",
                manifest.objects,
                log.origin,
                dest.display(),
                dest.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Prune { older_than, log } => {
            let log = open_log(home, &log).await?;
            let now = airlock_protocol::now_ms();
            let before = parse_since(&older_than, now)
                .filter(|_| older_than.ends_with(['s', 'm', 'h', 'd']))
                .context("--older-than takes a duration such as 30d or 12h")?;
            let key_file = current_key_file(home)?;
            let key =
                SigningKey::load(&key_file).with_context(|| format!("the auditor's key {}", key_file.display()))?;
            let trusted: Vec<VerifierKey> = log.keys.iter().map(|k| k.key.clone()).collect();
            let pruned = match airlock_auditlog::prune::prune(&log.store, &log.origin, &key, &trusted, before).await {
                Ok(pruned) => pruned,
                Err(e) => {
                    let kind = e.kind();
                    let what = if kind.is_outage() {
                        "prune INCOMPLETE (the store could not be read; what was removed is covered by its signed mark: run it again)"
                    } else {
                        "prune FAILED"
                    };
                    eprintln!("audit {what} ({kind}): {}", airlock_protocol::error_chain(&e));
                    return Ok(ExitCode::from(kind.exit_code()));
                }
            };
            println!(
                "minimum index {}: removed {} entry bundles and {} blobs; tiles and checkpoints untouched",
                pruned.min_index, pruned.bundles, pruned.blobs
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The key the auditor signs with now: `[auditor] key_file` of the stack's config, else the
/// home's `keys/auditor.key`.
fn current_key_file(home: &Home) -> anyhow::Result<PathBuf> {
    Ok(auditor_config(home)?.key_file)
}

async fn verify_command(
    home: &Home,
    args: &LogArgs,
    trusted: Option<PathBuf>,
    save: Option<PathBuf>,
    skip_blobs: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let log = open_log(home, args).await?;
    let trusted_checkpoint = match trusted {
        Some(path) => Some(std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?),
        None => None,
    };
    let options = VerifyOptions {
        origin: log.origin.clone(),
        keys: log.keys.clone(),
        trusted_checkpoint,
        check_blobs: !skip_blobs,
    };
    match verify(&log.store, &options).await {
        Ok(report) => {
            if let Some(path) = &save {
                std::fs::write(path, &report.checkpoint)?;
            }
            if json {
                let out = serde_json::json!({
                    "ok": true,
                    "origin": log.origin,
                    "size": report.size,
                    "root": report.root.to_base64(),
                    "min_index": report.min_index,
                    "tiles": report.tiles_checked,
                    "blobs": report.blobs_checked,
                    "signers": report.signers,
                    "consistent_with": report.consistent_with,
                });
                println!("{out}");
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "ok: {} entries of {} verified (root {}), {} tiles, {} blobs; signed by {}",
                report.size,
                log.origin,
                report.root,
                report.tiles_checked,
                report.blobs_checked,
                report.signers.join(", ")
            );
            if report.min_index > 0 {
                println!(
                    "entries below {} were pruned; their leaf hashes verified",
                    report.min_index
                );
            }
            if let Some(size) = report.consistent_with {
                println!("consistent with the trusted checkpoint of size {size}");
            }
            if let Some(path) = save {
                println!("checkpoint saved to {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            report_failure(&e, json);
            Ok(ExitCode::from(e.kind.exit_code()))
        }
    }
}

/// Says what went wrong: an outage as one (nothing concluded), anything else as a failed
/// verification of that kind.
fn report_failure(e: &VerifyError, json: bool) {
    let detail = e
        .source
        .as_deref()
        .map(|s| airlock_protocol::error_chain(s))
        .unwrap_or_else(|| e.reason.clone());
    if json {
        let out = serde_json::json!({
            "ok": false,
            "kind": e.kind.as_str(),
            "location": e.location,
            "reason": detail,
            "exit": e.kind.exit_code(),
        });
        println!("{out}");
    } else if e.is_outage() {
        eprintln!(
            "audit log verification INCOMPLETE: {} could not be read from the store ({detail}); nothing was concluded about the log: try again once the store answers",
            e.location
        );
    } else {
        eprintln!(
            "audit log verification FAILED ({}) at {}: {}",
            e.kind, e.location, e.reason
        );
    }
}

fn print_item(item: &ReplayItem, json: bool) {
    if json {
        println!("{}", item.to_json());
    } else {
        print!("{}", item.to_text());
    }
}

fn print_entry(seq: u64, entry: Entry, json: bool) {
    let item = ReplayItem {
        seq,
        event: entry.event.clone(),
        content: Vec::new(),
        diff: None,
        entry,
    };
    print_item(&item, json);
}

async fn tail(home: &Home, args: &LogArgs, lines: u64, follow: bool, json: bool) -> anyhow::Result<ExitCode> {
    let log = open_log(home, args).await?;
    let reader = LogReader::new(log.store.clone());
    // Subscribe first when following, so nothing falls between the store and the stream.
    let mut live = if follow {
        let client = crate::stack::connect(home, "operator").await?;
        Some(client.subscribe("airlock.audit.entry.>").await?)
    } else {
        None
    };
    let mut last = None;
    if let Some((signed, _)) = reader.checkpoint().await? {
        let size = signed.checkpoint.size;
        for (seq, entry) in reader.entries(size.saturating_sub(lines), size, size).await? {
            print_entry(seq, entry, json);
            last = Some(seq);
        }
    }
    if let Some(subscription) = live.as_mut() {
        while let Some(message) = subscription.next().await {
            match Entry::decode(&message.payload) {
                Ok(entry) if last.is_none_or(|l| entry.seq > l) => {
                    last = Some(entry.seq);
                    print_entry(entry.seq, entry, json);
                }
                Ok(_) => {}
                Err(e) => eprintln!("unreadable entry on {}: {e}", message.subject),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn current_checkpoint(log: &Log) -> anyhow::Result<SignedCheckpoint> {
    let (signed, _) = LogReader::new(log.store.clone())
        .checkpoint()
        .await?
        .context("the log has no checkpoint yet")?;
    let keys: Vec<VerifierKey> = log.keys.iter().map(|k| k.key.clone()).collect();
    signed
        .verify(&log.origin, &keys)
        .context("the store's checkpoint does not verify: run `airlock audit verify`")?;
    Ok(signed)
}

async fn inclusion_receipt(log: &Log, seq: u64) -> anyhow::Result<String> {
    let checkpoint = current_checkpoint(log).await?;
    let size = checkpoint.checkpoint.size;
    if seq >= size {
        bail!("entry {seq} is not in the log (it has {size} entries)");
    }
    let entry = LogReader::new(log.store.clone()).entry_bytes(seq, size).await?;
    let hashes = TileReader::new(&log.store, size).inclusion_proof(seq).await?;
    let proof = TlogProof {
        extra: Some(entry),
        index: seq,
        hashes,
        checkpoint,
    };
    Ok(proof.to_text())
}

async fn prove(home: &Home, command: ProveCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProveCommand::Inclusion { seq, log } => {
            let log = open_log(home, &log).await?;
            print!("{}", inclusion_receipt(&log, seq).await?);
        }
        ProveCommand::Request { id, kind, log } => {
            let log = open_log(home, &log).await?;
            let filter = Filter {
                request: Some(id.clone()),
                kind: Some(kind.clone()),
                ..Default::default()
            };
            let (_, items) = replay(&LogReader::new(log.store.clone()), &filter).await?;
            let item = items
                .last()
                .with_context(|| format!("request {id} has no {kind} entry"))?;
            print!("{}", inclusion_receipt(&log, item.seq).await?);
        }
        ProveCommand::Consistency { old, new, log } => {
            let log = open_log(home, &log).await?;
            let checkpoint = current_checkpoint(&log).await?;
            let size = checkpoint.checkpoint.size;
            if new > size || old > new || old == 0 {
                bail!("need 0 < OLD <= NEW <= {size} (the current size)");
            }
            let mut tiles = TileReader::new(&log.store, size);
            let old_root = tiles.root_at(old).await?;
            let new_root = tiles.root_at(new).await?;
            let proof = TileReader::new(&log.store, new).consistency_proof(old).await?;
            let json = serde_json::json!({
                "format": "airlock.consistency-proof/v1",
                "origin": log.origin,
                "old_size": old,
                "new_size": new,
                "old_root": old_root.to_base64(),
                "new_root": new_root.to_base64(),
                "proof": proof.iter().map(Hash::to_base64).collect::<Vec<_>>(),
                "new_checkpoint": (new == size).then(|| checkpoint.to_text()),
            });
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn verify_proof(home: &Home, file: &PathBuf, args: &KeyArgs) -> anyhow::Result<ExitCode> {
    let text = if file.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        s
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?
    };
    let config = auditor_config(home)?;
    let (origin, keys) = trust(home, &config, args, None)?;
    let keys: Vec<VerifierKey> = keys.into_iter().map(|k| k.key).collect();
    if text.starts_with(TLOG_PROOF_HEADER) {
        let proof = TlogProof::parse(text.as_bytes())?;
        match proof.verify(None, &origin, &keys) {
            Ok(entry) => {
                let entry = Entry::decode(&entry)?;
                println!(
                    "ok: entry {} ({} of request {}) is in the log {} of size {} signed by the auditor",
                    proof.index, entry.kind, entry.request_id, origin, proof.checkpoint.checkpoint.size
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("proof verification FAILED: {e}");
                Ok(ExitCode::from(1))
            }
        }
    } else {
        let json: serde_json::Value =
            serde_json::from_str(&text).context("neither a tlog-proof nor a consistency proof")?;
        let field = |name: &str| {
            json.get(name)
                .with_context(|| format!("consistency proof without {name}"))
        };
        let size = |name: &str| -> anyhow::Result<u64> { field(name)?.as_u64().with_context(|| name.to_string()) };
        let hash = |name: &str| -> anyhow::Result<Hash> {
            Hash::from_base64(field(name)?.as_str().unwrap_or_default())
                .with_context(|| format!("{name} is not a hash"))
        };
        let (old, new) = (size("old_size")?, size("new_size")?);
        let (old_root, new_root) = (hash("old_root")?, hash("new_root")?);
        let proof: Vec<Hash> = field("proof")?
            .as_array()
            .context("proof is not a list")?
            .iter()
            .map(|h| Hash::from_base64(h.as_str().unwrap_or_default()).context("a proof hash"))
            .collect::<anyhow::Result<_>>()?;
        if let Err(e) = verify_consistency(old, new, &proof, old_root.as_bytes(), new_root.as_bytes()) {
            eprintln!("proof verification FAILED: {e}");
            return Ok(ExitCode::from(1));
        }
        // The roots are only as good as the checkpoints that sign them.
        if let Some(text) = json.get("new_checkpoint").and_then(|v| v.as_str()) {
            let signed = SignedCheckpoint::parse(text.as_bytes())?;
            if let Err(e) = signed.verify(&origin, &keys) {
                eprintln!("proof verification FAILED: its checkpoint: {e}");
                return Ok(ExitCode::from(1));
            }
            if signed.checkpoint.size != new || signed.checkpoint.root != new_root {
                eprintln!("proof verification FAILED: the checkpoint is not the proof's new tree");
                return Ok(ExitCode::from(1));
            }
            println!("ok: the tree of size {old} (root {old_root}) is a prefix of the signed tree of size {new}");
        } else {
            println!(
                "ok: the tree of size {old} (root {old_root}) is a prefix of the tree of size {new} (root {new_root}); check both roots against signed checkpoints"
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
