// Thirty benchmarks (six kernels whose work is linear in n, at five sizes) for the test of
// comparing two `go test -bench` files.  With PERFLAB_GOBENCH_SLOW=1 three of them
// (sum/n=1024, fnv/n=4096, dot/n=256) process 10% more elements per op: 10% more work,
// the others unchanged.  Each benchmark reports its thread's CPU time per op beside ns/op
// (b.ReportMetric, unit cpu-ns/op): on a machine shared with other work, wall time per op
// varies by tens of percent between runs, CPU time by a few.
// tests/fixtures/imports/README.md records the runs.
package gobench30

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in ns (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

var slowed = map[string]bool{"sum/n=1024": true, "fnv/n=4096": true, "dot/n=256": true}

type kernel struct {
	name string
	run  func(v []uint64) uint64
}

var kernels = []kernel{
	{"sum", func(v []uint64) uint64 {
		s := uint64(0)
		for _, x := range v {
			s += x
		}
		return s
	}},
	{"xor", func(v []uint64) uint64 {
		s := uint64(0)
		for _, x := range v {
			s ^= x<<13 | x>>7
		}
		return s
	}},
	{"fnv", func(v []uint64) uint64 {
		h := uint64(14695981039346656037)
		for _, x := range v {
			h ^= x & 0xff
			h *= 1099511628211
		}
		return h
	}},
	{"popcount", func(v []uint64) uint64 {
		c := uint64(0)
		for _, x := range v {
			for x != 0 {
				x &= x - 1
				c++
			}
		}
		return c
	}},
	{"dot", func(v []uint64) uint64 {
		s := uint64(0)
		for i := 1; i < len(v); i++ {
			s += v[i] * v[i-1]
		}
		return s
	}},
	{"max", func(v []uint64) uint64 {
		m := uint64(0)
		for _, x := range v {
			if x*2654435761%1000003 > m {
				m = x * 2654435761 % 1000003
			}
		}
		return m
	}},
}

func BenchmarkKernel(b *testing.B) {
	slow := os.Getenv("PERFLAB_GOBENCH_SLOW") == "1"
	for _, k := range kernels {
		for _, n := range []int{64, 256, 1024, 4096, 16384} {
			name := fmt.Sprintf("%s/n=%d", k.name, n)
			size := n
			if slow && slowed[name] {
				size = n + n/10
			}
			v := make([]uint64, size)
			for i := range v {
				v[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
			}
			run := k.run
			b.Run(name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				start := threadCPU()
				for i := 0; i < b.N; i++ {
					sink += run(v)
				}
				b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
