//! What gVisor's own kernel says of a sandbox, asked through the engine.
//!
//! Under gVisor the host sees gVisor's processes, never the program's: it cannot read the
//! sandbox's `/tmp` (a tmpfs inside gVisor's kernel, which enforces its size but shows the host
//! nothing) nor count the program's processes (zombies included, which gVisor bounds with
//! `RLIMIT_NPROC`). Without a look inside, a full `/tmp` or a pile of zombies would run on to
//! the wall time and be reported as a timeout: a false result.
//!
//! So every 3 s, from the third second of a run on (a short run never pays for it), the
//! executor asks gVisor's kernel through `docker exec`: `statfs` of `/tmp` and the number of
//! processes in `/proc`. The look runs as root inside gVisor (PID 1's user there), which the
//! program, another user without capabilities, can neither signal nor trace; what it prints
//! comes from gVisor's kernel, and only the engine's stream of that exec carries it. A program
//! can only make a look fail (by exhausting what an exec needs), which then says nothing:
//! the other limits and the wall time still hold.

use crate::docker::ContainerEngine;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often gVisor's kernel is asked, and how long after the start it is asked first. A look
/// is a `runsc exec` beside the engine's own `runsc events` for its statistics, and under load
/// a look a second was seen to hold those back for seconds: every 3 s leaves them room.
pub const LOOK_EVERY: Duration = Duration::from_secs(3);
/// A look that takes longer is given up (the next one is due anyway).
const LOOK_TIMEOUT: Duration = Duration::from_secs(3);
/// The look: the tmpfs's size and free space in blocks, its block size, then the number of
/// entries of `/proc` that are processes (the shell counts itself: one is taken off).
const LOOK: &str = "stat -f -c '%b %f %S' /tmp && set -- /proc/[0-9]* && echo $#";
/// Most output a look may give (a few numbers); more is not a look's.
const MAX_OUTPUT: usize = 256;

/// One answer of gVisor's kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inside {
    /// Bytes used and size of `/tmp`.
    pub disk: (u64, u64),
    /// The program's processes, zombies included, with PID 1.
    pub processes: u32,
}

/// Asks gVisor's kernel about container `id` every [`LOOK_EVERY`] until aborted; the latest
/// answer is in the receiver (`None` until one came). `host_pids` is the sandbox's pids cgroup
/// on the host, when visible, and the threads it may hold for a look to start: past them the
/// program already holds more processes than its limit (a pids violation the executor reads
/// from that cgroup), and the engine's own limit is near.
pub fn follow(
    engine: &ContainerEngine,
    id: &str,
    host_pids: Option<(PathBuf, u64)>,
    helpers: u32,
) -> (tokio::sync::watch::Receiver<Option<Inside>>, tokio::task::AbortHandle) {
    let (send, latest) = tokio::sync::watch::channel(None);
    let (engine, id) = (engine.clone(), id.to_owned());
    let task = tokio::spawn(async move {
        let mut every = tokio::time::interval_at(tokio::time::Instant::now() + LOOK_EVERY, LOOK_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            // A look is a new process in the sandbox, and so new host threads of gVisor's. Once
            // the host refuses gVisor a thread the sandbox dies at once (a pids violation), but
            // not while a `docker exec` is being set up there: it stalls for about 30 s first.
            // Looks stop where the threads pass what the program's limit needs,
            // well below the engine's limit, and are themselves a pids violation.
            if let Some((cgroup, allowed)) = &host_pids
                && holds_more_than(cgroup, *allowed)
            {
                continue;
            }
            if let Some(inside) = look_once(&engine, &id, helpers).await {
                send.send_replace(Some(inside));
            }
        }
    });
    (latest, task.abort_handle())
}

/// One look, given up after [`LOOK_TIMEOUT`]; the program's processes leave out `helpers`,
/// Airlock's own there (a read-only run's relay). `None` when the look failed or took too long
/// (logged: under load a look was seen to take seconds).
pub async fn look_once(engine: &ContainerEngine, id: &str, helpers: u32) -> Option<Inside> {
    let started = std::time::Instant::now();
    match tokio::time::timeout(LOOK_TIMEOUT, look(engine, id)).await {
        Ok(Ok(inside)) => {
            tracing::debug!(container = %id, took_ms = started.elapsed().as_millis() as u64, ?inside, "looked inside gVisor");
            let processes = inside.processes.saturating_sub(helpers);
            Some(Inside { processes, ..inside })
        }
        Ok(Err(error)) => {
            tracing::info!(container = %id, %error, "looking inside gVisor failed");
            None
        }
        Err(_) => {
            tracing::info!(container = %id, "looking inside gVisor took longer than {LOOK_TIMEOUT:?}; given up");
            None
        }
    }
}

/// Whether a pids cgroup holds more than `allowed` tasks.
fn holds_more_than(cgroup: &Path, allowed: u64) -> bool {
    std::fs::read_to_string(cgroup.join("pids.current"))
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .is_some_and(|current| current > allowed)
}

/// One look through `docker exec`.
async fn look(engine: &ContainerEngine, id: &str) -> Result<Inside, String> {
    let exec = engine
        .docker
        .create_exec(
            id,
            CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(false),
                cmd: Some(vec!["/bin/sh", "-c", LOOK]),
                env: Some(vec!["PATH=/usr/bin:/bin"]),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let StartExecResults::Attached { mut output, .. } = engine
        .docker
        .start_exec(&exec.id, None::<StartExecOptions>)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Err("the engine started the look detached".into());
    };
    let mut text = Vec::new();
    while let Some(item) = output.next().await {
        if let LogOutput::StdOut { message } = item.map_err(|e| e.to_string())? {
            text.extend_from_slice(&message);
            if text.len() > MAX_OUTPUT {
                return Err("the look printed more than a few numbers".into());
            }
        }
    }
    parse(&String::from_utf8_lossy(&text))
        .ok_or_else(|| format!("unreadable look: {:?}", String::from_utf8_lossy(&text)))
}

/// Reads the look's two lines: `BLOCKS FREE BLOCK_SIZE` and the count of `/proc` entries.
fn parse(text: &str) -> Option<Inside> {
    let mut lines = text.lines();
    let mut numbers = lines.next()?.split_whitespace().map(|n| n.parse::<u64>().ok());
    let (blocks, free, block_size) = (numbers.next()??, numbers.next()??, numbers.next()??);
    if numbers.next().is_some() || block_size == 0 {
        return None;
    }
    let listed: u32 = lines.next()?.trim().parse().ok()?;
    if lines.next().is_some() {
        return None;
    }
    let size = blocks.checked_mul(block_size)?;
    let used = blocks.checked_sub(free)?.checked_mul(block_size)?;
    Some(Inside {
        disk: (used, size),
        // The look's shell is one of the processes listed.
        processes: listed.checked_sub(1)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_is_read_strictly() {
        assert_eq!(
            parse("2048 512 4096\n63\n"),
            Some(Inside {
                disk: (1536 * 4096, 2048 * 4096),
                processes: 62
            })
        );
        for bad in [
            "",
            "2048 512 4096\n",
            "2048 512\n63\n",
            "2048 512 4096 1\n63\n",
            "2048 4096 4096\n63\n",
            "2048 512 0\n63\n",
            "2048 512 4096\n63\n64\n",
            "2048 512 4096\n0\n",
            "x 512 4096\n63\n",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
