'use strict';
// perflab workload timers/node: setTimeout + clearTimeout churn of timers that never fire (an
// hour), after dotnet/coreclr#14527.  Node keeps one linked list per distinct duration plus a
// priority queue of lists, per isolate; threads > 1 runs one worker_thread (own isolate, own
// timer lists) per thread, released from one SharedArrayBuffer barrier.  Beware: Node turns a
// timeout over 2^31-1 ms into 1 ms, so the hour (3.6e6 ms) is well inside the range.
// checksum = timers cancelled (clearTimeout left the Timeout destroyed).
const path = require('path');
const { isMainThread, parentPort, workerData } = require('worker_threads');
// Flags, the worker barrier and the JSON head are shared with the other Node workloads.
const wl = require(path.join(__dirname, '..', '..', 'common', 'node', 'workload.js'));

const HOUR_MS = 3600 * 1000;
let fired = 0;
function onFire() { fired++; } // never expected to run

function churn(n) {
  let cancelled = 0;
  for (let i = 0; i < n; i++) {
    const t = setTimeout(onFire, HOUR_MS);
    clearTimeout(t);
    // _destroyed is set by clearTimeout (Node's own bookkeeping): proof the timer was cancelled.
    if (t._destroyed === true) cancelled++;
  }
  return cancelled;
}

function now() { return process.hrtime.bigint(); }

function warmUp(count) {
  const t0 = now();
  let done = 0;
  while (done < count && now() - t0 < 1000000000n) {
    const b = Math.min(1000, count - done);
    churn(b);
    done += b;
  }
  return done;
}

function makeLive(count) {
  const ts = [];
  for (let i = 0; i < count; i++) ts.push(setTimeout(onFire, HOUR_MS));
  return ts;
}

function dropLive(ts) {
  let c = 0;
  for (const t of ts) { clearTimeout(t); if (t._destroyed === true) c++; }
  return c;
}

function workerMain() {
  const cfg = workerData;
  const live = makeLive(cfg.live);
  warmUp(cfg.warmup);
  wl.awaitGo(cfg.sab); // the barrier: every worker is released by one store
  const t0 = now();
  const c = churn(cfg.n);
  const ns = Number(now() - t0);
  parentPort.postMessage({ ns, cancelled: c, liveCancelled: dropLive(live), fired });
}

async function main() {
  const f = wl.flags('timers/node', process.argv.slice(2));
  const cfg = {
    threads: f.int('threads', 1, 1, 256),
    iterations: f.int('iterations', 0, 0, 1e9),
    live: f.int('live', 0, 0, 1e7),
    warmup: f.int('warmup', 20000, 0, 1e8),
  };
  f.rejectUnknown('threads, live, iterations, warmup');
  const region = require(path.join(__dirname, '..', '..', 'common', 'node', 'region.js'));

  const warmed = warmUp(cfg.warmup);
  const n = cfg.iterations !== 0 ? cfg.iterations : await wl.calibrate((b) => {
    const t0 = now();
    churn(b);
    return Number(now() - t0);
  }, 100);
  let perNs; let cancelled; let liveCancelled; let firedTotal;
  if (cfg.threads === 1) {
    const live = makeLive(cfg.live);
    region.begin();
    const t0 = now();
    cancelled = churn(n);
    perNs = [Number(now() - t0)];
    region.end();
    liveCancelled = dropLive(live);
    firedTotal = fired;
  } else {
    const base = Math.floor(cfg.live / cfg.threads);
    const datas = [];
    for (let t = 0; t < cfg.threads; t++) {
      datas.push({ ...cfg, live: base + (t < cfg.live % cfg.threads ? 1 : 0), n });
    }
    const rs = await wl.runWorkers(__filename, datas, 'timers/node', region);
    perNs = rs.map((r) => r.ns);
    cancelled = rs.reduce((a, r) => a + r.cancelled, 0);
    liveCancelled = rs.reduce((a, r) => a + r.liveCancelled, 0);
    firedTotal = fired + rs.reduce((a, r) => a + r.fired, 0);
  }
  const ops = n * cfg.threads;
  process.stdout.write(JSON.stringify({
    ...wl.resultHead('timers/node', n, perNs),
    checksum: cancelled,
    created: ops,
    fired: firedTotal,
    live_cancelled: liveCancelled,
    iterations: n,
    calibrated: cfg.iterations === 0,
    iterations_per_thread: n,
    warmup_iterations: warmed,
    timeout_s: 3600,
    parallelism: cfg.threads === 1 ? 'main-thread' : 'worker_threads',
    runtime: process.version,
    params: { threads: cfg.threads, live: cfg.live, iterations: cfg.iterations },
  }) + '\n');
}

if (isMainThread) {
  main().catch((e) => { process.stderr.write(`timers/node: ${e && e.stack}\n`); process.exit(1); });
} else {
  try { workerMain(); } catch (e) { process.stderr.write(`timers/node worker: ${e && e.stack}\n`); process.exit(1); }
}
