package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"
)

// installProfiling serves Go's profiles under /debug/pprof/ as kube-apiserver's
// --profiling does. Like every non-resource URL they go through authentication and
// authorization first: the bootstrap policy grants them to cluster-admin only.
func installProfiling(mux *http.ServeMux, contention bool) {
	if contention {
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(1)
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
