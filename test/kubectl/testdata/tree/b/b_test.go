package b

func TestOther(t *testing.T) { other.Kubectl(t) }
