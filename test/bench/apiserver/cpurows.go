package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// procServer is an apiserver process the bench started, with its embedded etcd member.
type procServer struct {
	kubeconfig, pki string
	etcdURL         string // its embedded etcd member's client URL
	pid             int
	stop            func()
}

// startServer starts program binary as a fresh apiserver process with its data under
// dir/name and extra flags, and waits until it is ready.
func startServer(dir, name string, fsync bool, binary string, extra ...string) procServer {
	cfg, err := servertest.Config(filepath.Join(dir, name))
	must(err)
	cfg.EtcdUnsafeNoFsync = !fsync
	proc := startProcess(binary, cfg, extra...)
	return procServer{kubeconfig: filepath.Join(cfg.DataDir, "admin.kubeconfig"), pki: filepath.Join(cfg.DataDir, "pki"),
		etcdURL: cfg.EtcdListenClientURL, pid: proc.Process.Pid, stop: func() { _ = proc.Process.Signal(syscall.SIGTERM); _ = proc.Wait() }}
}

// cpuRow is a pair of rows measured on two apiserver processes (the pair's api side on the
// left one, its etcd side on the right one), with each process's CPU time per operation:
// on this shared machine rates swing with the other load far more than a process's own CPU.
type cpuRow struct {
	pair
	leftCPU, rightCPU time.Duration
}

// measureCPU is measureOps on the processes left and right (their pids), reading each one's
// CPU time (with its embedded etcd member) around the rounds.
func measureCPU(left, right int, name string, conc, ops int, leftOp, rightOp func(int) error) cpuRow {
	l0, r0 := pidCPU(left), pidCPU(right)
	p := measureOps(name, conc, ops, leftOp, rightOp)
	done := time.Duration(rounds * (ops / rounds))
	return cpuRow{pair: p, leftCPU: (pidCPU(left) - l0) / done, rightCPU: (pidCPU(right) - r0) / done}
}

// printCPURows prints rows side by side under title, then each process's CPU time per
// operation.
func printCPURows(title, left, right string, rows []cpuRow) {
	var pairs []pair
	for _, r := range rows {
		pairs = append(pairs, r.pair)
	}
	printSideBySide(title, left, right, pairs)
	fmt.Printf("\nthe same rows, CPU time of each apiserver process (with its etcd member, if it embeds one) per request (ratio: %s/%s; 10 ms clock ticks):\n", left, right)
	fmt.Printf("%-18s %4s | %12s %12s | %7s\n", "op", "conc", left+" CPU/op", right+" CPU/op", "ratio")
	for _, r := range rows {
		ratio := 0.0
		if r.rightCPU > 0 {
			ratio = float64(r.leftCPU) / float64(r.rightCPU)
		}
		fmt.Printf("%-18s %4d | %12s %12s | %6.0f%%\n", r.api.name, r.api.conc, r.leftCPU.Round(time.Microsecond), r.rightCPU.Round(time.Microsecond), 100*ratio)
	}
}

// measureServerCPU is measureOps for two sides served by the processes leftPid and rightPid
// (the same one, or two): the CPU time of a side's process (with its embedded etcd member,
// if it has one) is read around every round of that side and summed. What a process still
// does for a round after its last response (watch cache events, etcd's background work)
// falls into the round after it, the other side's in half of the rounds when the two sides
// share a process.
func measureServerCPU(leftPid, rightPid int, name string, conc, ops int, leftOp, rightOp func(int) error) cpuRow {
	per := ops / rounds
	var left, right time.Duration
	side := func(pid int, op func(int) error, cpu *time.Duration) func(int) result {
		return func(r int) result {
			c0 := pidCPU(pid)
			res := run(name, conc, per, func(i int) error { return op(r*per + i) })
			*cpu += pidCPU(pid) - c0
			return res
		}
	}
	p := measure(name, conc, ops, side(leftPid, leftOp, &left), side(rightPid, rightOp, &right))
	done := time.Duration(rounds * per)
	return cpuRow{pair: p, leftCPU: left / done, rightCPU: right / done}
}

// printServerCPURows prints rows of measureServerCPU: each side's rate and latencies, the
// median ratio of the rounds' rates, each side's server CPU time per request and their
// ratio, and how far the 10 ms clock ticks can move the CPU numbers.
func printServerCPURows(title, left, right string, rows []cpuRow) {
	fmt.Println("\n" + title)
	fmt.Printf("%-18s %4s | %10s %9s | %10s %9s | %6s | %10s %10s | %6s\n", "op", "conc",
		left+" ops/s", "p50", right+" ops/s", "p50", "rate", left+" cpu", right+" cpu", "cpu")
	least := time.Duration(0)
	for _, r := range rows {
		ratio := 0.0
		if r.rightCPU > 0 {
			ratio = float64(r.leftCPU) / float64(r.rightCPU)
		}
		fmt.Printf("%-18s %4d | %10.0f %9s | %10.0f %9s | %5.0f%% | %10s %10s | %5.0f%%\n", r.api.name, r.api.conc,
			r.api.rate(), round(r.api.pct(0.5)), r.etcd.rate(), round(r.etcd.pct(0.5)), 100*r.ratio(),
			round(r.leftCPU), round(r.rightCPU), 100*ratio)
		for _, total := range []time.Duration{r.leftCPU * time.Duration(r.api.ops), r.rightCPU * time.Duration(r.etcd.ops)} {
			if least == 0 || total < least {
				least = total
			}
		}
	}
	fmt.Printf("rate: median of the rounds' %s/%s rates; cpu: the server process's CPU time (with its etcd member, if it embeds one)\nper request, ", left, right)
	fmt.Printf("read around every round, and its ratio %s/%s (lower is cheaper; 111%% is the CPU of a 90%% rate). The side with the\n", left, right)
	fmt.Printf("least CPU in a row had %s in all; in 10 ms clock ticks, each round's share is off by less than a tick: %.1f%% at most (-n sets it).\n",
		least.Round(10*time.Millisecond), 100*float64(rounds*10*time.Millisecond)/float64(max(least, time.Millisecond)))
}

// printRatesAndCPU prints rows measured on two server processes side by side: rates and
// latencies, the median of the rounds' left/right rates, then each process's CPU time per
// request (note says what it includes) and right/left, how many of left's requests the CPU
// of one of right's pays for.
func printRatesAndCPU(rows []cpuRow, left, right, note string) {
	fmt.Printf("%-22s %4s | %10s %9s %9s | %10s %9s %9s | %7s\n", "op", "conc", left+" ops/s", "p50", "p99", right+" ops/s", "p50", "p99", "ratio")
	for _, p := range rows {
		fmt.Printf("%-22s %4d | %10.1f %9s %9s | %10.1f %9s %9s | %6.0f%%\n", p.api.name, p.api.conc,
			p.api.rate(), round(p.api.pct(0.5)), round(p.api.pct(0.99)),
			p.etcd.rate(), round(p.etcd.pct(0.5)), round(p.etcd.pct(0.99)), 100*p.ratio())
	}
	fmt.Printf("\nthe same rows, CPU time per request of each server process, read around each of its rounds (10 ms clock ticks);\n%s", note)
	fmt.Printf("%-22s %4s | %10s %10s | %s\n", "op", "conc", left+" cpu", right+" cpu", right+"/"+left)
	for _, r := range rows {
		ratio := 0.0
		if r.leftCPU > 0 {
			ratio = float64(r.rightCPU) / float64(r.leftCPU)
		}
		fmt.Printf("%-22s %4d | %10s %10s | %8.2fx\n", r.api.name, r.api.conc, round(r.leftCPU), round(r.rightCPU), ratio)
	}
}
