package main

import "testing"

// TestVerifyWrites: every acknowledged write whose effect is missing counts as lost, and
// nothing the writer left in doubt does.
func TestVerifyWrites(t *testing.T) {
	ok := func(op, name, key, value string) request {
		return request{Op: op, Name: name, Key: key, Value: value, OK: true}
	}
	failed := func(op, name, key, value string) request {
		return request{Op: op, Name: name, Key: key, Value: value, Err: "the server was unable to return a response in the time allotted"}
	}
	tests := []struct {
		name    string
		reqs    []request
		objects map[string]map[string]string
		lost    int
	}{
		{"all there", []request{ok(opCreate, "a", "", ""), ok(opUpdate, "a", "u2", "2"), ok(opPatch, "a", "p3", "3")},
			map[string]map[string]string{"a": {"u2": "2", "p3": "3"}}, 0},
		{"created object missing", []request{ok(opCreate, "a", "", ""), {Name: "b", OK: true}},
			map[string]map[string]string{}, 2},
		{"patch lost", []request{ok(opCreate, "a", "", ""), ok(opPatch, "a", "p2", "2")},
			map[string]map[string]string{"a": {}}, 1},
		{"deleted object back", []request{ok(opCreate, "a", "", ""), ok(opDelete, "a", "", "")},
			map[string]map[string]string{"a": {}}, 1},
		{"delete in doubt", []request{ok(opCreate, "a", "", ""), failed(opDelete, "a", "", "")},
			map[string]map[string]string{}, 0},
		{"update replaced by one in doubt", []request{ok(opCreate, "a", "", ""), ok(opUpdate, "a", "u2", "2"), failed(opUpdate, "a", "u3", "3")},
			map[string]map[string]string{"a": {"u3": "3"}}, 0},
		{"failed create absent", []request{failed(opCreate, "a", "", "")}, map[string]map[string]string{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(verifyWrites(tt.reqs, tt.objects)); got != tt.lost {
				t.Fatalf("lost %d, want %d", got, tt.lost)
			}
		})
	}
}
