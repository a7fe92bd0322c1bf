// perflab mmap churn (Go): the deterministic anonymous mmap / munmap / mremap sequence of
// ../c/src/mmap.c (CHURN SPEC there), with the same checksum.  Raw syscalls (package syscall)
// so the addresses stay plain uintptrs, as in C; each worker is locked to its OS thread.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"perflab/flags"
	"perflab/region"
)

const (
	defaultSeed   uint64 = 88172645463325252
	warmupSalt    uint64 = 0xD1B54A32D192ED03
	mask53        uint64 = (1 << 53) - 1
	mremapMaymove        = 1
)

var prots = [4]int{syscall.PROT_NONE, syscall.PROT_READ, syscall.PROT_READ | syscall.PROT_WRITE,
	syscall.PROT_READ | syscall.PROT_WRITE}

var cmd = flags.Command{Prog: "mmap-churn"}

func usage(format string, a ...any) { cmd.Usage(format, a...) }

func die(what string, errno syscall.Errno) {
	fmt.Fprintf(os.Stderr, "mmap-churn: %s failed: %v\n", what, errno)
	os.Exit(1)
}

type slot struct {
	addr  uintptr
	pages uint64
	prot  int
}

type churn struct {
	rng, h uint64
	counts [4]uint64 // mmap, munmap, mremap, touch
	page   uint64
	slots  []slot
}

func newChurn(seed uint64, nslots int, page uint64) *churn {
	if seed == 0 {
		seed = 1
	}
	return &churn{rng: seed, h: 0xcbf29ce484222325, page: page, slots: make([]slot, nslots)}
}

func (c *churn) next() uint64 {
	x := c.rng
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	c.rng = x
	return x
}

func (c *churn) mix(v uint64) { c.h = (c.h ^ v) * 0x100000001b3 }

func (c *churn) ops(n uint64) {
	ps := c.page
	nslots := uint64(len(c.slots))
	for i := uint64(0); i < n; i++ {
		r := c.next()
		s := r % nslots
		sl := &c.slots[s]
		var kind uint64
		if sl.pages == 0 {
			np := 1 + ((r >> 20) & 15)
			prot := prots[(r>>24)&3]
			p, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(np*ps), uintptr(prot),
				syscall.MAP_PRIVATE|syscall.MAP_ANON, ^uintptr(0), 0)
			if e != 0 {
				die("mmap", e)
			}
			sl.addr, sl.pages, sl.prot = p, np, prot
			kind = 1
			c.counts[0]++
		} else if (r>>28)&1 == 1 {
			if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, sl.addr, uintptr(sl.pages*ps), 0); e != 0 {
				die("munmap", e)
			}
			sl.addr, sl.pages = 0, 0
			kind = 2
			c.counts[1]++
		} else {
			np := 1 + ((r >> 20) & 15)
			p, _, e := syscall.Syscall6(syscall.SYS_MREMAP, sl.addr, uintptr(sl.pages*ps),
				uintptr(np*ps), mremapMaymove, 0, 0)
			if e != 0 {
				die("mremap", e)
			}
			sl.addr, sl.pages = p, np
			kind = 3
			c.counts[2]++
		}
		var prot uint64
		if sl.pages != 0 {
			prot = uint64(sl.prot)
		}
		c.mix(kind<<40 | s<<16 | sl.pages<<8 | prot)
		if sl.pages != 0 && sl.prot == syscall.PROT_READ|syscall.PROT_WRITE && (r>>32)&7 == 0 {
			r2 := c.next()
			pg := r2 % sl.pages
			off := (r2 >> 8) & 4095
			// The mapping is outside the Go heap, so converting its address is safe here.
			b := (*byte)(unsafe.Pointer(sl.addr + uintptr(pg*ps+off)))
			old := *b
			*b = byte(r2 >> 24)
			c.mix(1<<48 | pg<<20 | off<<8 | uint64(old))
			c.counts[3]++
		}
	}
}

// perflab_timed_region_churn is the timed loop in a named, never-inlined frame, as in C and Rust
// (perf profiles can pick it out; valgrind 3.19 crashes on Go 1.26 binaries, so the manifest
// declares no region_symbol for callgrind).
//
//go:noinline
func perflab_timed_region_churn(c *churn, n uint64) { c.ops(n) }

func (c *churn) free() {
	for _, sl := range c.slots {
		if sl.pages != 0 {
			syscall.Syscall(syscall.SYS_MUNMAP, sl.addr, uintptr(sl.pages*c.page), 0)
		}
	}
}

func thp() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	s := string(b)
	a, e := strings.Index(s, "["), strings.Index(s, "]")
	if err != nil || a < 0 || e < a {
		return "unknown"
	}
	return s[a+1 : e]
}

func main() {
	f := cmd.Read(os.Args[1:])
	if bench := f.String("bench", "churn"); bench != "churn" {
		usage("--bench='%s' is not available in Go; use churn (lat_mmap and lat_pagefault are in mmap/c)", bench)
	}
	threads := int(f.Int("threads", 1, 1, 256))
	nslots := int(f.Int("slots", 1024, 1, 65536))
	seed := f.Uint("seed", defaultSeed, 1, ^uint64(0))
	n := f.Uint("iterations", 1000000, 0, 1<<34)
	f.Done("bench, iterations, threads, seed, slots")
	if threads*nslots > 65536 {
		usage("--threads=%d x --slots=%d is over 65536 mappings (vm.max_map_count is usually 65530); use fewer threads or slots", threads, nslots)
	}
	page := uint64(os.Getpagesize())

	if n == 0 {
		// Double a single-threaded trial until it takes 50 ms, then scale to about 0.5 s.
		k := uint64(1000)
		var ns int64
		for {
			w := newChurn(seed^warmupSalt, nslots, page)
			t0 := time.Now()
			w.ops(k)
			ns = time.Since(t0).Nanoseconds()
			w.free()
			if ns >= 50_000_000 || k >= 20_000_000 {
				break
			}
			k *= 2
		}
		n = uint64(float64(k) * 5e8 / float64(max(ns, 1)))
		n = min(max(n, 10_000), 20_000_000)
	}
	warmup := min(n/10, 20000)
	type result struct {
		ns     int64
		h      uint64
		counts [4]uint64
	}
	results := make([]result, threads)
	var ready, done sync.WaitGroup
	goCh := make(chan struct{})
	ready.Add(threads)
	done.Add(threads)
	for t := 0; t < threads; t++ {
		go func(t int) {
			runtime.LockOSThread()
			defer done.Done()
			tseed := seed + uint64(t)*0x9E3779B97F4A7C15
			// Warm-up on a throw-away state, so the timed sequence starts from empty slots.
			w := newChurn(tseed^warmupSalt, nslots, page)
			w.ops(warmup)
			w.free()
			c := newChurn(tseed, nslots, page)
			ready.Done()
			<-goCh
			t0 := time.Now()
			perflab_timed_region_churn(c, n)
			results[t] = result{time.Since(t0).Nanoseconds(), c.h, c.counts}
			c.free()
		}(t)
	}
	ready.Wait()
	fmt.Fprintf(os.Stderr, "mmap-churn: timed region begins (%d thread(s) x %d ops)\n", threads, n)
	region.Begin()
	close(goCh)
	done.Wait()
	region.End()

	var h uint64
	var counts [4]uint64
	per := make([]string, threads)
	nsop := 0.0
	maxns := int64(1)
	for i, r := range results {
		h += r.h
		for k := range counts {
			counts[k] += r.counts[k]
		}
		per[i] = strconv.FormatInt(r.ns, 10)
		if n > 0 {
			nsop += float64(r.ns) / float64(n)
		}
		maxns = max(maxns, r.ns)
	}
	nsop /= float64(threads)
	ops := n * uint64(threads)
	fmt.Printf("{\"workload\":\"mmap\",\"bench\":\"churn\",\"lang\":\"go\",\"ops\":%d,\"threads\":%d,"+
		"\"per_thread_ns\":[%s],\"ns_per_op\":%.3f,\"ops_per_s\":%.1f,\"checksum\":%d,"+
		"\"counts\":{\"mmap\":%d,\"munmap\":%d,\"mremap\":%d,\"touch\":%d},\"thp\":\"%s\",\"page_size\":%d,"+
		"\"params\":{\"bench\":\"churn\",\"iterations\":%d,\"threads\":%d,\"seed\":%d,\"slots\":%d}}\n",
		ops, threads, strings.Join(per, ","), nsop, float64(ops)*1e9/float64(maxns), h&mask53,
		counts[0], counts[1], counts[2], counts[3], thp(), page, n, threads, seed, nslots)
}
