'use strict';
// perflab workload timers/node: setTimeout + clearTimeout churn of timers that never fire (an
// hour), after dotnet/coreclr#14527.  Node keeps one linked list per distinct duration plus a
// priority queue of lists, per isolate; threads > 1 runs one worker_thread (own isolate, own
// timer lists) per thread, released from one SharedArrayBuffer barrier.  Beware: Node turns a
// timeout over 2^31-1 ms into 1 ms, so the hour (3.6e6 ms) is well inside the range.
// checksum = timers cancelled (clearTimeout left the Timeout destroyed).
const path = require('path');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

const HOUR_MS = 3600 * 1000;
let fired = 0;
function onFire() { fired++; } // never expected to run

function die(msg) {
  process.stderr.write(`timers/node: ${msg}\n`);
  process.exit(2);
}

function parseFlags(argv) {
  const f = new Map();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--') || a.length < 3) die(`unexpected argument '${a}'; parameters are --name=value`);
    const body = a.slice(2);
    const eq = body.indexOf('=');
    if (eq >= 0) f.set(body.slice(0, eq), body.slice(eq + 1));
    else if (i + 1 < argv.length) f.set(body, argv[++i]);
    else die(`--${body} needs a value; write --${body}=VALUE`);
  }
  return f;
}

function intFlag(f, name, def, min, max) {
  if (!f.has(name)) return def;
  const v = f.get(name);
  f.delete(name);
  if (!/^\s*\d+\s*$/.test(v)) die(`--${name}=${v} is not a whole number; give one in [${min}, ${max}]`);
  const x = Number(v);
  if (x < min || x > max) die(`--${name}=${v} is out of range; give a value in [${min}, ${max}]`);
  return x;
}

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
  const flag = new Int32Array(cfg.sab);
  const live = makeLive(cfg.live);
  warmUp(cfg.warmup);
  parentPort.postMessage({ ready: true });
  Atomics.wait(flag, 0, 0); // the barrier: every worker is released by one store
  const t0 = now();
  const c = churn(cfg.n);
  const ns = Number(now() - t0);
  parentPort.postMessage({ ns, cancelled: c, liveCancelled: dropLive(live), fired });
}

async function main() {
  const f = parseFlags(process.argv.slice(2));
  const cfg = {
    threads: intFlag(f, 'threads', 1, 1, 256),
    iterations: intFlag(f, 'iterations', 0, 0, 1e9),
    live: intFlag(f, 'live', 0, 0, 1e7),
    warmup: intFlag(f, 'warmup', 20000, 0, 1e8),
  };
  if (f.size) die(`unknown parameter --${[...f.keys()][0]}; known: threads, live, iterations, warmup`);
  const region = require(path.join(__dirname, '..', '..', 'common', 'node', 'region.js'));

  const warmed = warmUp(cfg.warmup);
  let n = cfg.iterations;
  if (n === 0) {
    for (let b = 100; ; b *= 2) {
      const t0 = now();
      churn(b);
      const el = Number(now() - t0);
      if (el >= 50e6 || b >= 1e9) {
        n = Math.max(100, Math.min(50000000, Math.round(5e8 / Math.max(el / b, 0.1))));
        break;
      }
    }
  }
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
    const sab = new SharedArrayBuffer(4);
    const flag = new Int32Array(sab);
    const workers = [];
    const readies = [];
    const results = [];
    const base = Math.floor(cfg.live / cfg.threads);
    for (let t = 0; t < cfg.threads; t++) {
      const share = base + (t < cfg.live % cfg.threads ? 1 : 0);
      const w = new Worker(__filename, { workerData: { ...cfg, live: share, n, sab } });
      const msgs = [];
      let wake = null;
      w.on('message', (m) => { msgs.push(m); if (wake) { wake(); wake = null; } });
      w.on('error', (e) => { process.stderr.write(`timers/node: worker failed: ${e}\n`); process.exit(1); });
      const next = () => new Promise((res) => {
        if (msgs.length) res(msgs.shift());
        else wake = () => res(msgs.shift());
      });
      workers.push(w);
      readies.push(next());
      results.push(next);
    }
    await Promise.all(readies);
    region.begin();
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    const rs = await Promise.all(results.map((next) => next()));
    region.end();
    perNs = rs.map((r) => r.ns);
    cancelled = rs.reduce((a, r) => a + r.cancelled, 0);
    liveCancelled = rs.reduce((a, r) => a + r.liveCancelled, 0);
    firedTotal = fired + rs.reduce((a, r) => a + r.fired, 0);
    await Promise.all(workers.map((w) => w.terminate()));
  }
  const ops = n * cfg.threads;
  const maxNs = Math.max(...perNs);
  process.stdout.write(JSON.stringify({
    workload: 'timers/node',
    ops,
    threads: cfg.threads,
    per_thread_ns: perNs,
    ns_per_op: perNs.reduce((a, x) => a + x / n, 0) / cfg.threads,
    ops_per_s: maxNs > 0 ? (ops * 1e9) / maxNs : 0,
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
