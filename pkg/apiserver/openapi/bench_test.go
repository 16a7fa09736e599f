package openapi

import "testing"

func BenchmarkNew(b *testing.B) {
	rs := testResources()
	for b.Loop() {
		if _, err := New(rs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkV2Proto(b *testing.B) {
	s := mustNew(b)
	for b.Loop() {
		if _, err := toProto(s.V2()); err != nil {
			b.Fatal(err)
		}
	}
}
