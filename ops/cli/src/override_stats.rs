//! `airlock override stats`: approval health over a window of the audit log (see
//! `airlock_auditlog::approval_stats`), for an operator who wants to see approval fatigue
//! coming: how often people are asked, how they answer, how long they take, who carries it.

use crate::audit::{LogArgs, open_log};
use crate::home::Home;
use airlock_auditlog::LogReader;
use airlock_auditlog::approval_stats::{ApprovalStats, Durations, approval_stats};
use airlock_auditlog::replay::parse_since;
use airlock_protocol::text::visible_line;
use anyhow::Context as _;
use std::process::ExitCode;

#[derive(Clone, Debug, clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    log: LogArgs,
    /// The window's start: a duration back from now (24h, 7d), Unix ms, or a UTC date
    /// (2026-11-22T10:00Z).
    #[arg(long, default_value = "7d")]
    since: String,
    /// The figures as one JSON object.
    #[arg(long)]
    json: bool,
}

pub async fn stats(home: &Home, args: StatsArgs) -> anyhow::Result<ExitCode> {
    let now = airlock_protocol::now_ms();
    let since_ms = parse_since(&args.since, now)
        .with_context(|| format!("--since {:?}: not a time, a duration (7d) or a date", args.since))?;
    let log = open_log(home, &args.log).await?;
    let stats = approval_stats(&LogReader::new(log.store.clone()), since_ms)
        .await
        .with_context(|| format!("reading the audit log in {}", log.store.url()))?;
    if args.json {
        println!("{}", serde_json::to_string(&stats)?);
    } else {
        print!("{}", render(&stats, now));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(s: &ApprovalStats, now_ms: i64) -> String {
    let mut out = format!(
        "Approvals since {} ({} ago), from the audit log ({} of {} entries read)\n",
        rfc3339(s.since_ms),
        duration((now_ms - s.since_ms).max(0)),
        s.entries,
        s.log_size
    );
    let percent = |part: u64, whole: u64| {
        if whole == 0 {
            "-".to_owned()
        } else {
            format!("{:.0}%", part as f64 * 100.0 / whole as f64)
        }
    };
    out += &format!(
        "  runs decided         {:>6}   by policy {}, by people {}, by remembered approvals {}, expired {}\n",
        s.decided, s.by_policy, s.by_humans, s.by_remembered, s.expired
    );
    out += &format!(
        "  people asked         {:>6}   {} per 100 runs\n",
        s.prompts, s.prompts_per_100_runs
    );
    out += &format!(
        "  decided by people    {:>6}   approved {} ({}), denied {} ({})\n",
        s.by_humans,
        s.approved,
        percent(s.approved, s.by_humans),
        s.denied,
        percent(s.denied, s.by_humans)
    );
    out += &format!(
        "  expired unanswered   {:>6}   {} of prompts\n",
        s.expired,
        percent(s.expired, s.prompts)
    );
    out += &format!(
        "  escalated            {:>6}   {} of prompts\n",
        s.escalated,
        percent(s.escalated, s.prompts)
    );
    out += &format!(
        "  refused at the chat  {:>6}   (outsiders, bad signatures, replays)\n",
        s.refused_at_edge
    );
    for (system, refused) in &s.chat_refusals {
        out += &format!(
            "  not shown in {:<8}{:>6}   (the chat refused the message for good)\n",
            visible_line(system),
            refused
        );
    }
    out += &format!("  time to first answer {}\n", spread(&s.time_to_first_answer));
    out += &format!("  time to decision     {}\n", spread(&s.time_to_decision));
    if !s.approvers.is_empty() {
        out += "  per approver (prompted, approved, denied, answers that did not count, time to answer)\n";
        let width = s
            .approvers
            .keys()
            .map(|k| visible_line(k).chars().count())
            .max()
            .unwrap_or(0);
        for (who, a) in &s.approvers {
            out += &format!(
                "    {:<width$}  prompted {:>4}  approved {:>4}  denied {:>4}  not counted {:>3}  {}\n",
                visible_line(who),
                a.prompted,
                a.approved,
                a.denied,
                a.not_counted,
                spread(&a.time_to_answer)
            );
        }
    }
    out
}

fn spread(d: &Durations) -> String {
    match (d.p50_ms, d.p90_ms, d.max_ms) {
        (Some(p50), Some(p90), Some(max)) => format!(
            "p50 {}, p90 {}, max {} (of {})",
            duration(p50),
            duration(p90),
            duration(max),
            d.count
        ),
        _ => "-".to_owned(),
    }
}

/// A duration to the second (to the millisecond under one second), as humantime writes it.
fn duration(ms: i64) -> String {
    let ms = u64::try_from(ms).unwrap_or(0);
    let rounded = if ms < 1000 { ms } else { (ms + 500) / 1000 * 1000 };
    humantime::format_duration(std::time::Duration::from_millis(rounded)).to_string()
}

fn rfc3339(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(420), "420ms");
        assert_eq!(duration(42_400), "42s");
        assert_eq!(duration(190_600), "3m 11s");
        assert_eq!(duration(-5), "0s");
    }
}
