//go:build slow

package gobench

// sumExtra is how many more integers BenchmarkSum adds in the build with -tags slow: 13 of
// 256, about 5% more work, and no other benchmark changes (the harness interleaving tests).
const sumExtra = 13
