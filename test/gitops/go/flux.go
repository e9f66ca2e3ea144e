package main

// Flux: the apply, the wait and the prune kustomize-controller runs (fluxcd/pkg/ssa), with the status poller it
// builds (fluxcd/cli-utils' kstatus poller with fluxcd/pkg/runtime's Job reader, plus its CEL reader when the
// Kustomization has healthCheckExprs), as in kustomize-controller's getClientAndPoller and checkHealth.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/runtime/cel"
	"github.com/fluxcd/pkg/runtime/statusreaders"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

type flux struct {
	poller  *polling.StatusPoller
	manager *ssa.ResourceManager
}

func connect(kubeconfig, healthCheckExprs string) (*flux, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// kustomize-controller's defaults (--kube-api-qps, --kube-api-burst), not client-go's 5 and 10: the recording
	// poller alone lists ten times a second.
	cfg.QPS, cfg.Burst = 50, 300
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, err
	}
	readers := []engine.StatusReader{statusreaders.NewCustomJobStatusReader(mapper)}
	if healthCheckExprs != "" {
		raw, err := os.ReadFile(healthCheckExprs)
		if err != nil {
			return nil, err
		}
		var checks []kustomize.CustomHealthCheck
		if err := yaml.UnmarshalStrict(raw, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", healthCheckExprs, err)
		}
		reader, err := cel.NewStatusReader(checks)
		if err != nil {
			return nil, err
		}
		readers = append(readers, reader(mapper))
	}
	poller := polling.NewStatusPoller(c, mapper, polling.Options{CustomStatusReaders: readers})
	manager := ssa.NewResourceManager(c, poller, ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"})
	return &flux{poller: poller, manager: manager}, nil
}

func readObjects(file, namespace string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objects, err := ssautil.ReadObjects(f)
	if err != nil {
		return nil, err
	}
	for _, o := range objects {
		if namespace != "" {
			o.SetNamespace(namespace)
		}
	}
	return objects, nil
}

// observation is one status kstatus reported for one object, with the instant (ms after the apply returned).
type observation struct {
	Name               string `json:"name"`
	Status             string `json:"status"`
	Message            string `json:"message"`
	Reason             string `json:"reason,omitempty"`
	Generation         int64  `json:"generation,omitempty"`
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	AtMs               int64  `json:"atMs"`
	// The object as the poller read it: what the Argo CD check is then run on.
	Object map[string]any `json:"object,omitempty"`
}

func observationOf(rs *event.ResourceStatus, since time.Time) observation {
	o := observation{Name: rs.Identifier.Name, Status: rs.Status.String(), Message: rs.Message, AtMs: time.Since(since).Milliseconds()}
	if rs.Error != nil {
		o.Message = rs.Error.Error()
	}
	if u := rs.Resource; u != nil {
		o.Generation = u.GetGeneration()
		if g, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); found {
			o.ObservedGeneration = &g
		}
		o.Reason = stalledOrReadyReason(u)
		o.Object = u.Object
	}
	return o
}

// stalledOrReadyReason is the reason a person reads next to kstatus's message: the Stalled condition's, else Ready's.
func stalledOrReadyReason(u *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	reasons := map[string]string{}
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		if s == "True" || t == "Ready" {
			reasons[t] = r
		}
	}
	if r, ok := reasons["Stalled"]; ok {
		return r
	}
	return reasons["Ready"]
}

// recorder keeps every status change the poller reports, as kstatus computed it.
type recorder struct {
	mu     sync.Mutex
	seen   []observation
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *flux) record(set object.ObjMetadataSet, interval time.Duration, since time.Time) *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{cancel: cancel, done: make(chan struct{})}
	events := f.poller.Poll(ctx, set, polling.PollOptions{PollInterval: interval})
	go func() {
		defer close(r.done)
		for e := range events {
			if e.Type == event.ResourceUpdateEvent && e.Resource != nil {
				r.mu.Lock()
				r.seen = append(r.seen, observationOf(e.Resource, since))
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *recorder) stop() []observation {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// current is one poll of every object of the set (the poller's first sync reports each one).
func (f *flux) current(set object.ObjMetadataSet, since time.Time) []observation {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byName := map[string]observation{}
	for e := range f.poller.Poll(ctx, set, polling.PollOptions{PollInterval: time.Hour}) {
		if e.Type == event.ResourceUpdateEvent && e.Resource != nil {
			byName[e.Resource.Identifier.Name] = observationOf(e.Resource, since)
		}
		if e.Type == event.ErrorEvent || e.Type == event.SyncEvent || len(byName) == len(set) {
			break
		}
	}
	out := make([]observation, 0, len(set))
	for _, id := range set {
		if o, ok := byName[id.Name]; ok {
			out = append(out, o)
		}
	}
	return out
}

type waitResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Ms    int64  `json:"ms"`
}

type applyOutput struct {
	ApplyError string        `json:"applyError,omitempty"`
	Changes    []string      `json:"changes"`
	Wait       *waitResult   `json:"wait,omitempty"`
	Observed   []observation `json:"observed"`
	Final      []observation `json:"final"`
}

func runApply(args []string) (any, error) {
	fs := flag.NewFlagSet("apply", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := fs.String("namespace", "", "namespace of the objects")
	file := fs.String("file", "", "YAML file of the objects to apply")
	force := fs.Bool("force", false, "recreate objects whose immutable fields changed (Kustomization spec.force)")
	interval := fs.Duration("interval", 5*time.Second, "the wait's poll interval (kustomize-controller: 5s)")
	timeout := fs.Duration("timeout", time.Minute, "the wait's timeout (Kustomization spec.timeout)")
	failFast := fs.Bool("fail-fast", false, "give up at the first Failed object (kustomize-controller's default; off with --feature-gates=DisableFailFastBehavior=true)")
	exprs := fs.String("health-check-exprs", "", "YAML list of Kustomization spec.healthCheckExprs entries")
	observe := fs.Duration("observe", 100*time.Millisecond, "poll interval of the recording poller")
	_ = fs.Parse(args)
	f, err := connect(*kubeconfig, *exprs)
	if err != nil {
		return nil, err
	}
	objects, err := readObjects(*file, *namespace)
	if err != nil {
		return nil, err
	}
	if err := normalize.UnstructuredList(objects); err != nil {
		return nil, err
	}
	opts := ssa.DefaultApplyOptions()
	opts.Force = *force
	ctx := context.Background()
	cs, err := f.manager.ApplyAllStaged(ctx, objects, opts)
	applied := time.Now()
	out := applyOutput{Changes: []string{}, Observed: []observation{}, Final: []observation{}}
	if cs != nil {
		for _, e := range cs.Entries {
			out.Changes = append(out.Changes, e.String())
		}
	}
	if err != nil {
		out.ApplyError = err.Error()
		return out, nil
	}
	set := cs.ToObjMetadataSet()
	rec := f.record(set, *observe, applied)
	waitErr := f.manager.WaitForSetWithContext(ctx, set, ssa.WaitOptions{Interval: *interval, Timeout: *timeout, FailFast: *failFast})
	out.Wait = &waitResult{OK: waitErr == nil, Ms: time.Since(applied).Milliseconds()}
	if waitErr != nil {
		out.Wait.Error = waitErr.Error()
	}
	out.Final = f.current(set, applied)
	out.Observed = rec.stop()
	return out, nil
}

type deleteOutput struct {
	Changes      []string      `json:"changes"`
	TerminatedMs int64         `json:"terminatedMs"`
	Final        []observation `json:"final"`
}

func runDelete(args []string) (any, error) {
	fs := flag.NewFlagSet("delete", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := fs.String("namespace", "", "namespace of the objects")
	file := fs.String("file", "", "YAML file of the objects to delete")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for their termination")
	_ = fs.Parse(args)
	f, err := connect(*kubeconfig, "")
	if err != nil {
		return nil, err
	}
	objects, err := readObjects(*file, *namespace)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	cs, err := f.manager.DeleteAll(context.Background(), objects, ssa.DefaultDeleteOptions())
	if err != nil {
		return nil, err
	}
	if err := f.manager.WaitForTermination(objects, ssa.WaitOptions{Interval: 500 * time.Millisecond, Timeout: *timeout}); err != nil {
		return nil, err
	}
	out := deleteOutput{Changes: []string{}, TerminatedMs: time.Since(started).Milliseconds()}
	for _, e := range cs.Entries {
		out.Changes = append(out.Changes, e.String())
	}
	out.Final = f.current(object.UnstructuredSetToObjMetadataSet(objects), started)
	return out, nil
}
