// A Go tracee for functracer (tests/integration/test_go.py): goroutines on several
// threads, recursion deep enough to make the runtime grow (copy) goroutine stacks, a
// panic recovered through traced frames, a method on a pointer receiver. It checks
// its own results and prints how often each function under test ran, as the C
// tracees do (tests/progs/tracee.h): "calls NAME=N ...".
//
// Goroutines move between threads: hop yields (runtime.Gosched) inside a traced call,
// so that another goroutine runs on its thread meanwhile and it goes on wherever the
// scheduler puts it; functracer keeps call stacks per goroutine.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	workers = 4
	depth   = 3000 // frames of deep: its 256-byte argument grows the stack many times
	rounds  = 5
)

var deepCalls, leafCalls, methodCalls, panickerCalls, safeCalls, workerCalls, describeCalls, hopCalls, greetCalls int64

var names = []string{"alpha", "beta", "gamma", "delta"}

type pad [256]byte

//go:noinline
func deep(n int, p pad) int {
	atomic.AddInt64(&deepCalls, 1)
	if n == 0 {
		return leaf(int(p[0]))
	}
	return deep(n-1, p) + 1
}

//go:noinline
func leaf(x int) int {
	atomic.AddInt64(&leafCalls, 1)
	return x + 1
}

type Counter struct{ total int }

//go:noinline
func (c *Counter) Add(k int) int {
	atomic.AddInt64(&methodCalls, 1)
	c.total += k
	return c.total
}

//go:noinline
func panicker(n int) int {
	atomic.AddInt64(&panickerCalls, 1)
	if n == 0 {
		panic("boom")
	}
	return panicker(n-1) + 1
}

// safe recovers the panic panicker raises from n frames down; its named result says so.
//
//go:noinline
func safe(n int) (r int) {
	atomic.AddInt64(&safeCalls, 1)
	defer func() {
		if recover() != nil {
			r = -n
		}
	}()
	return panicker(n)
}

// describe's arguments take six of Go's integer registers: a slice three (pointer,
// length, capacity), a string two (pointer, length), a bool one.
//
//go:noinline
func describe(xs []int, name string, on bool) int {
	atomic.AddInt64(&describeCalls, 1)
	n := 100*len(xs) + 10*len(name)
	if on {
		n++
	}
	return n
}

// greet returns a string made at run time: its text pointer and length in two registers.
//
//go:noinline
func greet(name string) string {
	atomic.AddInt64(&greetCalls, 1)
	return "hi " + name
}

// hop lets other goroutines run, in the middle of a traced call: it sleeps (the
// goroutine is parked, its thread runs others or idles, and a timer wakes it on
// whichever thread takes it) and yields.
//
//go:noinline
func hop(n int) int {
	atomic.AddInt64(&hopCalls, 1)
	time.Sleep(time.Millisecond)
	runtime.Gosched()
	return leaf(n) + 1
}

//go:noinline
func worker(id int, out []int, wg *sync.WaitGroup) {
	defer wg.Done()
	atomic.AddInt64(&workerCalls, 1)
	c := &Counter{}
	var p pad
	p[0] = byte(id)
	sum := 0
	for i := 0; i < rounds; i++ {
		sum += deep(depth, p)
		sum += c.Add(i)
		sum += safe(i + 3)
		sum += hop(id) - 1 // leaf(p[0] = id)
		if g := greet(names[id]); g != "hi "+names[id] {
			fmt.Fprintf(os.Stderr, "greet: got %q\n", g)
			os.Exit(1)
		}
		xs := make([]int, i, 8)
		if got, want := describe(xs, names[id], i%2 == 0), 100*i+10*len(names[id])+(1-i%2); got != want {
			fmt.Fprintf(os.Stderr, "describe: got %d, want %d\n", got, want)
			os.Exit(1)
		}
	}
	out[id] = sum
}

func main() {
	runtime.GOMAXPROCS(workers)
	out := make([]int, workers)
	var wg sync.WaitGroup
	for id := 0; id < workers; id++ {
		wg.Add(1)
		go func(id int) {
			worker(id, out, &wg)
		}(id)
	}
	wg.Wait()
	for id := 0; id < workers; id++ {
		// deep(depth) = depth + id + 1; Add's running total; safe(i+3) = -(i+3); hop(id) - 1 = id + 1
		want := 0
		total := 0
		for i := 0; i < rounds; i++ {
			total += i
			want += depth + id + 1 + total - (i + 3) + id + 1
		}
		if out[id] != want {
			fmt.Fprintf(os.Stderr, "worker %d: got %d, want %d\n", id, out[id], want)
			os.Exit(1)
		}
	}
	fmt.Printf("%d workers agree\n", workers)
	fmt.Printf("calls main.deep=%d main.leaf=%d main.(*Counter).Add=%d main.panicker=%d main.safe=%d main.worker=%d main.describe=%d main.hop=%d main.greet=%d\n",
		deepCalls, leafCalls, methodCalls, panickerCalls, safeCalls, workerCalls, describeCalls, hopCalls, greetCalls)
	fmt.Printf("unwound panic main.panicker=%d\n", panickerCalls) // none returns
	os.Exit(3)
}
