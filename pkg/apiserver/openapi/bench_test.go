package openapi

import "testing"

// BenchmarkNew is what a change of the served resources costs: describing them and
// rendering the documents (the built-in group-versions' v3 documents come from the cache
// after the first round, as on a server).
func BenchmarkNew(b *testing.B) {
	rs := testResources()
	for b.Loop() {
		s, err := New(rs)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Render(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderUncached renders every document from scratch, as the first Spec of a
// process does.
func BenchmarkRenderUncached(b *testing.B) {
	rs := testResources()
	for b.Loop() {
		v3Cache.Clear()
		s, err := New(rs)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Render(); err != nil {
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
