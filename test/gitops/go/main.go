// svc-gitops-check runs the GitOps tools' own health code against ProtectedScopes, for
// test/integration/gitops.test.ts. Every subcommand prints one JSON document on stdout; the test asserts on it.
//
//	apply    --kubeconfig K --namespace NS --file F [--force] [--interval 5s] [--timeout 1m] [--fail-fast]
//	         [--health-check-exprs F] [--observe 100ms]
//	         Flux's server-side apply (ssa.ResourceManager.ApplyAllStaged) of the objects in F, then Flux's wait
//	         (WaitForSetWithContext, kustomize-controller's health check) on what it applied, while a second poller
//	         records every status change kstatus reports (so InProgress on the way is seen, not inferred).
//	delete   --kubeconfig K --namespace NS --file F [--timeout 1m]
//	         Flux's prune (DeleteAll) and WaitForTermination, then the poller's status of each object.
//	kstatus  FILE...            kstatus (status.Compute) of saved objects.
//	health   --script F [--timeout 1s] FILE...
//	         Argo CD's custom health check on saved objects: the script run by gopher-lua with only the libraries
//	         Argo CD opens for a script from argocd-cm (package, base, table), under its timeout.
//	fixtures --dir D [--timeout 1s]
//	         Every resource_customizations/<group>/<Kind>/health.lua under D against its health_test.yaml, the way
//	         Argo CD's own test (TestLuaHealthScript) runs them.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var out any
	var err error
	switch os.Args[1] {
	case "apply":
		out, err = runApply(os.Args[2:])
	case "delete":
		out, err = runDelete(os.Args[2:])
	case "kstatus":
		out, err = runKstatus(os.Args[2:])
	case "health":
		out, err = runHealth(os.Args[2:])
	case "fixtures":
		out, err = runFixtures(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "svc-gitops-check %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "svc-gitops-check: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: svc-gitops-check apply|delete|kstatus|health|fixtures [flags] (see main.go)")
	os.Exit(2)
}
