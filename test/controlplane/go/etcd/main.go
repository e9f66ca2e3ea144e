// Command etcd is upstream etcd's server entry point, built from its Go module for the test control plane.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
