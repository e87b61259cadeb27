//! What the sandbox is configured with. Every field has a default, so an empty `[executor]`
//! section (or `SandboxConfig::default()`) gives a working, strict sandbox.

use airlock_bus::runner::legacy_duration;
use airlock_protocol::{Language, Level, Limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

const MIB: u64 = 1024 * 1024;

/// The default image, built by [`crate::ensure_image`] from `services/executor/image/recipe.sh`.
pub const DEFAULT_IMAGE: &str = "airlock-sandbox:latest";

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// The Docker endpoint (`unix:///var/run/docker.sock`, `tcp://...`); unset: `DOCKER_HOST` or
    /// the local socket.
    pub docker_host: Option<String>,
    /// Longest wait for the engine to answer one API call (not the run itself).
    #[serde(with = "humantime_serde")]
    pub docker_timeout: Duration,
    /// The image for each language; one image carries python3 and bash.
    pub images: Images,
    /// Names this executor's containers and networks (label `airlock.executor`), so that a
    /// restarted executor finds and removes what a crashed one left. Executors sharing a Docker
    /// engine need different names.
    pub instance: String,
    /// Extra labels put on every container and network.
    pub labels: BTreeMap<String, String>,
    /// The quota of each trust level. They define the warm pool's classes, so keep them equal
    /// to the gate's quotas: a job whose limits match no class runs on the cold path.
    /// Not a key of `[executor]`: the top-level `[quotas]` section, shared with the gate.
    #[serde(skip)]
    pub quotas: Quotas,
    pub pool: PoolConfig,
    pub host: HostConfig,
    pub limits: LimitPolicy,
    pub packages: PackagesConfig,
    pub egress: EgressSettings,
    pub runtimes: RuntimesConfig,
    /// `[executor.observe]`: the kernel's record of each run.
    pub observe: crate::observation::ObserveConfig,
    // The key of the previous release, read with a warning (see `read_legacy_keys`).
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub docker_timeout_secs: Option<u64>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            docker_host: None,
            docker_timeout: Duration::from_secs(600),
            images: Images::default(),
            instance: "local".to_owned(),
            labels: BTreeMap::new(),
            quotas: Quotas::default(),
            pool: PoolConfig::default(),
            host: HostConfig::default(),
            limits: LimitPolicy::default(),
            packages: PackagesConfig::default(),
            egress: EgressSettings::default(),
            runtimes: RuntimesConfig::default(),
            observe: crate::observation::ObserveConfig::default(),
            docker_timeout_secs: None,
        }
    }
}

impl SandboxConfig {
    /// Reads the duration keys of the previous release (numbers of seconds or milliseconds),
    /// with a warning naming the new key.
    pub fn read_legacy_keys(&mut self) {
        legacy_duration(
            self.docker_timeout_secs.take(),
            SECOND,
            &mut self.docker_timeout,
            "executor.docker_timeout_secs",
            "executor.docker_timeout",
        );
        let pool = &mut self.pool;
        legacy_duration(
            pool.max_age_secs.take(),
            SECOND,
            &mut pool.max_age,
            "executor.pool.max_age_secs",
            "executor.pool.max_age",
        );
        legacy_duration(
            pool.trim_after_secs.take(),
            SECOND,
            &mut pool.trim_after,
            "executor.pool.trim_after_secs",
            "executor.pool.trim_after",
        );
        let limits = &mut self.limits;
        legacy_duration(
            limits.grace_ms.take(),
            MS,
            &mut limits.grace,
            "executor.limits.grace_ms",
            "executor.limits.grace",
        );
        legacy_duration(
            limits.park_ms.take(),
            MS,
            &mut limits.park,
            "executor.limits.park_ms",
            "executor.limits.park",
        );
        legacy_duration(
            limits.sample_ms.take(),
            MS,
            &mut limits.sample,
            "executor.limits.sample_ms",
            "executor.limits.sample",
        );
        legacy_duration(
            limits.watch_ms.take(),
            MS,
            &mut limits.watch,
            "executor.limits.watch_ms",
            "executor.limits.watch",
        );
        let egress = &mut self.egress;
        legacy_duration(
            egress.upstream_timeout_secs.take(),
            SECOND,
            &mut egress.upstream_timeout,
            "executor.egress.upstream_timeout_secs",
            "executor.egress.upstream_timeout",
        );
    }

    pub fn image_for(&self, language: Language) -> &str {
        match language {
            Language::Python => &self.images.python,
            Language::Bash => &self.images.bash,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Images {
    pub python: String,
    pub bash: String,
}

impl Default for Images {
    fn default() -> Self {
        Self {
            python: DEFAULT_IMAGE.to_owned(),
            bash: DEFAULT_IMAGE.to_owned(),
        }
    }
}

/// The limits of each trust level: one definition, shared with the gate (`[quotas]`).
pub use airlock_protocol::Quotas;

/// `[executor.runtimes]`: the container runtimes this executor offers. Each must be registered
/// with the engine under its own name (`runsc` as gVisor, see `ops/install-deps`); the executor
/// does not start when one is missing, and a decision naming a runtime not offered is refused,
/// never run under another.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimesConfig {
    pub available: Vec<airlock_protocol::Runtime>,
    /// The engine's name for gVisor registered to connect to host unix sockets (`runsc
    /// --host-uds=open`), used only for read-only runs under runsc: the run's proxy is a unix
    /// socket bind-mounted into a container with no network interface (docs/sandbox.md). Checked
    /// at start whenever runsc is offered; every other run under runsc uses the plain `runsc`.
    pub runsc_read_only: String,
}

/// `[executor.runtimes] runsc_read_only` by default (`ops/install-deps` registers it).
pub const RUNSC_READ_ONLY: &str = "runsc-read-only";

impl Default for RuntimesConfig {
    fn default() -> Self {
        RuntimesConfig {
            available: vec![airlock_protocol::Runtime::Runc],
            runsc_read_only: RUNSC_READ_ONLY.to_owned(),
        }
    }
}

impl RuntimesConfig {
    /// Every name the engine must have registered: each runtime offered, and gVisor's
    /// read-only registration beside runsc.
    pub fn engine_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.available.iter().map(|r| r.as_str()).collect();
        if self.available.contains(&airlock_protocol::Runtime::Runsc) {
            names.push(&self.runsc_read_only);
        }
        names
    }
}

/// The warm pool: pre-started containers, per image and quota class, each used once.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolConfig {
    pub enabled: bool,
    /// Warm containers kept per class even when idle (the pool grows above it with load).
    pub min_idle: usize,
    /// Most warm containers per class.
    pub max_idle: usize,
    /// Most warm containers in all, whatever the classes.
    pub max_total: usize,
    /// A warm container older than this is replaced (it also exits by itself a little later,
    /// so one left by a dead executor does not live on).
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    /// A class unused for this long shrinks back to `min_idle`.
    #[serde(with = "humantime_serde")]
    pub trim_after: Duration,
    /// Containers started at once when refilling (start-up costs CPU that running jobs want).
    pub warmup_parallelism: usize,
    /// How long after a run ends starting, releasing and removing containers wait (at most a
    /// bound), so that the engine's work does not share the CPU with the run's end and receipt
    /// (`quiet.rs`); zero starts them at once.
    #[serde(with = "humantime_serde")]
    pub upkeep_settle: Duration,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub max_age_secs: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub trim_after_secs: Option<u64>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_idle: 1,
            max_idle: 4,
            max_total: 8,
            max_age: Duration::from_secs(60),
            trim_after: Duration::from_secs(30),
            warmup_parallelism: 2,
            upkeep_settle: crate::quiet::SETTLE,
            max_age_secs: None,
            trim_after_secs: None,
        }
    }
}

/// What the host keeps for itself, and how the executor watches containers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct HostConfig {
    /// Memory never granted to sandboxes (for the host, Docker and Airlock itself).
    pub reserve_memory_bytes: u64,
    /// Most jobs running at once; unset: one per core.
    pub max_concurrent: Option<usize>,
    /// Where the cgroup v1 hierarchies are mounted, to read usage straight from the kernel.
    pub cgroup_root: PathBuf,
    /// The host's /proc, to see a container's writable space and processes from outside.
    pub proc_root: PathBuf,
    /// `auto` reads cgroup files when they are there and falls back to the Docker stats API;
    /// `api` always uses the API (an executor without the host's /proc and /sys).
    pub observe: Observe,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            reserve_memory_bytes: 512 * MIB,
            max_concurrent: None,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            proc_root: PathBuf::from("/proc"),
            observe: Observe::Auto,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observe {
    Auto,
    Api,
}

/// How limits are applied beyond the job's own numbers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitPolicy {
    /// Ceiling on every job, whatever its decision says (the executor only ever lowers).
    pub ceiling: Limits,
    /// After the wall time, the container's own supervisor kills the program this much later:
    /// the safety net when the executor is gone.
    #[serde(with = "humantime_serde")]
    pub grace: Duration,
    /// Longest the container waits for the executor to read its final state after the program
    /// ended.
    #[serde(with = "humantime_serde")]
    pub park: Duration,
    /// How often usage samples are published while code runs.
    #[serde(with = "humantime_serde")]
    pub sample: Duration,
    /// How often the kernel's counters are read to catch violations.
    #[serde(with = "humantime_serde")]
    pub watch: Duration,
    /// Mount the writable tmpfs `noexec` (programs cannot run binaries they write).
    pub tmpfs_noexec: bool,
    /// Size of /dev/shm (POSIX semaphores for multiprocessing); 0 mounts none.
    pub shm_bytes: u64,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub grace_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub park_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub sample_ms: Option<u64>,
    #[doc(hidden)]
    #[serde(default, skip_serializing)]
    pub watch_ms: Option<u64>,
}

impl Default for LimitPolicy {
    fn default() -> Self {
        Self {
            ceiling: Limits {
                memory_bytes: 4096 * MIB,
                cpu_millis: 4000,
                pids: 1024,
                wall_ms: 600_000,
                output_bytes: 16 * MIB,
                disk_bytes: 1024 * MIB,
                open_files: 4096,
            },
            grace: Duration::from_secs(2),
            park: Duration::from_secs(10),
            sample: Duration::from_millis(250),
            watch: Duration::from_millis(20),
            tmpfs_noexec: true,
            shm_bytes: MIB,
            grace_ms: None,
            park_ms: None,
            sample_ms: None,
            watch_ms: None,
        }
    }
}

/// The package steps (resolving, installing): containers with no user code, whose only way
/// out is the egress proxy (or no network at all), and how package code is rated.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct PackagesConfig {
    /// The wheel store and installed package sets, one directory per set (mounted read-only
    /// into the program's container). Must be on the Docker host.
    pub cache_dir: PathBuf,
    /// Limits of the resolve and install containers (their tmpfs holds the files, so
    /// `disk_bytes` caps a package set's size).
    pub install_limits: Limits,
    /// Wheels only: no package's build code ever runs. Must stay `true`: a source distribution
    /// runs its build code at install, before anyone could rate it.
    pub only_binary: bool,
    /// How long a resolution of the same specs is reused: a new release on the index changes
    /// what a name resolves to, and is seen after at most this long.
    #[serde(with = "humantime_serde")]
    pub resolve_ttl: Duration,
    /// Resolutions this executor runs at once (each is a container and a download).
    pub max_resolving: usize,
    /// The level of a wheel carrying native code, which nobody can read (docs/sandbox.md).
    pub native_level: Level,
    /// Wheel digests (`sha256:<hex>`) the operators vouch for: their native code alone does
    /// not raise the level.
    pub trusted_wheels: Vec<String>,
}

impl Default for PackagesConfig {
    fn default() -> Self {
        Self {
            cache_dir: std::env::temp_dir().join("airlock-packages"),
            install_limits: Limits {
                memory_bytes: 1024 * MIB,
                cpu_millis: 1000,
                pids: 128,
                wall_ms: 180_000,
                output_bytes: 64 * 1024,
                disk_bytes: 512 * MIB,
                open_files: 1024,
            },
            only_binary: true,
            resolve_ttl: Duration::from_secs(600),
            max_resolving: 2,
            native_level: Level::High,
            trusted_wheels: Vec::new(),
        }
    }
}

impl PackagesConfig {
    /// How package code is rated under this configuration.
    pub fn rating_policy(&self) -> crate::package_rating::RatingPolicy {
        crate::package_rating::RatingPolicy {
            native_level: self.native_level,
            trusted_wheels: self.trusted_wheels.clone(),
            // A wheel that unpacks to more than an install may hold could not be installed.
            max_unpacked_bytes: self.install_limits.disk_bytes,
            ..Default::default()
        }
    }
}

/// The egress proxy of the package-install step: `airlock_egress::EgressConfig`, the keys a
/// standalone `airlock-egress` reads, plus `proxy` (where an already-running one is).
pub type EgressSettings = EgressConfig;

pub use airlock_egress::EgressConfig;
