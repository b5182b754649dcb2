// bench/go/peer.go: Go's scheduler as the peer of the runner's scale and
// latency scenarios (docs/benchmarks.md, "Go"). The runner builds it with
// Debian's golang-go and runs it as a child process, one sample per run.
//
// Each agent is a goroutine draining a buffered channel of tasks; its
// chains re-post into its own channel, as ptsched's scale scenario's agents
// re-post into their own loop, and GOMAXPROCS is the pool's thread count.
// Go has no priorities: the latency mode shows what an urgent task in an
// idle tenant waits while the others flood (Go runs a goroutine until it
// blocks or is preempted after 10 ms, runtime/proc.go forcePreemptNS).
//
// Output, one line: "ns_per_task X" (scale) or "delays_ns D1 D2 ..."
// (latency: each delay from the injection's intended time to the start of
// the urgent task).
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type agent struct {
	ch        chan int32
	remaining int
	chains    int
	ran       int
}

// run drains the agent's channel: each item is a task; a task re-posts its
// chain while the agent's quota lasts.
func (a *agent) run(start <-chan struct{}, width int, done *sync.WaitGroup) {
	<-start
	for i := 0; i < width && a.remaining > 0; i++ {
		a.remaining--
		a.ch <- int32(i)
		a.chains++
	}
	if a.chains == 0 {
		done.Done()
		return
	}
	for c := range a.ch {
		a.ran++
		if a.remaining > 0 {
			a.remaining--
			a.ch <- c
			continue
		}
		a.chains--
		if a.chains == 0 {
			done.Done()
			return
		}
	}
}

func scale(agents, tasks, width int) float64 {
	as := make([]*agent, agents)
	start := make(chan struct{})
	var done sync.WaitGroup
	done.Add(agents)
	for i := range as {
		as[i] = &agent{ch: make(chan int32, width), remaining: tasks / agents}
		go as[i].run(start, width, &done)
	}
	t0 := time.Now()
	close(start)
	done.Wait()
	el := time.Since(t0)
	ran := 0
	for _, a := range as {
		ran += a.ran
	}
	return float64(el.Nanoseconds()) / float64(ran)
}

func spin(ns int64) {
	t0 := time.Now()
	for time.Since(t0).Nanoseconds() < ns {
	}
}

// latency: one flooding tenant (width chains of bgNs tasks) and one idle
// tenant on GOMAXPROCS threads; every gap/2..3gap/2 an urgent task is sent
// to the idle tenant; its start delay is measured from the send's intended
// time (the injector is a goroutine and waits for a thread like any other).
func latency(bgNs, gapNs int64, samples, width int, budget time.Duration) []int64 {
	var stop atomic.Bool
	flood := make(chan int32, width)
	var floodDone sync.WaitGroup
	floodDone.Add(1)
	go func() {
		defer floodDone.Done()
		for i := 0; i < width; i++ {
			flood <- int32(i)
		}
		for c := range flood {
			spin(bgNs)
			if stop.Load() {
				if len(flood) == 0 {
					return
				}
				continue
			}
			flood <- c
		}
	}()
	urgent := make(chan time.Time)
	started := make(chan int64)
	go func() {
		for t := range urgent {
			started <- time.Since(t).Nanoseconds()
		}
	}()
	time.Sleep(time.Millisecond)
	rng := rand.New(rand.NewSource(12345))
	var delays []int64
	end := time.Now().Add(budget)
	for i := 0; i < samples && time.Now().Before(end); i++ {
		intended := time.Now().Add(time.Duration(gapNs/2 + rng.Int63n(gapNs+1)))
		time.Sleep(time.Until(intended))
		urgent <- intended
		delays = append(delays, <-started)
	}
	stop.Store(true)
	close(urgent)
	floodDone.Wait()
	return delays
}

func main() {
	mode := flag.String("mode", "scale", "scale or latency")
	threads := flag.Int("threads", 1, "GOMAXPROCS")
	agents := flag.Int("agents", 1, "scale: agents (goroutines)")
	tasks := flag.Int("tasks", 64000, "scale: tasks in all")
	width := flag.Int("chains", 8, "chains per agent")
	bgNs := flag.Int64("bg_ns", 5000, "latency: a flood task's length")
	gapNs := flag.Int64("gap_ns", 40000, "latency: mean gap between urgent tasks")
	samples := flag.Int("samples", 600, "latency: urgent tasks at most")
	budget := flag.Duration("budget", 400*time.Millisecond, "latency: time at most")
	flag.Parse()
	runtime.GOMAXPROCS(*threads)
	switch *mode {
	case "scale":
		fmt.Printf("ns_per_task %.3f\n", scale(*agents, *tasks, *width))
	case "latency":
		d := latency(*bgNs, *gapNs, *samples, *width, *budget)
		s := make([]string, len(d))
		for i, v := range d {
			s[i] = fmt.Sprint(v)
		}
		fmt.Printf("delays_ns %s\n", strings.Join(s, " "))
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", *mode)
		os.Exit(2)
	}
}
