// Three benchmarks with known work, for the gobench import tests: Sum (no allocations),
// Concat (allocates: B/op and allocs/op with -benchmem, and MB/s from SetBytes) and Hash (a
// custom unit from ReportMetric).  Each also reports its thread's CPU time per op (cpu-ns/op):
// on a machine shared with other work, ns/op (wall time) varies by tens of percent between
// runs, CPU time by a few.  Built with -tags slow, Sum does about 5% more work (slow_on.go) and
// nothing else changes.
package gobench

import (
	"hash/fnv"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

var sink int

// threadCPU is the calling thread's CPU time in ns (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// cpuPerOp runs the timed loop on one OS thread and reports that thread's CPU time per op.
func cpuPerOp(b *testing.B, loop func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	start := threadCPU()
	loop()
	b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkSum(b *testing.B) {
	v := make([]int, 256+sumExtra)
	for i := range v {
		v[i] = i
	}
	cpuPerOp(b, func() {
		for i := 0; i < b.N; i++ {
			s := 0
			for _, x := range v {
				s += x
			}
			sink = s
		}
	})
}

func BenchmarkConcat(b *testing.B) {
	b.SetBytes(64)
	cpuPerOp(b, func() {
		for i := 0; i < b.N; i++ {
			var sb strings.Builder
			for j := 0; j < 8; j++ {
				sb.WriteString("abcdefgh")
			}
			sink = len(sb.String())
		}
	})
}

func BenchmarkHash(b *testing.B) {
	data := []byte(strings.Repeat("x", 1024))
	cpuPerOp(b, func() {
		for i := 0; i < b.N; i++ {
			h := fnv.New64a()
			h.Write(data)
			sink = int(h.Sum64())
		}
	})
	b.ReportMetric(float64(len(data)), "bytes/hash")
}
