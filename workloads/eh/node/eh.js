'use strict';
// perflab workload eh/node: the cost of throwing and catching in Node 20 through DEPTH frames
// (after dotnet/runtime#77568).
//
// Kinds: software (throw new Error), object (throw of a plain object: no stack capture),
// hardware (a TypeError from null.x, the engine's implicit fault), error (an error code returned
// through the same frames: the baseline).  Modes: sync, async (a chain of async functions where
// every level awaits the next and rethrows).  threads > 1 runs one worker_thread per thread, all
// released from one SharedArrayBuffer barrier.  The manifest runs node with --no-turbo-inlining
// so every frame of the chain stays a real frame.
const path = require('path');
const { isMainThread, parentPort, workerData } = require('worker_threads');
// Flags, the worker barrier and the JSON head are shared with the other Node workloads.
const wl = require(path.join(__dirname, '..', '..', 'common', 'node', 'workload.js'));

const KINDS = ['software', 'object', 'hardware', 'error'];
const MODES = ['sync', 'async'];

// ---- the chains (sync) ----
function chainSoftware(n) {
  if (n <= 1) throw new Error('depth');
  return chainSoftware(n - 1) + 1;
}
function chainObject(n) {
  if (n <= 1) throw { code: n };
  return chainObject(n - 1) + 1;
}
function chainHardware(n, h) {
  if (n <= 1) return h.x; // h is null: TypeError
  return chainHardware(n - 1, h) + 1;
}
function chainError(n, fail) {
  if (n <= 1) return fail ? -1 : 0;
  const r = chainError(n - 1, fail);
  if (r < 0) return r;
  return r + 1;
}

// ---- the chains (async): every level awaits the next and rethrows ----
async function achainSoftware(n) {
  if (n <= 1) throw new Error('depth');
  try { return (await achainSoftware(n - 1)) + 1; } catch (e) { throw e; }
}
async function achainObject(n) {
  if (n <= 1) throw { code: n };
  try { return (await achainObject(n - 1)) + 1; } catch (e) { throw e; }
}
async function achainHardware(n, h) {
  if (n <= 1) return h.x;
  try { return (await achainHardware(n - 1, h)) + 1; } catch (e) { throw e; }
}
async function achainError(n, fail) {
  if (n <= 1) return fail ? -1 : 0;
  const r = await achainError(n - 1, fail);
  if (r < 0) return r;
  return r + 1;
}

// Not constants, so the compiler cannot fold them.
const state = { nul: null, fail: 1, sink: null };

// One loop per kind and mode keeps every call site monomorphic.  Each returns the count caught.
const SYNC = {
  software(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) throw new Error('depth'); chainSoftware(depth); } catch (e) { state.sink = e; c++; }
    }
    return c;
  },
  object(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) throw { code: 0 }; chainObject(depth); } catch (e) { state.sink = e; c++; }
    }
    return c;
  },
  hardware(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) state.sink = state.nul.x; else chainHardware(depth, state.nul); } catch (e) {
        if (e instanceof TypeError) { state.sink = e; c++; }
      }
    }
    return c;
  },
  error(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      const r = depth === 0 ? -state.fail : chainError(depth, state.fail);
      if (r < 0) c++;
    }
    return c;
  },
};

const ASYNC = {
  async software(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) throw new Error('depth'); await achainSoftware(depth); } catch (e) { state.sink = e; c++; }
    }
    return c;
  },
  async object(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) throw { code: 0 }; await achainObject(depth); } catch (e) { state.sink = e; c++; }
    }
    return c;
  },
  async hardware(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      try { if (depth === 0) state.sink = state.nul.x; else await achainHardware(depth, state.nul); } catch (e) {
        if (e instanceof TypeError) { state.sink = e; c++; }
      }
    }
    return c;
  },
  async error(depth, n) {
    let c = 0;
    for (let i = 0; i < n; i++) {
      const r = depth === 0 ? -state.fail : await achainError(depth, state.fail);
      if (r < 0) c++;
    }
    return c;
  },
};

function now() { return process.hrtime.bigint(); }

// Runs n iterations and returns [elapsed ns, caught]; awaits only in async mode.
async function timed(cfg, n) {
  const t0 = now();
  const c = cfg.mode === 'async' ? await ASYNC[cfg.kind](cfg.depth, n) : SYNC[cfg.kind](cfg.depth, n);
  return [Number(now() - t0), c];
}

// Warm-up: enough iterations for TurboFan to optimise the loop and the chain, at most 1 s.
async function warmUp(cfg) {
  const t0 = now();
  let done = 0;
  while (done < cfg.warmup && now() - t0 < 1000000000n) {
    const b = Math.min(1000, cfg.warmup - done);
    await timed(cfg, b);
    done += b;
  }
  return done;
}

// Frames in error.stack of one error thrown through depth frames (what the stack walk sees).
async function stackFrames(cfg) {
  let err = null;
  try {
    if (cfg.kind === 'software') {
      if (cfg.depth === 0) throw new Error('depth');
      if (cfg.mode === 'async') await achainSoftware(cfg.depth); else chainSoftware(cfg.depth);
    } else if (cfg.kind === 'hardware') {
      if (cfg.depth === 0) return state.nul.x;
      if (cfg.mode === 'async') await achainHardware(cfg.depth, null); else chainHardware(cfg.depth, null);
    } else {
      return 0;
    }
  } catch (e) { err = e; }
  if (!err || typeof err.stack !== 'string') return 0;
  return err.stack.split('\n').filter((l) => l.trimStart().startsWith('at ')).length;
}

async function workerMain() {
  const cfg = workerData;
  Error.stackTraceLimit = cfg.stack_trace_limit;
  await warmUp(cfg);
  wl.awaitGo(cfg.sab); // the barrier: every worker is released by one store
  const [ns, caught] = await timed(cfg, cfg.n);
  parentPort.postMessage({ ns, caught });
}

async function main() {
  const f = wl.flags('eh/node', process.argv.slice(2));
  const cfg = {
    depth: f.int('depth', 0, 0, 5000),
    kind: f.choice('kind', 'software', KINDS),
    mode: f.choice('mode', 'sync', MODES),
    threads: f.int('threads', 1, 1, 256),
    iterations: f.int('iterations', 0, 0, 1e9),
    warmup: f.int('warmup', 20000, 0, 1e8),
    stack_trace_limit: f.int('stack_trace_limit', 10, 0, 100000),
  };
  f.rejectUnknown('depth, kind, mode, threads, iterations, warmup, stack_trace_limit');
  Error.stackTraceLimit = cfg.stack_trace_limit;
  const region = require(path.join(__dirname, '..', '..', 'common', 'node', 'region.js'));

  const warmed = await warmUp(cfg);
  // Calibration: grow a batch until it lasts 50 ms, then scale to about 0.5 s (clamped).
  const n = cfg.iterations === 0
    ? await wl.calibrate(async (b) => (await timed(cfg, b))[0], 100) : cfg.iterations;
  let perNs = [];
  let caught = 0;
  if (cfg.threads === 1) {
    region.begin();
    const [ns, c] = await timed(cfg, n);
    region.end();
    perNs = [ns];
    caught = c;
  } else {
    const rs = await wl.runWorkers(__filename, Array(cfg.threads).fill({ ...cfg, n }), 'eh/node', region);
    perNs = rs.map((r) => r.ns);
    caught = rs.reduce((a, r) => a + r.caught, 0);
  }
  const frames = await stackFrames(cfg);
  const out = {
    ...wl.resultHead('eh/node', n, perNs),
    checksum: caught,
    iterations: n,
    calibrated: cfg.iterations === 0,
    iterations_per_thread: n,
    warmup_iterations: warmed,
    stack_frames: frames,
    parallelism: cfg.threads === 1 ? 'main-thread' : 'worker_threads',
    runtime: process.version,
    params: {
      depth: cfg.depth, kind: cfg.kind, mode: cfg.mode, threads: cfg.threads, iterations: cfg.iterations,
      stack_trace_limit: cfg.stack_trace_limit,
    },
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (isMainThread) {
  main().catch((e) => { process.stderr.write(`eh/node: ${e && e.stack}\n`); process.exit(1); });
} else {
  workerMain().catch((e) => { process.stderr.write(`eh/node worker: ${e && e.stack}\n`); process.exit(1); });
}
