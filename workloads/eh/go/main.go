// eh/go: the cost of a Go panic recovered by a deferred recover through `depth` real frames
// (after dotnet/runtime#77568).
//
//	kind=software  panic(value) + deferred recover()
//	kind=hardware  a nil pointer dereference: a real SIGSEGV the runtime turns into a panic
//	kind=error     the baseline: an error value returned through the same frames
//
// depth 0 = the panic is in the function whose deferred call recovers; depth N = N
// perflabFrame calls (//go:noinline, so every frame is real).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"perflab/flags"
	"perflab/region"
)

const (
	calibrateNs   = 5e8 // iterations=0: aim for about 0.5 s per thread
	minIterations = 100
	maxIterations = 200_000_000
)

type smallError struct{ code int }

func (e *smallError) Error() string { return "perflab eh" }

var (
	errValue = &smallError{1} // preallocated: the panic value costs no allocation
	nilPtr   *smallError      // a package variable: the compiler cannot prove it nil
	gThrown  atomic.Uint64
	gFaults  atomic.Uint64 // recovered runtime errors (kind=hardware)
	mismatch atomic.Bool
)

type config struct {
	depth int
	kind  string
}

// perflabFrame is one frame between recover and panic.
//
//go:noinline
func perflabFrame(depth int, hardware bool, thrown *uint64) int {
	if depth <= 1 {
		*thrown++
		if hardware {
			return nilPtr.code // SIGSEGV -> runtime error panic
		}
		panic(errValue)
	}
	r := perflabFrame(depth-1, hardware, thrown)
	return r + 1 // work after the call: no tail call
}

//go:noinline
func perflabFrameError(depth int, thrown *uint64) (int, error) {
	if depth <= 1 {
		*thrown++
		return 0, errValue
	}
	r, err := perflabFrameError(depth-1, thrown)
	if err != nil { // how error values propagate: every frame checks
		return 0, err
	}
	return r + 1, nil
}

// catchOne runs one throw and reports whether it was recovered.
//
//go:noinline
func catchOne(c *config, hardware bool, thrown *uint64, faults *uint64) (caught bool) {
	defer func() {
		if r := recover(); r != nil {
			caught = true
			if _, ok := r.(runtime.Error); ok { // the runtime's panic for the SIGSEGV
				*faults++
			}
		}
	}()
	if c.depth == 0 {
		*thrown++
		if hardware {
			_ = nilPtr.code
		} else {
			panic(errValue)
		}
	}
	perflabFrame(c.depth, hardware, thrown)
	return false
}

func ehLoop(n int, c *config) uint64 {
	var caught, thrown, faults uint64
	switch c.kind {
	case "error":
		for i := 0; i < n; i++ {
			var err error
			if c.depth == 0 {
				thrown++
				err = errValue
			} else {
				_, err = perflabFrameError(c.depth, &thrown)
			}
			if err != nil {
				caught++
			}
		}
	default:
		hw := c.kind == "hardware"
		for i := 0; i < n; i++ {
			if catchOne(c, hw, &thrown, &faults) {
				caught++
			}
		}
	}
	if thrown != caught || caught != uint64(n) || (c.kind == "hardware" && faults != caught) {
		mismatch.Store(true)
	}
	gThrown.Add(thrown)
	gFaults.Add(faults)
	return caught
}

// perflab_timed_region is a named frame so callgrind --toggle-collect can find it.
//
//go:noinline
func perflab_timed_region(n int, c *config) uint64 { //nolint:revive // the name is the contract
	return ehLoop(n, c)
}

// threadCPUNs is this OS thread's CPU time (the goroutine is locked to it): next to the wall
// time it shows how much a busy machine stole.
func threadCPUNs() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var cmd = flags.Command{Prog: "eh"}

func main() {
	f := cmd.Read(os.Args[1:])
	depth := int(f.Int("depth", 0, 0, 100000))
	kind := f.Choice("kind", "software", "software", "hardware", "error")
	threads := int(f.Int("threads", 1, 1, 1024))
	iterations := int(f.Int("iterations", 0, 0, maxIterations))
	f.Done("depth, kind, threads, iterations")
	c := &config{depth: depth, kind: kind}

	n := iterations
	calibrated := n == 0
	if calibrated {
		// Double until one batch takes >= 20 ms, then scale to the target (also a warm-up).
		k := 16
		var ns float64
		for {
			t0 := time.Now()
			ehLoop(k, c)
			ns = float64(time.Since(t0).Nanoseconds())
			if ns >= 2e7 || k >= maxIterations {
				break
			}
			k *= 2
		}
		per := ns / float64(k)
		if per < 1 {
			per = 1
		}
		n = min(max(int(calibrateNs/per), minIterations), maxIterations)
	}
	warmup := min(max(n/10, 10), 1000)

	var ready, done sync.WaitGroup
	start := make(chan struct{})
	perThread := make([]int64, threads)
	perThreadCPU := make([]int64, threads)
	caught := make([]uint64, threads)
	ready.Add(threads)
	done.Add(threads)
	for t := 0; t < threads; t++ {
		go func(t int) {
			runtime.LockOSThread() // one OS thread per worker, like the other runtimes
			defer done.Done()
			ehLoop(warmup, c)
			ready.Done()
			<-start // the barrier: every worker is released by one close
			c0 := threadCPUNs()
			t0 := time.Now()
			caught[t] = perflab_timed_region(n, c)
			perThread[t] = time.Since(t0).Nanoseconds()
			perThreadCPU[t] = threadCPUNs() - c0
		}(t)
	}
	ready.Wait()
	gThrown.Store(0) // count only the timed region
	gFaults.Store(0)
	region.Begin()
	w0 := time.Now()
	close(start)
	done.Wait()
	wall := time.Since(w0).Nanoseconds()
	region.End()

	var checksum uint64
	var sum, cpu float64
	var slowest int64
	for t := range perThread {
		checksum += caught[t]
		sum += float64(perThread[t]) / float64(n)
		cpu += float64(perThreadCPU[t]) / float64(n)
		slowest = max(slowest, perThread[t])
	}
	if mismatch.Load() || gThrown.Load() != checksum {
		fmt.Fprintf(os.Stderr, "eh: thrown %d, caught %d: the counts disagree\n", gThrown.Load(), checksum)
		os.Exit(1)
	}
	ops := uint64(n) * uint64(threads)
	out := map[string]any{
		"ops": ops, "threads": threads, "iterations": n, "warmup": warmup, "calibrated": calibrated,
		"per_thread_ns": perThread, "ns_per_op": sum / float64(threads),
		"per_thread_cpu_ns": perThreadCPU, "cpu_ns_per_op": cpu / float64(threads),
		"ops_per_s": float64(ops) * 1e9 / float64(max(slowest, 1)), "wall_ns": wall,
		"checksum": checksum, "thrown": gThrown.Load(), "signals": gFaults.Load(),
		"compiler": strings.TrimPrefix(runtime.Version(), "go"), "gomaxprocs": runtime.GOMAXPROCS(0),
		"params": map[string]any{"depth": depth, "kind": kind, "threads": threads, "iterations": iterations},
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
