// Three benchmarks with known work, for the gobench import tests: Sum (ns/op only, no
// allocations), Concat (allocates: B/op and allocs/op with -benchmem, and MB/s from SetBytes)
// and Hash (a custom unit from ReportMetric).  Built with -tags slow, Sum does about 5% more
// work (slow_on.go) and nothing else changes.
package gobench

import (
	"hash/fnv"
	"strings"
	"testing"
)

var sink int

func BenchmarkSum(b *testing.B) {
	v := make([]int, 256+sumExtra)
	for i := range v {
		v[i] = i
	}
	for i := 0; i < b.N; i++ {
		s := 0
		for _, x := range v {
			s += x
		}
		sink = s
	}
}

func BenchmarkConcat(b *testing.B) {
	b.SetBytes(64)
	for i := 0; i < b.N; i++ {
		var sb strings.Builder
		for j := 0; j < 8; j++ {
			sb.WriteString("abcdefgh")
		}
		sink = len(sb.String())
	}
}

func BenchmarkHash(b *testing.B) {
	data := []byte(strings.Repeat("x", 1024))
	for i := 0; i < b.N; i++ {
		h := fnv.New64a()
		h.Write(data)
		sink = int(h.Sum64())
	}
	b.ReportMetric(float64(len(data)), "bytes/hash")
}
