//! `airlock cancel ID --reason TEXT`: asks for one of Mai's requests to be stopped, and waits
//! (up to `--wait`) for how it ended: `cancelled`, or what it had already come to.

use crate::home::Home;
use crate::run::status;
use airlock_protocol::{Outcome, RequestId};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Debug, clap::Args)]
pub struct CancelArgs {
    /// The request (as `airlock run` printed it: `submitted <id>`).
    pub request_id: RequestId,
    /// Why; recorded in the request's terminal event and the audit log.
    #[arg(long)]
    pub reason: String,
    /// Seconds to wait for the request's end (0: send and return).
    #[arg(long, default_value_t = 30)]
    pub wait: u64,
}

pub async fn run(home: &Home, args: CancelArgs) -> anyhow::Result<ExitCode> {
    let user = airlock_protocol::roles::MAI.user;
    let nats = crate::stack::connect(home, user).await?;
    let client = airlock_client::Client::from_connection(nats, user, home.stack());
    // Followed before the cancellation is sent, so its end cannot slip past.
    let mut request = client.attach(args.request_id.clone()).await?;
    if let Err(error) = client.cancel(&args.request_id, &args.reason).await {
        eprintln!("airlock cancel: {}", airlock_protocol::error_chain(&error));
        return Ok(ExitCode::from(match error {
            airlock_client::ClientError::InvalidCancel(_) | airlock_client::ClientError::ForeignRequestId { .. } => {
                status::USAGE
            }
            _ => status::AIRLOCK_FAILED,
        }));
    }
    if args.wait == 0 {
        println!("cancellation of {} sent", args.request_id);
        return Ok(ExitCode::SUCCESS);
    }
    match request.terminal(Duration::from_secs(args.wait)).await {
        Ok(terminal) if terminal.outcome == Outcome::Cancelled => {
            println!(
                "{} cancelled: {}",
                args.request_id,
                terminal.reason.as_deref().unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(terminal) => {
            // It ended by itself first: said, and not a success of the cancellation.
            println!(
                "{} had already ended ({}); the cancellation changed nothing",
                args.request_id,
                terminal.outcome.as_str()
            );
            Ok(ExitCode::from(status::CANCEL_TOO_LATE))
        }
        Err(error) => {
            eprintln!("airlock cancel: sent, but {}", airlock_protocol::error_chain(&error));
            Ok(ExitCode::from(status::AIRLOCK_FAILED))
        }
    }
}
