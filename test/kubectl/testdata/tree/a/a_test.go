package a

import "testing"

func TestDirect(t *testing.T) { testenv.Kubectl(t) }

func TestThroughHelpers(t *testing.T) { newEnv(t).run("get", "pods") }

func TestThroughMethod(t *testing.T) {
	var e env
	e.start(t)
}

func TestThroughClosure(t *testing.T) {
	t.Run("sub", func(t *testing.T) { bin(t) })
}

func TestNoKubectl(t *testing.T) {
	testenv.KubectlMinor(t, "/bin/true")
	noKubectl()
}

func TestMain(m *testing.M) { testenv.Kubectl(nil) }

func newEnv(t *testing.T) *env { return &env{bin: bin(t)} }

func (e *env) start(t *testing.T) { e.bin = testenv.Kubectl(t) }

func (e *env) run(args ...string) {}

func noKubectl() {}
