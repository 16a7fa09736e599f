// Command prebuild builds the upstream programs the tests run (make upstream), so that the
// first test that needs one does not pay for the build under its timeout.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hacp/hacp/internal/upstream"
)

func main() {
	root := upstream.Root()
	for _, name := range append(append([]string{}, upstream.Kubernetes...), upstream.Kwok, upstream.SampleAPIServer, upstream.Promtool, upstream.PromQLNames) {
		path, err := upstream.Build(context.Background(), root, name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
	for _, v := range upstream.KubectlVersions { // make test-kubectl's releases
		path, err := upstream.BuildAt(context.Background(), root, upstream.Kubectl, v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "upstream: kubectl %s: %v\n", v, err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
	path, err := upstream.KwokStages(context.Background(), root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "upstream: kwok stages: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
