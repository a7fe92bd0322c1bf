//! perflab mmap churn (Rust): the deterministic anonymous mmap / munmap / mremap sequence of
//! ../c/src/mmap.c (CHURN SPEC there), with the same checksum.
//!
//! The four libc calls are declared by hand instead of pulling the `libc` crate so the workload
//! builds offline with no external crate (Linux only; the constants are the same on x86-64 and
//! aarch64).

use perflab_flags::Command;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Arc, Barrier};
use std::time::Instant;

extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64)
        -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn mremap(old: *mut c_void, old_len: usize, new_len: usize, flags: c_int, ...) -> *mut c_void;
    fn sysconf(name: c_int) -> i64;
}

const PROT_NONE: c_int = 0;
const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_PRIVATE: c_int = 2;
const MAP_ANONYMOUS: c_int = 0x20;
const MREMAP_MAYMOVE: c_int = 1;
const SC_PAGESIZE: c_int = 30;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
const PROTS: [c_int; 4] = [PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE];
const DEFAULT_SEED: u64 = 88172645463325252;
const WARMUP_SALT: u64 = 0xD1B54A32D192ED03;
const MASK53: u64 = (1 << 53) - 1;

const CMD: Command = Command { prog: "mmap-churn", no_value: "flag '--{name}' needs a value" };

fn usage(msg: &str) -> ! {
    CMD.usage(msg)
}

fn die(what: &str) -> ! {
    eprintln!("mmap-churn: {what} failed: {}", std::io::Error::last_os_error());
    std::process::exit(1);
}

#[derive(Clone, Copy)]
struct Slot {
    addr: *mut u8,
    pages: u64,
    prot: c_int,
}

struct Churn {
    rng: u64,
    h: u64,
    counts: [u64; 4], // mmap, munmap, mremap, touch
    page: usize,
    slots: Vec<Slot>,
}

// The raw pointers are only used by the thread that owns the state.
unsafe impl Send for Churn {}

impl Churn {
    fn new(seed: u64, nslots: usize, page: usize) -> Churn {
        let empty = Slot { addr: std::ptr::null_mut(), pages: 0, prot: 0 };
        Churn {
            rng: if seed == 0 { 1 } else { seed },
            h: 0xcbf29ce484222325,
            counts: [0; 4],
            page,
            slots: vec![empty; nslots],
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    #[inline]
    fn mix(&mut self, v: u64) {
        self.h = (self.h ^ v).wrapping_mul(0x100000001b3);
    }

    fn ops(&mut self, n: u64) {
        let ps = self.page;
        for _ in 0..n {
            let r = self.next();
            let s = (r % self.slots.len() as u64) as usize;
            let mut sl = self.slots[s];
            let kind: u64;
            if sl.pages == 0 {
                let np = 1 + ((r >> 20) & 15);
                let prot = PROTS[((r >> 24) & 3) as usize];
                let p = unsafe {
                    mmap(std::ptr::null_mut(), np as usize * ps, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                };
                if p == MAP_FAILED {
                    die("mmap");
                }
                sl = Slot { addr: p as *mut u8, pages: np, prot };
                kind = 1;
                self.counts[0] += 1;
            } else if (r >> 28) & 1 == 1 {
                if unsafe { munmap(sl.addr as *mut c_void, sl.pages as usize * ps) } != 0 {
                    die("munmap");
                }
                sl.addr = std::ptr::null_mut();
                sl.pages = 0;
                kind = 2;
                self.counts[1] += 1;
            } else {
                let np = 1 + ((r >> 20) & 15);
                let p = unsafe {
                    mremap(sl.addr as *mut c_void, sl.pages as usize * ps, np as usize * ps, MREMAP_MAYMOVE)
                };
                if p == MAP_FAILED {
                    die("mremap");
                }
                sl.addr = p as *mut u8;
                sl.pages = np;
                kind = 3;
                self.counts[2] += 1;
            }
            self.slots[s] = sl;
            let prot = if sl.pages != 0 { sl.prot as u64 } else { 0 };
            self.mix(kind << 40 | (s as u64) << 16 | sl.pages << 8 | prot);
            if sl.pages != 0 && sl.prot == PROT_READ | PROT_WRITE && (r >> 32) & 7 == 0 {
                let r2 = self.next();
                let pg = r2 % sl.pages;
                let off = (r2 >> 8) & 4095;
                let old = unsafe {
                    let b = sl.addr.add(pg as usize * ps + off as usize);
                    let old = std::ptr::read_volatile(b);
                    std::ptr::write_volatile(b, (r2 >> 24) as u8);
                    old
                };
                self.mix(1u64 << 48 | pg << 20 | off << 8 | old as u64);
                self.counts[3] += 1;
            }
        }
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        for sl in &self.slots {
            if sl.pages != 0 {
                unsafe { munmap(sl.addr as *mut c_void, sl.pages as usize * self.page) };
            }
        }
    }
}

/// The timed loop in a named, never-inlined frame, so callgrind can count just it
/// (--toggle-collect='*perflab_timed_region*', the manifest's region_symbol).
#[no_mangle]
#[inline(never)]
fn perflab_timed_region_churn(c: &mut Churn, n: u64) {
    c.ops(std::hint::black_box(n));
}

fn parse_u64(name: &str, v: &str, lo: u64, hi: u64) -> u64 {
    let parsed = if let Some(h) = v.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        v.parse::<u64>().ok()
    };
    match parsed {
        Some(x) if x >= lo && x <= hi => x,
        Some(_) => usage(&format!("--{name}={v} is out of range [{lo}, {hi}]")),
        None => usage(&format!("--{name}='{v}' is not a non-negative integer")),
    }
}

fn thp() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .ok()
        .and_then(|s| {
            let a = s.find('[')?;
            let b = s[a..].find(']')?;
            Some(s[a + 1..a + b].to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

fn main() {
    let mut bench = "churn".to_string();
    let mut iterations: Option<String> = None;
    let mut threads = "1".to_string();
    let mut seed: Option<String> = None;
    let mut slots = "1024".to_string();
    for (name, val) in CMD.flags(std::env::args().skip(1)) {
        match name.as_str() {
            "bench" => bench = val,
            "iterations" => iterations = Some(val),
            "threads" => threads = val,
            "seed" => seed = Some(val),
            "slots" => slots = val,
            _ => usage(&format!("unknown flag '--{name}'; see the workload.toml for its parameters")),
        }
    }
    if bench != "churn" {
        usage(&format!("--bench='{bench}' is not available in Rust; use churn (lat_mmap and lat_pagefault are in mmap/c)"));
    }
    let threads = parse_u64("threads", &threads, 1, 256) as usize;
    let nslots = parse_u64("slots", &slots, 1, 65536) as usize;
    if threads * nslots > 65536 {
        usage(&format!("--threads={threads} x --slots={nslots} is over 65536 mappings (vm.max_map_count is usually 65530); use fewer threads or slots"));
    }
    let seed = seed.map_or(DEFAULT_SEED, |s| parse_u64("seed", &s, 1, u64::MAX));
    let mut n = iterations.map_or(1_000_000, |s| parse_u64("iterations", &s, 0, 1 << 34));
    let page = unsafe { sysconf(SC_PAGESIZE) } as usize;

    if n == 0 {
        // Double a single-threaded trial until it takes 50 ms, then scale to about 0.5 s.
        let mut k: u64 = 1000;
        let ns = loop {
            let mut w = Churn::new(seed ^ WARMUP_SALT, nslots, page);
            let t0 = Instant::now();
            w.ops(k);
            let ns = t0.elapsed().as_nanos() as u64;
            if ns >= 50_000_000 || k >= 20_000_000 {
                break ns;
            }
            k *= 2;
        };
        n = ((k as f64) * 5e8 / ns.max(1) as f64) as u64;
        n = n.clamp(10_000, 20_000_000);
    }
    let warmup = (n / 10).min(20_000);
    let ready = Arc::new(Barrier::new(threads + 1));
    let go = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (ready, go) = (ready.clone(), go.clone());
            let tseed = seed.wrapping_add((t as u64).wrapping_mul(0x9E3779B97F4A7C15));
            std::thread::spawn(move || {
                {
                    // Warm-up on a throw-away state, so the timed sequence starts from empty slots.
                    let mut w = Churn::new(tseed ^ WARMUP_SALT, nslots, page);
                    w.ops(warmup);
                }
                let mut c = Churn::new(tseed, nslots, page);
                ready.wait();
                go.wait();
                let t0 = Instant::now();
                perflab_timed_region_churn(&mut c, n);
                let ns = t0.elapsed().as_nanos() as u64;
                (ns, c.h, c.counts)
            })
        })
        .collect();
    ready.wait();
    eprintln!("mmap-churn: timed region begins ({threads} thread(s) x {n} ops)");
    perflab_region::begin();
    go.wait();
    let results: Vec<(u64, u64, [u64; 4])> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    perflab_region::end();

    let mut h: u64 = 0;
    let mut counts = [0u64; 4];
    let mut per = Vec::new();
    let mut nsop = 0.0;
    for (ns, hh, c) in &results {
        h = h.wrapping_add(*hh);
        for k in 0..4 {
            counts[k] += c[k];
        }
        per.push(ns.to_string());
        if n > 0 {
            nsop += *ns as f64 / n as f64;
        }
    }
    nsop /= threads as f64;
    let maxns = results.iter().map(|r| r.0).max().unwrap_or(1).max(1);
    let ops = n * threads as u64;
    println!(
        "{{\"workload\":\"mmap\",\"bench\":\"churn\",\"lang\":\"rust\",\"ops\":{ops},\"threads\":{threads},\
\"per_thread_ns\":[{}],\"ns_per_op\":{:.3},\"ops_per_s\":{:.1},\"checksum\":{},\
\"counts\":{{\"mmap\":{},\"munmap\":{},\"mremap\":{},\"touch\":{}}},\"thp\":\"{}\",\"page_size\":{page},\
\"params\":{{\"bench\":\"churn\",\"iterations\":{n},\"threads\":{threads},\"seed\":{seed},\"slots\":{nslots}}}}}",
        per.join(","),
        nsop,
        ops as f64 * 1e9 / maxns as f64,
        h & MASK53,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        thp()
    );
}
