package a

type env struct{ bin string }

func bin(t *testing.T) string { return testenv.Kubectl(t) }

// Tests live in _test.go files only.
func TestNotATest(t *testing.T) { testenv.Kubectl(t) }
