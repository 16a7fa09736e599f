package main

import "testing"

func TestProcStatusMem(t *testing.T) {
	status := "Name:\tapiserver\nVmPeak:\t 900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n" +
		"RssAnon:\t   81920 kB\nRssFile:\t   19456 kB\nRssShmem:\t    1024 kB\nThreads:\t12\n"
	m, ok := procStatusMem(status)
	want := procMem{HWMMB: 200, RSSMB: 100, AnonMB: 80, FileMB: 19, ShmemMB: 1}
	if !ok || m != want {
		t.Errorf("procStatusMem = %+v, %v; want %+v", m, ok, want)
	}
	if _, ok := procStatusMem("Name:\tx\nVmHWM:\t1 kB\n"); ok {
		t.Error("procStatusMem found no VmRSS but said ok")
	}
}

func TestParseGoMetrics(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 5321
go_memstats_heap_inuse_bytes 1.34217728e+08
go_memstats_heap_idle_bytes 2.097152e+07
go_memstats_heap_released_bytes 1.048576e+07
go_memstats_stack_inuse_bytes 4.194304e+07
go_memstats_next_gc_bytes 2.68435456e+08
go_memstats_sys_bytes 3.3554432e+08
go_memstats_heap_inuse_bytes_total{x="y"} 7
go_gc_duration_seconds{quantile="0.5"} 0.001
`
	g, ok := parseGoMetrics(text)
	want := goMem{HeapInuseMB: 128, HeapIdleMB: 20, HeapReleasedMB: 10, StackInuseMB: 40, NextGCMB: 256, SysMB: 320, Goroutines: 5321}
	if !ok || *g != want {
		t.Errorf("parseGoMetrics = %+v, %v; want %+v", g, ok, want)
	}
	if _, ok := parseGoMetrics("go_goroutines 3\n"); ok {
		t.Error("parseGoMetrics found no heap_inuse but said ok")
	}
}
