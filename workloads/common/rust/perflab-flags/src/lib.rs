//! A perflab workload's command line: `--name=value` or `--name value`, and every bad input is one
//! line on stderr and exit status 2 (the workload contract; the C header
//! workloads/common/c/perflab_workload.h and the other languages' helpers word it the same way).
//! Standard library only, so workloads build offline.
//!
//! ```ignore
//! const CMD: Command = Command::new("eh");
//! for (name, value) in CMD.flags(std::env::args().skip(1)) {
//!     match name.as_str() {
//!         "depth" => depth = CMD.int("depth", &value, 0, 100_000),
//!         _ => CMD.usage(format!("unknown flag --{name}")),
//!     }
//! }
//! ```

use std::fmt::Display;

/// A workload's name in messages, and the words for a flag given without a value.
#[derive(Clone, Copy)]
pub struct Command {
    pub prog: &'static str,
    /// `{name}` stands for the flag's name.
    pub no_value: &'static str,
}

impl Command {
    /// The C header's words.
    pub const fn new(prog: &'static str) -> Command {
        Command {
            prog,
            no_value: "--{name} needs a value (--{name}=VALUE)",
        }
    }

    /// Print `<prog>: <msg>` on stderr and exit 2.
    pub fn usage(&self, msg: impl Display) -> ! {
        eprintln!("{}: {msg}", self.prog);
        std::process::exit(2);
    }

    /// The (name, value) pairs of `args`, read one at a time (so the first bad flag is the one
    /// reported): an argument that is not `--name...` or a last `--name` without a value exits 2.
    pub fn flags<I: IntoIterator<Item = String>>(&self, args: I) -> Flags<I::IntoIter> {
        Flags {
            cmd: *self,
            args: args.into_iter(),
        }
    }

    /// A whole number in [lo, hi].
    pub fn int(&self, name: &str, v: &str, lo: u64, hi: u64) -> u64 {
        match v.parse::<u64>() {
            Ok(x) if (lo..=hi).contains(&x) => x,
            Ok(x) => self.usage(format!("--{name}={x} is out of range; allowed: {lo}..{hi}")),
            Err(_) => self.usage(format!(
                "--{name}={v} is not an integer; give a whole number in [{lo}, {hi}]"
            )),
        }
    }

    /// One of `choices`.
    pub fn choice(&self, name: &str, v: &str, choices: &[&str]) -> String {
        if choices.contains(&v) {
            v.to_string()
        } else {
            self.usage(format!(
                "--{name}={v} is not allowed; choose one of {}",
                choices.join("|")
            ))
        }
    }
}

/// The iterator [`Command::flags`] returns.
pub struct Flags<I> {
    cmd: Command,
    args: I,
}

impl<I: Iterator<Item = String>> Iterator for Flags<I> {
    type Item = (String, String);

    fn next(&mut self) -> Option<(String, String)> {
        let arg = self.args.next()?;
        let Some(flag) = arg.strip_prefix("--") else {
            self.cmd.usage(format!(
                "unexpected argument '{arg}'; flags are --name=value"
            ))
        };
        Some(match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => match self.args.next() {
                Some(v) => (flag.to_string(), v),
                None => self.cmd.usage(self.cmd.no_value.replace("{name}", flag)),
            },
        })
    }
}
