package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// keptLogBytes is how much of each program's log the drill keeps: the end, where a fault
// and what followed it are.
const keptLogBytes = 2 << 20

// keepLogs copies the log of every program the drill started (vipd, lbproxy, FRR's zebra,
// bfdd and bgpd, keepalived, haproxy, the apiservers...) from the run's temp dir to
// out/logs, each cut to its last keptLogBytes, so that an outlier can be explained after
// the temp dir is gone. out/logs/clock.txt says when the drill's clock (the times in
// events/*.json and the report) started, to match them with the logs' wall-clock times.
func keepLogs(runDir, out string, epoch time.Time) error {
	dst := filepath.Join(out, "logs")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	clock := fmt.Sprintf("drill clock 0 (t=0 of events/*.json and report.json) = %s\n", epoch.UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(dst, "clock.txt"), []byte(clock), 0o644); err != nil {
		return err
	}
	logs, err := filepath.Glob(filepath.Join(runDir, "logs", "*.log"))
	if err != nil {
		return err
	}
	for _, src := range logs {
		if err := copyTail(src, filepath.Join(dst, filepath.Base(src)), keptLogBytes); err != nil {
			return err
		}
	}
	return nil
}

// copyTail copies the last n bytes of src to dst.
func copyTail(src, dst string, n int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if st.Size() > n {
		if _, err := in.Seek(st.Size()-n, io.SeekStart); err != nil {
			return err
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
