package server_test

import (
	"fmt"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
)

func TestParseWatchCacheSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []string
		want  string // fmt of the map, or "error"
	}{
		{"none", nil, "map[events:0]"},
		{"one", []string{"pods#5000"}, "map[events:0 pods:5000]"},
		{"comma-separated and repeated", []string{"pods#5000, deployments.apps#0", "Events#10"}, "map[deployments.apps:0 events:10 pods:5000]"},
		{"no size", []string{"pods"}, "error"},
		{"negative", []string{"pods#-1"}, "error"},
		{"no resource", []string{"#5"}, "error"},
		{"not a number", []string{"pods#many"}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := server.ParseWatchCacheSizes(tc.items)
			s := fmt.Sprint(got)
			if err != nil {
				s = "error"
			}
			if s != tc.want {
				t.Fatalf("got %s (%v), want %s", s, err, tc.want)
			}
			cfg := server.DefaultConfig()
			cfg.WatchCacheSizes = tc.items
			if err := cfg.Validate(); (err != nil) != (tc.want == "error") {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}
