'use strict';
// Shared scaffolding of perflab's Node workloads: flags, the worker_threads barrier, the JSON head.
//
// A workload in workloads/<family>/node/ requires it by relative path:
//   const wl = require(path.join(__dirname, '..', '..', 'common', 'node', 'workload.js'));
// Every flag error prints one line "<prog>: <message>" and exits 2.
const { Worker, parentPort } = require('worker_threads');

function flags(prog, argv) {
  const die = (msg) => {
    process.stderr.write(`${prog}: ${msg}\n`);
    process.exit(2);
  };
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
  return {
    die,
    int(name, def, min, max) {
      if (!f.has(name)) return def;
      const v = f.get(name);
      f.delete(name);
      if (!/^\s*\d+\s*$/.test(v)) die(`--${name}=${v} is not a whole number; give one in [${min}, ${max}]`);
      const x = Number(v);
      if (x < min || x > max) die(`--${name}=${v} is out of range; give a value in [${min}, ${max}]`);
      return x;
    },
    choice(name, def, choices) {
      if (!f.has(name)) return def;
      const v = f.get(name);
      f.delete(name);
      if (!choices.includes(v)) die(`--${name}=${v} is unknown; choose one of ${choices.join(', ')}`);
      return v;
    },
    // Exit 2 naming the first parameter nobody read; `known` lists the accepted ones.
    rejectUnknown(known) {
      if (f.size) die(`unknown parameter --${[...f.keys()][0]}; known: ${known}`);
    },
  };
}

// Grow a batch from `first` until it lasts 50 ms (`measure(b)` resolves to elapsed ns), then scale
// to about 0.5 s (clamped).
async function calibrate(measure, first) {
  for (let b = first; ; b *= 2) {
    const el = await measure(b);
    if (el >= 50e6 || b >= 1e9) {
      return Math.max(100, Math.min(50000000, Math.round(5e8 / Math.max(el / b, 0.1))));
    }
  }
}

// In a worker: say ready, then block until the main thread releases every worker with one store.
function awaitGo(sab) {
  parentPort.postMessage({ ready: true });
  Atomics.wait(new Int32Array(sab), 0, 0);
}

// Main thread: one worker per entry of `datas` (workerData; a `sab` is added), each calling
// awaitGo(workerData.sab) before its timed part and posting one result.  The timed region spans
// the release and every result; returns the results in worker order.
async function runWorkers(file, datas, prog, region) {
  const sab = new SharedArrayBuffer(4);
  const flag = new Int32Array(sab);
  const workers = [];
  const readies = [];
  const results = [];
  for (const data of datas) {
    const w = new Worker(file, { workerData: { ...data, sab } });
    const msgs = [];
    let wake = null;
    w.on('message', (m) => { msgs.push(m); if (wake) { wake(); wake = null; } });
    w.on('error', (e) => { process.stderr.write(`${prog}: worker failed: ${e}\n`); process.exit(1); });
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
  await Promise.all(workers.map((w) => w.terminate()));
  return rs;
}

// The contract's first keys: n operations per thread, perNs the timed ns of each thread.
function resultHead(workload, n, perNs) {
  const threads = perNs.length;
  const ops = n * threads;
  const maxNs = Math.max(...perNs);
  return {
    workload,
    ops,
    threads,
    per_thread_ns: perNs,
    ns_per_op: perNs.reduce((a, x) => a + x / n, 0) / threads,
    ops_per_s: maxNs > 0 ? (ops * 1e9) / maxNs : 0,
  };
}

module.exports = { flags, calibrate, awaitGo, runWorkers, resultHead };
