// Package region announces a workload's timed region to perflab (same protocol as
// include/perflab_region.h).
//
// perflab sets PERFLAB_CTL_FIFO / PERFLAB_ACK_FIFO to two named pipes; Begin writes "enable\n" to
// the control fifo and waits for one line on the ack fifo, End does the same with "disable\n".
// Without the variables both are no-ops.  Call them from one goroutine, around the
// barrier-released region of all workers.  Standard library only, so workloads build offline.
package region

import (
	"fmt"
	"os"
	"sync"
)

var (
	once sync.Once
	mu   sync.Mutex
	ctl  *os.File
	ack  *os.File
)

func open() {
	c, a := os.Getenv("PERFLAB_CTL_FIFO"), os.Getenv("PERFLAB_ACK_FIFO")
	if c == "" || a == "" {
		return
	}
	// Same order as the C header: the writer side first, then the reader side.
	cf, err1 := os.OpenFile(c, os.O_WRONLY, 0)
	af, err2 := os.OpenFile(a, os.O_RDONLY, 0)
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "perflab_region: cannot open the control fifos (%s, %s); counting the whole process\n", c, a)
		if cf != nil {
			cf.Close()
		}
		if af != nil {
			af.Close()
		}
		return
	}
	ctl, ack = cf, af
}

func send(cmd string) {
	once.Do(open)
	if ctl == nil {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if _, err := ctl.WriteString(cmd); err != nil {
		return
	}
	// Read up to and including the newline of "ack\n".
	b := make([]byte, 1)
	for i := 0; i < 64; i++ {
		n, err := ack.Read(b)
		if n != 1 || err != nil || b[0] == '\n' {
			break
		}
	}
}

// Begin starts the timed region: counters on (blocks until perflab acknowledges).
func Begin() { send("enable\n") }

// End ends the timed region: counters off.
func End() { send("disable\n") }
