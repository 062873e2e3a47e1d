//! `cmstore serve`: the read-only dashboard. Prints the address to open (with its token) and
//! answers until interrupted; `--open` also opens it in the browser. See `docs/serve.md`.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::cli::filters::TeamStore;
use crate::files::paths::Paths;
use crate::read::report;
use crate::read::serve::team_api::TeamSource;
use crate::read::serve::{Options, Server, Store};

/// Arguments of `cmstore serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The port to listen on; 0 picks a free one
    #[arg(long, value_name = "N", default_value_t = 8765)]
    pub port: u16,
    /// Open the dashboard in the browser
    #[arg(long)]
    pub open: bool,
    /// Listen on this address instead of 127.0.0.1 (the token is required all the same;
    /// anyone who can reach it and holds the token sees the store)
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Interrupt a query of the SQL page after this many seconds (in SQLite, or on the team
    /// store's server); 0 = no limit
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub sql_timeout: u64,
    #[command(flatten)]
    pub team: TeamStore,
}

/// Runs `cmstore serve`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (store, of) = match args.team.store {
        Some(url) => {
            let (config, _) = crate::config::Config::load_for(paths);
            let source = TeamSource {
                url,
                config,
                machine: args.team.machine,
                user: args.team.user,
            };
            (Store::Team(Arc::new(source)), " of the team store")
        }
        None => {
            // As every report does: bring an older store's views up to date once (migrations
            // only add views and indexes). After this the server opens the store read-only.
            drop(report::open_read_only(&paths.db)?);
            (Store::Local(paths.db.clone()), "")
        }
    };
    let server = Server::bind(Options {
        addr: args.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        port: args.port,
        store,
        sql_timeout: Duration::from_secs(args.sql_timeout),
    })?;
    let url = server.url();
    // One write: a reader that takes the first line and goes away must not stop the server.
    let banner = format!(
        "cmstore dashboard (read-only){of} at {url}\n\
         Open that address; the token in it is the key. Ctrl-C stops.\n"
    );
    let mut out = std::io::stdout().lock();
    out.write_all(banner.as_bytes())
        .and_then(|()| out.flush())
        .context("writing")?;
    drop(out);
    if args.open {
        if let Err(e) = open_browser(&url) {
            eprintln!("cmstore serve: could not open a browser ({e}); open the address above");
        }
    }
    server.run()?;
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` in the default browser.
fn open_browser(url: &str) -> std::io::Result<()> {
    #[cfg(target_os = "macos")]
    let mut command = {
        let mut c = Command::new("open");
        c.arg(url);
        c
    };
    #[cfg(windows)]
    let mut command = {
        // `start` is a cmd built-in; its first quoted argument is the window title.
        let mut c = Command::new("cmd");
        c.args(["/C", "start", "", url]);
        c
    };
    #[cfg(not(any(target_os = "macos", windows)))]
    let mut command = {
        let mut c = Command::new("xdg-open");
        c.arg(url);
        c
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
}
