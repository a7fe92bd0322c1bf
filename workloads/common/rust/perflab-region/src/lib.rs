//! Announce a workload's timed region to perflab (same protocol as `include/perflab_region.h`).
//!
//! perflab sets `PERFLAB_CTL_FIFO` / `PERFLAB_ACK_FIFO` to two named pipes; `begin()` writes
//! `enable\n` to the control fifo and waits for one line on the ack fifo, `end()` does the same
//! with `disable\n`.  Without the variables both are no-ops.  Call them from one thread, around
//! the barrier-released region of all threads.
//!
//! Hand-written (std only) so every workload builds offline with no external crate.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::sync::Mutex;

struct Fifos {
    ctl: File,
    ack: File,
}

// None inside: not opened yet; Some(None): disabled; Some(Some(..)): active.
static STATE: Mutex<Option<Option<Fifos>>> = Mutex::new(None);

fn open() -> Option<Fifos> {
    let ctl = std::env::var_os("PERFLAB_CTL_FIFO").filter(|v| !v.is_empty())?;
    let ack = std::env::var_os("PERFLAB_ACK_FIFO").filter(|v| !v.is_empty())?;
    // Same order as the C header: the writer side first, then the reader side.
    let ctl_f = OpenOptions::new().write(true).open(&ctl);
    let ack_f = File::open(&ack);
    match (ctl_f, ack_f) {
        (Ok(ctl), Ok(ack)) => Some(Fifos { ctl, ack }),
        _ => {
            eprintln!(
                "perflab_region: cannot open the control fifos ({:?}, {:?}); counting the whole process",
                ctl, ack
            );
            None
        }
    }
}

fn send(cmd: &[u8]) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(open());
    }
    if let Some(Some(f)) = guard.as_mut() {
        if f.ctl.write_all(cmd).is_err() {
            return;
        }
        let _ = f.ctl.flush();
        // Read up to and including the newline of "ack\n".
        let mut b = [0u8; 1];
        for _ in 0..64 {
            match f.ack.read(&mut b) {
                Ok(1) if b[0] != b'\n' => continue,
                _ => break,
            }
        }
    }
}

/// Start of the timed region: counters on (blocks until perflab acknowledges).
pub fn begin() {
    send(b"enable\n");
}

/// End of the timed region: counters off.
pub fn end() {
    send(b"disable\n");
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_op_without_env() {
        std::env::remove_var("PERFLAB_CTL_FIFO");
        super::begin();
        super::end();
    }
}
