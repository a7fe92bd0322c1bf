//! eh/rust: the cost of a Rust panic caught by `catch_unwind` through `depth` real frames
//! (after dotnet/runtime#77568).
//!   kind=software  `panic!` (runs the panic hook, here a silent one; --mode=panic) or
//!                  `resume_unwind` (skips the hook and the panic count; --mode=resume)
//!   kind=error     the baseline: a `Result` propagated with `?` through the same frames
//! depth 0 = the panic is inside the closure given to catch_unwind; depth N = N `perflab_frame`
//! calls.  Every panic touches the global panic count and the hook lock: a scaling story.
//!
//! Flags are parsed by hand (no clap) so the workload builds offline with no external crate.

use perflab_flags::Command;
use std::hint::black_box;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

const CALIBRATE_NS: f64 = 5e8; // iterations=0: aim for about 0.5 s per thread
const MIN_ITERATIONS: u64 = 100;
const MAX_ITERATIONS: u64 = 200_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Software,
    Error,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Panic,
    Resume,
}

#[derive(Clone, Copy)]
struct Config {
    depth: u32,
    kind: Kind,
    mode: Mode,
}

/// The panic payload for --mode=resume (a small struct, like the C++ workload's).
struct SmallError(#[allow(dead_code)] u32);

thread_local! {
    static THROWN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

static G_THROWN: AtomicU64 = AtomicU64::new(0);
static G_MISMATCH: AtomicBool = AtomicBool::new(false);

#[inline(never)]
fn raise(mode: Mode) -> ! {
    THROWN.with(|t| t.set(t.get() + 1));
    match mode {
        Mode::Panic => panic!("perflab eh"),
        Mode::Resume => panic::resume_unwind(Box::new(SmallError(1))),
    }
}

/// One frame between catch and throw; black_box after the call keeps it a real call.
#[inline(never)]
fn perflab_frame(depth: u32, mode: Mode) {
    if depth <= 1 {
        raise(mode);
    }
    perflab_frame(black_box(depth - 1), mode);
    black_box(());
}

#[inline(never)]
fn perflab_frame_error(depth: u32) -> Result<u64, SmallError> {
    if depth <= 1 {
        THROWN.with(|t| t.set(t.get() + 1));
        return Err(SmallError(1));
    }
    let v = perflab_frame_error(black_box(depth - 1))?;
    Ok(black_box(v + 1))
}

fn software_loop(n: u64, c: Config) -> u64 {
    let mut caught = 0u64;
    for _ in 0..n {
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            if c.depth == 0 {
                raise(c.mode);
            }
            perflab_frame(black_box(c.depth), c.mode);
        }));
        if r.is_err() {
            caught += 1;
        }
    }
    caught
}

fn error_loop(n: u64, c: Config) -> u64 {
    let mut caught = 0u64;
    for _ in 0..n {
        let r = if c.depth == 0 {
            THROWN.with(|t| t.set(t.get() + 1));
            black_box(Err::<u64, SmallError>(SmallError(1)))
        } else {
            perflab_frame_error(black_box(c.depth))
        };
        if black_box(r).is_err() {
            caught += 1;
        }
    }
    caught
}

fn eh_loop(n: u64, c: Config) -> u64 {
    let before = THROWN.with(|t| t.get());
    let caught = match c.kind {
        Kind::Software => software_loop(n, c),
        Kind::Error => error_loop(n, c),
    };
    let thrown = THROWN.with(|t| t.get()) - before;
    if thrown != caught || caught != n {
        G_MISMATCH.store(true, Ordering::Relaxed);
    }
    G_THROWN.fetch_add(thrown, Ordering::Relaxed);
    caught
}

/// The timed region: a named frame so callgrind --toggle-collect='*perflab_timed_region*' finds it.
#[inline(never)]
fn perflab_timed_region(n: u64, c: Config) -> u64 {
    black_box(eh_loop(black_box(n), c))
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    // libc's clock_gettime, declared here so the workload needs no external crate.
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// This thread's CPU time: next to the wall time it shows how much a busy machine stole.
fn thread_cpu_ns() -> u64 {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; Linux x86-64/aarch64 layout (two 64-bit fields).
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

const CMD: Command = Command::new("eh");

struct Args {
    cfg: Config,
    depth: u64,
    kind: String,
    mode: String,
    threads: u64,
    iterations: u64,
}

fn parse_args() -> Args {
    let mut a = Args {
        cfg: Config { depth: 0, kind: Kind::Software, mode: Mode::Panic },
        depth: 0,
        kind: "software".into(),
        mode: "panic".into(),
        threads: 1,
        iterations: 0,
    };
    for (name, value) in CMD.flags(std::env::args().skip(1)) {
        match name.as_str() {
            "depth" => a.depth = CMD.int("depth", &value, 0, 100_000),
            "kind" => a.kind = CMD.choice("kind", &value, &["software", "error"]),
            "mode" => a.mode = CMD.choice("mode", &value, &["panic", "resume"]),
            "threads" => a.threads = CMD.int("threads", &value, 1, 1024),
            "iterations" => a.iterations = CMD.int("iterations", &value, 0, MAX_ITERATIONS),
            _ => CMD.usage(format!(
                "unknown flag --{name}; known: --depth --kind --mode --threads --iterations"
            )),
        }
    }
    a.cfg = Config {
        depth: a.depth as u32,
        kind: if a.kind == "error" { Kind::Error } else { Kind::Software },
        mode: if a.mode == "resume" { Mode::Resume } else { Mode::Panic },
    };
    a
}

fn calibrate(c: Config) -> u64 {
    // Double until one batch takes >= 20 ms, then scale to the target (also a warm-up).
    let mut k: u64 = 16;
    let ns = loop {
        let t0 = Instant::now();
        eh_loop(k, c);
        let ns = t0.elapsed().as_nanos() as f64;
        if ns >= 2e7 || k >= MAX_ITERATIONS {
            break ns;
        }
        k *= 2;
    };
    let per = (ns / k as f64).max(1.0);
    ((CALIBRATE_NS / per) as u64).clamp(MIN_ITERATIONS, MAX_ITERATIONS)
}

fn main() {
    let a = parse_args();
    let c = a.cfg;
    // Silent hook: the default one would print (and capture a backtrace setting) on every panic.
    panic::set_hook(Box::new(|_| {}));

    let calibrated = a.iterations == 0;
    let n = if calibrated { calibrate(c) } else { a.iterations };
    let warmup = (n / 10).clamp(10, 1000);
    let threads = a.threads as usize;
    let ready = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (ready, go) = (ready.clone(), go.clone());
            std::thread::spawn(move || {
                eh_loop(warmup, c);
                ready.wait();
                go.wait();
                let c0 = thread_cpu_ns();
                let t0 = Instant::now();
                let caught = perflab_timed_region(n, c);
                let ns = t0.elapsed().as_nanos() as u64;
                (ns, caught, thread_cpu_ns() - c0)
            })
        })
        .collect();
    ready.wait(); // everyone warmed up
    G_THROWN.store(0, Ordering::Relaxed); // count only the timed region
    perflab_region::begin();
    let w0 = Instant::now();
    go.wait();
    let results: Vec<(u64, u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let wall_ns = w0.elapsed().as_nanos() as u64;
    perflab_region::end();

    let checksum: u64 = results.iter().map(|r| r.1).sum();
    let thrown = G_THROWN.load(Ordering::Relaxed);
    if G_MISMATCH.load(Ordering::Relaxed) || thrown != checksum {
        eprintln!("eh: thrown {thrown}, caught {checksum}: the counts disagree");
        std::process::exit(1);
    }
    let per_thread: Vec<u64> = results.iter().map(|r| r.0).collect();
    let ns_per_op =
        per_thread.iter().map(|&t| t as f64 / n as f64).sum::<f64>() / threads as f64;
    let slowest = *per_thread.iter().max().unwrap() as f64;
    let cpu: Vec<u64> = results.iter().map(|r| r.2).collect();
    let cpu_ns_per_op = cpu.iter().map(|&t| t as f64 / n as f64).sum::<f64>() / threads as f64;
    let cpu_list: Vec<String> = cpu.iter().map(|t| t.to_string()).collect();
    let ops = n * threads as u64;
    let per_list: Vec<String> = per_thread.iter().map(|t| t.to_string()).collect();
    println!(
        "{{\"ops\":{ops},\"threads\":{threads},\"iterations\":{n},\"warmup\":{warmup},\
\"calibrated\":{calibrated},\
\"per_thread_ns\":[{}],\"per_thread_cpu_ns\":[{}],\"ns_per_op\":{ns_per_op:.3},\
\"cpu_ns_per_op\":{cpu_ns_per_op:.3},\"ops_per_s\":{:.1},\"wall_ns\":{wall_ns},\
\"checksum\":{checksum},\"thrown\":{thrown},\"compiler\":\"rustc\",\
\"params\":{{\"depth\":{},\"kind\":\"{}\",\"mode\":\"{}\",\"threads\":{threads},\"iterations\":{}}}}}",
        per_list.join(","),
        cpu_list.join(","),
        if slowest > 0.0 { ops as f64 * 1e9 / slowest } else { 0.0 },
        a.depth,
        a.kind,
        a.mode,
        a.iterations,
    );
}
