//go:build !slow

package gobench

// sumExtra is how many more integers BenchmarkSum adds: none in the ordinary build.
const sumExtra = 0
