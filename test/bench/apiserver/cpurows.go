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
		pid: proc.Process.Pid, stop: func() { _ = proc.Process.Signal(syscall.SIGTERM); _ = proc.Wait() }}
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
	fmt.Printf("\nthe same rows, CPU time of each apiserver process (with its etcd member) per request (ratio: %s/%s; 10 ms clock ticks):\n", left, right)
	fmt.Printf("%-18s %4s | %12s %12s | %7s\n", "op", "conc", left+" CPU/op", right+" CPU/op", "ratio")
	for _, r := range rows {
		ratio := 0.0
		if r.rightCPU > 0 {
			ratio = float64(r.leftCPU) / float64(r.rightCPU)
		}
		fmt.Printf("%-18s %4d | %12s %12s | %6.0f%%\n", r.api.name, r.api.conc, r.leftCPU.Round(time.Microsecond), r.rightCPU.Round(time.Microsecond), 100*ratio)
	}
}
