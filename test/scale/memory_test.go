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

func TestDBMapRSS(t *testing.T) {
	smaps := `00400000-05c00000 r-xp 00000000 08:01 1234 /usr/local/bin/apiserver
Size:              90112 kB
Rss:               40960 kB
7f0000000000-7f0280000000 r--s 00000000 08:01 5678 /data/etcd/member/snap/db
Size:           10485760 kB
Rss:               30720 kB
Pss:               30720 kB
VmFlags: rd sh mr mw me ms sd
7f0300000000-7f0300100000 rw-p 00000000 00:00 0 
Rss:                1024 kB
7f0400000000-7f0400010000 r--s 00000000 08:01 5679 /data/etcd/member/snap/db
Rss:                2048 kB
`
	if got := dbMapRSS(smaps); got != 32 {
		t.Errorf("dbMapRSS = %v MB, want 32 (30 + 2: the db's two mappings only)", got)
	}
	if got := dbMapRSS(""); got != 0 {
		t.Errorf("dbMapRSS of nothing = %v", got)
	}
}
