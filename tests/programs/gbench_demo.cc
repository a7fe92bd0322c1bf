// Three Google Benchmark benchmarks with known work, for the gbench import tests:
// BM_sum/N sums N integers (times in ns), BM_copy/N copies N bytes and reports a byte rate
// (bytes_per_second) and an items counter, BM_sleepless counts calls in a user counter (in ms).
// Built with -DPERFLAB_SLOW=1, BM_sum/512 sums 5% more integers (537) and nothing else changes
// (the harness interleaving tests).
#include <benchmark/benchmark.h>

#include <cstring>
#include <numeric>
#include <vector>

#ifndef PERFLAB_SLOW
#define PERFLAB_SLOW 0
#endif

static void BM_sum(benchmark::State& state) {
  size_t n = static_cast<size_t>(state.range(0));
  if (PERFLAB_SLOW && n == 512) n += n / 20;
  std::vector<int> v(n, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0));
  }
}
BENCHMARK(BM_sum)->Arg(64)->Arg(512);

static void BM_copy(benchmark::State& state) {
  std::vector<char> src(static_cast<size_t>(state.range(0)), 'x'), dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.counters["items"] = benchmark::Counter(static_cast<double>(state.range(0)));
}
BENCHMARK(BM_copy)->Arg(4096);

static void BM_calls(benchmark::State& state) {
  int calls = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(++calls);
  }
  state.counters["calls"] = calls;
}
BENCHMARK(BM_calls)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
