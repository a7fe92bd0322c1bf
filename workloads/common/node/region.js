'use strict';
// Announce a workload's timed region to perflab (same protocol as include/perflab_region.h).
//
// perflab sets PERFLAB_CTL_FIFO / PERFLAB_ACK_FIFO to two named pipes; begin() writes "enable\n"
// to the control fifo and waits for one line on the ack fifo, end() does the same with
// "disable\n".  Without the variables both are no-ops.  Synchronous on purpose (openSync /
// writeSync / readSync) so no event-loop turn runs between the switch and the timed loop.
// Call from the main thread, around the barrier-released region of all workers.
const fs = require('fs');

let state = null; // null: not opened yet; false: disabled; {ctl, ack}: active

function open() {
  const c = process.env.PERFLAB_CTL_FIFO;
  const a = process.env.PERFLAB_ACK_FIFO;
  if (!c || !a) return false;
  try {
    // Same order as the C header: the writer side first, then the reader side.
    const ctl = fs.openSync(c, 'w');
    const ack = fs.openSync(a, 'r');
    return { ctl, ack };
  } catch (e) {
    process.stderr.write(`perflab_region: cannot open the control fifos (${c}, ${a}); ` +
      'counting the whole process\n');
    return false;
  }
}

function send(cmd) {
  if (state === null) state = open();
  if (!state) return;
  fs.writeSync(state.ctl, cmd);
  // Read up to and including the newline of "ack\n".
  const b = Buffer.alloc(1);
  for (let i = 0; i < 64; i++) {
    let n;
    try {
      n = fs.readSync(state.ack, b, 0, 1, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      break;
    }
    if (n !== 1 || b[0] === 0x0a) break;
  }
}

function begin() { send('enable\n'); }
function end() { send('disable\n'); }

module.exports = { begin, end };
