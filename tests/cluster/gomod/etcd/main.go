// Command etcd is etcd's own entry point, built from the published server module
// (the repository's root module carries local replaces and cannot be built as a dependency).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
