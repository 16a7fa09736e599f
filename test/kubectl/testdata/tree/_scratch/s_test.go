package s

func TestScratch(t *testing.T) { testenv.Kubectl(t) }
