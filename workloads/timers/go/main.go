// Command timers is the perflab workload timers/go: goroutines (each locked to an OS thread) each
// create and stop time.AfterFunc timers that never fire (an hour), after dotnet/coreclr#14527.
// Go keeps one timer heap per P, so it should scale with threads.  --live=N keeps N more
// timers armed so the heaps have depth.  checksum = timers stopped (Stop returned true).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"perflab/flags"
	"perflab/region"
)

var fired atomic.Int64

func onFire() { fired.Add(1) } // never expected to run: the timeout is an hour

var cmd = flags.Command{Prog: "timers/go"}

// churn creates and stops n timers; it returns how many Stop calls cancelled a pending timer.
//
//go:noinline
func churn(n int64) int64 {
	var stopped int64
	for i := int64(0); i < n; i++ {
		t := time.AfterFunc(time.Hour, onFire)
		if t.Stop() {
			stopped++
		}
	}
	return stopped
}

func main() {
	f := cmd.Read(os.Args[1:])
	threads := int(f.Int("threads", 1, 1, 1024))
	iterations := f.Int("iterations", 0, 0, 1_000_000_000)
	live := f.Int("live", 0, 0, 10_000_000)
	f.Done("threads, live, iterations")

	// Live timers first, spread over the threads' Ps by creating them from each worker below.
	liveTimers := make([][]*time.Timer, threads)

	// Warm-up and calibration on the main goroutine.
	churn(20000)
	n := iterations
	if n == 0 {
		for b := int64(100); ; b *= 2 {
			t0 := time.Now()
			churn(b)
			el := time.Since(t0).Nanoseconds()
			if el >= 50_000_000 || b >= 1_000_000_000 {
				per := float64(el) / float64(b)
				n = int64(5e8 / max(per, 0.1))
				n = min(max(n, 100), 50_000_000)
				break
			}
		}
	}

	perNs := make([]int64, threads)
	stopped := make([]int64, threads)
	var ready, done sync.WaitGroup
	ready.Add(threads)
	done.Add(threads)
	goCh := make(chan struct{})
	share := live / int64(threads)
	for t := 0; t < threads; t++ {
		extra := int64(0)
		if int64(t) < live%int64(threads) {
			extra = 1
		}
		go func(id int, nLive int64) {
			runtime.LockOSThread() // one OS thread per worker, as the references use threads
			defer done.Done()
			for i := int64(0); i < nLive; i++ {
				liveTimers[id] = append(liveTimers[id], time.AfterFunc(time.Hour, onFire))
			}
			churn(1000)
			ready.Done()
			<-goCh
			t0 := time.Now()
			s := churn(n)
			perNs[id] = time.Since(t0).Nanoseconds()
			stopped[id] = s
		}(t, share+extra)
	}
	ready.Wait()
	region.Begin()
	close(goCh)
	done.Wait()
	region.End()

	var liveStopped, checksum, maxNs int64
	for _, ts := range liveTimers {
		for _, t := range ts {
			if t.Stop() {
				liveStopped++
			}
		}
	}
	sum := 0.0
	for i := range perNs {
		checksum += stopped[i]
		sum += float64(perNs[i]) / float64(n)
		maxNs = max(maxNs, perNs[i])
	}
	ops := n * int64(threads)
	opsPerS := 0.0
	if maxNs > 0 {
		opsPerS = float64(ops) * 1e9 / float64(maxNs)
	}
	out := map[string]any{
		"workload":              "timers/go",
		"ops":                   ops,
		"threads":               threads,
		"per_thread_ns":         perNs,
		"ns_per_op":             sum / float64(threads),
		"ops_per_s":             opsPerS,
		"checksum":              checksum,
		"created":               ops,
		"fired":                 fired.Load(),
		"live_cancelled":        liveStopped,
		"iterations":            n,
		"calibrated":            iterations == 0,
		"iterations_per_thread": n,
		"timeout_s":             3600,
		"gomaxprocs":            runtime.GOMAXPROCS(0),
		"parallelism":           "threads",
		"runtime":               runtime.Version(),
		"params":                map[string]any{"threads": threads, "live": live, "iterations": iterations},
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
