// Command stress runs go test on the packages given, with -race and a -count, while a CPU
// burner keeps every core busy beside it: the way to find tests that pass on a quiet machine
// and fail on a loaded CI machine. `make test-stress` calls it.
//
//	go run ./test/stress [-count 5] [-run REGEXP] [-burn N] [-race=false] [packages]
//
// The burner is N goroutines in this process spinning for as long as go test runs (N = the
// number of CPUs by default), so it ends with the run, also when the run fails or is
// interrupted. The exit code is go test's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	count := flag.Int("count", 5, "go test -count")
	run := flag.String("run", "", "go test -run")
	race := flag.Bool("race", true, "go test -race")
	burn := flag.Int("burn", runtime.NumCPU(), "spinning goroutines beside the tests")
	timeout := flag.Duration("timeout", 60*time.Minute, "go test -timeout")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}

	args := []string{"test", "-count", strconv.Itoa(*count), "-timeout", timeout.String()}
	if *race {
		args = append(args, "-race")
	}
	if *run != "" {
		args = append(args, "-run", *run)
	}
	args = append(args, pkgs...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), *burn+1))
	var spinning atomic.Bool
	spinning.Store(true)
	var wg sync.WaitGroup
	for range *burn {
		wg.Go(func() {
			x := uint64(1)
			for spinning.Load() {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}

	fmt.Fprintf(os.Stderr, "stress: %d burner goroutines; go %v\n", *burn, args)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	spinning.Store(false)
	wg.Wait()
	fmt.Fprintf(os.Stderr, "stress: go test ran %s under load\n", time.Since(start).Round(time.Second))
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}
