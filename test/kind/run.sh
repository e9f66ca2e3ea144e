#!/usr/bin/env bash
# End-to-end on a real two-node kind cluster: the chart, a real ingress controller in front of svc-auth, the whole
# path (open -> add-token closes -> token opens -> remove-tokens reopens), RBAC, the NetworkPolicy, cluster DNS,
# pods on both nodes, then the integration suites against the cluster with USE_EXISTING_CLUSTER=true.
#
#   test/kind/run.sh                       everything, then delete the cluster
#   KEEP_CLUSTER=true test/kind/run.sh     leave the cluster (and print how to reach it)
#   SKIP_SUITES=true test/kind/run.sh      only the cluster checks, not `npm test -- --only integration`
#
# Two ways, chosen by what the machine has (KIND_PROVIDER=docker|podman forces one):
#   docker  (a Docker daemon and registries): kind's own node image, ingress-nginx from its manifest, the image
#           built by `docker build`, as before.
#   podman  (no Docker, no registry: the project's build machines): the node image built offline by
#           node-image.ts (cached in podman's store), kind's podman provider with a containers.conf of its own and
#           the podman shim of bin/ (no host configuration changes), a bridge CNI with routes between the nodes,
#           kube-router enforcing NetworkPolicy, Traefik (the binary the suites build) as the ingress controller
#           serving deploy/ingress-nginx/ingress.yaml through its ingress-nginx provider.
#
# Settings (environment): KIND_CLUSTER_NAME (svc-kind), KIND_NODE_IMAGE, SVC_NAMESPACE (svc), SVC_IMAGE,
# HTTP_PORT/HTTPS_PORT (docker: 18080/18443), INGRESS_NGINX_VERSION (docker: controller-v1.12.1),
# STRICT_NETWORK_POLICY (true: svc-auth reachable from another namespace fails the run).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/test/kind"
CLUSTER="${KIND_CLUSTER_NAME:-svc-kind}"
NS="${SVC_NAMESPACE:-svc}"
HTTP_PORT="${HTTP_PORT:-18080}"
HTTPS_PORT="${HTTPS_PORT:-18443}"
INGRESS_NGINX_VERSION="${INGRESS_NGINX_VERSION:-controller-v1.12.1}"
STRICT_NETWORK_POLICY="${STRICT_NETWORK_POLICY:-true}"
HOST="data.kind.test"
TOPIC="origin.a.wis2.kind-test.data.core"
WORK="$(mktemp -d)"
export KUBECONFIG="$WORK/kubeconfig"
STARTED=$SECONDS

log() { printf '\n=== [%ss] %s\n' "$((SECONDS - STARTED))" "$*" >&2; }
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

PROVIDER="${KIND_PROVIDER:-}"
if [[ -z "$PROVIDER" ]]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then PROVIDER=docker; else PROVIDER=podman; fi
fi

cleanup() {
  local rc=$?
  [[ -n "${HOSTS_SYNC:-}" ]] && kill "$HOSTS_SYNC" 2>/dev/null
  if [[ "${KEEP_CLUSTER:-false}" == "true" && $rc -eq 0 ]]; then
    # What deleting it takes (the kind binary, on podman its network, containers.conf and shim), recorded for
    # `npm run demo:cluster -- --kind --down` and `npm run cluster:down` (scripts/kind-kept.ts), in the clone's .cache/.
    KEPT="$ROOT/.cache/kind"
    mkdir -p "$KEPT"
    cp "$KUBECONFIG" "$KEPT/kubeconfig" 2>/dev/null || true
    [[ "$PROVIDER" == podman ]] && cp "$CONTAINERS_CONF" "$KEPT/containers.conf"
    node -e 'const [file, provider, cluster, kind, network, containersConf, path, kubeconfig] = process.argv.slice(1);
      require("fs").writeFileSync(file, JSON.stringify({ provider, cluster, kind, network: network || undefined,
        containersConf: containersConf || undefined, path: path || undefined, kubeconfig }, null, 2) + "\n")' \
      "$KEPT/kept.json" "$PROVIDER" "$CLUSTER" "$KIND" "${KIND_EXPERIMENTAL_PODMAN_NETWORK:-}" \
      "$([[ "$PROVIDER" == podman ]] && echo "$KEPT/containers.conf")" "$([[ "$PROVIDER" == podman ]] && echo "$HERE/bin")" "$KEPT/kubeconfig"
    printf '\nCluster "%s" kept (provider %s): export KUBECONFIG=%s\n' "$CLUSTER" "$PROVIDER" "$KEPT/kubeconfig" >&2
    printf 'Delete it with: npm run demo:cluster -- --kind --down (npm run cluster:down deletes it too)\n' >&2
    [[ "$PROVIDER" == podman ]] && printf \
      'Through Traefik: kubectl -n traefik port-forward svc/traefik 8080:80, then curl -H "Host: %s" http://127.0.0.1:8080/oapi/collections/%s/items\n' "$HOST" "$TOPIC" >&2
  else
    if [[ -n "${KIND:-}" ]]; then
      [[ $rc -ne 0 && "$PROVIDER" == podman ]] && debug_dump
      "$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
    fi
    if [[ "$PROVIDER" == podman && -n "${KIND_EXPERIMENTAL_PODMAN_NETWORK:-}" ]]; then
      for _ in 1 2 3; do
        podman network exists "$KIND_EXPERIMENTAL_PODMAN_NETWORK" 2>/dev/null || break
        podman network rm -f "$KIND_EXPERIMENTAL_PODMAN_NETWORK" >/dev/null || sleep 2
      done
    fi
  fi
  rm -rf "$WORK"
  printf '\n=== run.sh ended (exit %s) after %ss\n' "$rc" "$((SECONDS - STARTED))" >&2
  exit "$rc"
}

debug_dump() {
  printf '\n--- debug: nodes, pods, events\n' >&2
  kubectl get nodes -o wide >&2 2>/dev/null || true
  kubectl get pods -A -o wide >&2 2>/dev/null || true
  kubectl get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -n 30 >&2 || true
}

json_field() { node -e 'const j=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(String(process.argv[1].split(".").reduce((o,k)=>o[k],j)))' "$1"; }

# ------------------------------------------------------------------------------------------ tools
for tool in node npm; do command -v "$tool" >/dev/null || die "$tool is not on PATH"; done
trap cleanup EXIT
trap 'exit 143' TERM INT

if [[ "$PROVIDER" == docker ]]; then
  for tool in docker kind kubectl curl; do command -v "$tool" >/dev/null || die "$tool is not on PATH"; done
  KIND="$(command -v kind)"
  HELM="${HELM:-$(command -v helm || true)}"
  [[ -n "$HELM" ]] || HELM="$(find "$HOME/.cache/svc-access-control" -name helm -type f -perm -u+x 2>/dev/null | head -n 1 || true)"
  [[ -n "$HELM" && -x "$HELM" ]] || die "helm not found (PATH, \$HELM or ~/.cache/svc-access-control)"
  SVC_IMAGE="${SVC_IMAGE:-svc-access-control:kind}"
else
  command -v podman >/dev/null || die "neither a Docker daemon nor podman: apt-get install podman (see test/kind/README.md)"
  [[ -d "$ROOT/node_modules" ]] || (cd "$ROOT" && npm ci)
  log "node image and binaries (node-image.ts; cold: builds, warm: found in the tool cache and podman's store)"
  (cd "$ROOT" && npx tsx test/kind/node-image.ts) >"$WORK/node-image.json"
  NODE_IMAGE="${KIND_NODE_IMAGE:-$(json_field image <"$WORK/node-image.json")}"
  printf 'node image %s: %s bytes, %ss spent on it in this run\n' "$NODE_IMAGE" \
    "$(json_field bytes <"$WORK/node-image.json")" "$(json_field seconds <"$WORK/node-image.json")" >&2
  KIND="$(json_field binaries.kind <"$WORK/node-image.json")"
  HELM="$(json_field binaries.helm <"$WORK/node-image.json")"
  KUBE_ROUTER_IMAGE="$(json_field kubeRouterImage <"$WORK/node-image.json")"
  mkdir -p "$WORK/bin" && ln -s "$(json_field binaries.kubectl <"$WORK/node-image.json")" "$WORK/bin/kubectl"
  export PATH="$HERE/bin:$WORK/bin:$PATH"
  # An empty directory that outlives this run: a kept cluster's nodes mount it for as long as they exist.
  export KIND_EXPERIMENTAL_PROVIDER=podman KIND_LIB_MODULES="${SVC_ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-access-control}/kind-lib-modules"
  export KIND_EXPERIMENTAL_PODMAN_NETWORK="${KIND_EXPERIMENTAL_PODMAN_NETWORK:-$CLUSTER-net}"
  mkdir -p "$KIND_LIB_MODULES"
  # podman as the hosts need it (test/image/podman.ts): runc (crun refuses the cgroup v1 hybrid), cgroupfs, and
  # rlimits within the hard limits (root has no CAP_SYS_RESOURCE).
  export CONTAINERS_CONF="$WORK/containers.conf"
  cat >"$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  # A tag of its own: other runs on the machine build localhost/svc-access-control:dev from their trees.
  export SVC_IMAGE="${SVC_IMAGE:-localhost/svc-access-control:kind}"
  log "svc image $SVC_IMAGE (test/image/build.ts)"
  (cd "$ROOT" && npx tsx test/image/build.ts) >&2
fi

# ------------------------------------------------------------------------------------------ cluster
create_cluster_docker() {
  sed -e "s/\${HTTP_PORT}/$HTTP_PORT/" -e "s/\${HTTPS_PORT}/$HTTPS_PORT/" "$HERE/kind-config.yaml" >"$WORK/kind-config.yaml"
  kind create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --config "$WORK/kind-config.yaml" --wait 180s \
    ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
  log "image $SVC_IMAGE"
  docker build -t "$SVC_IMAGE" "$ROOT"
  kind load docker-image "$SVC_IMAGE" --name "$CLUSTER"
}

# Each node: a bridge CNI configuration on its pod CIDR, and a route to every other node's pod CIDR via that node.
pod_network() {
  local nodes node other cidr ip
  nodes="$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')"
  while read -r node cidr ip; do
    [[ -n "$cidr" ]] || die "node $node has no pod CIDR"
    podman exec -i "$node" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-svc-kind.conflist' <<CNI
{"cniVersion": "0.4.0", "name": "svc-kind", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
CNI
    while read -r other ocidr oip; do
      [[ "$other" == "$node" ]] || podman exec "$node" ip route replace "$ocidr" via "$oip"
    done <<<"$nodes"
    printf 'node %s: pods on %s, address %s\n' "$node" "$cidr" "$ip" >&2
  done <<<"$nodes"
}

# podman's CNI networks here have no DNS (no dnsname plugin: `dns_enabled: false`), and kubeadm join on the worker
# names the control plane by its container name. While kind creates the cluster, this gives every node container an
# /etc/hosts line for every other one (what Docker's embedded DNS answers for kind elsewhere).
hosts_sync() {
  local names entries n
  while sleep 1; do
    names="$(podman ps --filter "label=io.x-k8s.kind.cluster=$CLUSTER" --format '{{.Names}}' 2>/dev/null)" || continue
    entries="$(for n in $names; do
      printf '%s %s\n' "$(podman inspect -f "{{(index .NetworkSettings.Networks \"$KIND_EXPERIMENTAL_PODMAN_NETWORK\").IPAddress}}" "$n" 2>/dev/null)" "$n"
    done | grep -E '^[0-9.]+ ' || true)"
    for n in $names; do
      printf '%s\n' "$entries" | podman exec -i "$n" sh -c 'while read -r ip name; do grep -qw "$name" /etc/hosts || echo "$ip $name" >>/etc/hosts; done' 2>/dev/null || true
    done
  done
}

create_cluster_podman() {
  local t0=$SECONDS
  hosts_sync &
  HOSTS_SYNC=$!
  "$KIND" create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --config "$HERE/kind-config-offline.yaml" --image "$NODE_IMAGE"
  kill "$HOSTS_SYNC" 2>/dev/null || true
  HOSTS_SYNC=
  log "kind create cluster took $((SECONDS - t0))s; pod network"
  pod_network
  # kind keeps the control plane's NoSchedule taint on multi-node clusters: the pods are to spread over both.
  kubectl taint node "$CLUSTER-control-plane" node-role.kubernetes.io/control-plane:NoSchedule-
  # A zone per node, as a cloud's nodes carry: the chart spreads svc-auth over hostnames and zones.
  kubectl label node "$CLUSTER-control-plane" topology.kubernetes.io/zone=kind-a
  kubectl label node "$CLUSTER-worker" topology.kubernetes.io/zone=kind-b
  kubectl wait --for=condition=Ready nodes --all --timeout=180s
  log "cluster ready $((SECONDS - t0))s after kind create cluster began"
  kubectl -n kube-system rollout status deploy/coredns --timeout=180s
  sed -e "s|\${KUBE_ROUTER_IMAGE}|$KUBE_ROUTER_IMAGE|" "$HERE/manifests/kube-router.yaml" | kubectl apply -f -
  kubectl -n kube-system rollout status ds/kube-router --timeout=180s
  log "image $SVC_IMAGE"
  podman save -o "$WORK/svc-image.tar" "$SVC_IMAGE"
  "$KIND" load image-archive "$WORK/svc-image.tar" --name "$CLUSTER"
  rm -f "$WORK/svc-image.tar"
}

log "kind cluster $CLUSTER (provider $PROVIDER)"
"create_cluster_$PROVIDER"

log "chart charts/svc into namespace $NS"
"$HELM" lint --strict "$ROOT/charts/svc"
proxy_ns=ingress-nginx
spread_args=()
if [[ "$PROVIDER" == podman ]]; then
  proxy_ns=traefik
  # Two nodes in two zones: svc-auth's two replicas must land one on each (ScheduleAnyway may stack them).
  spread_args=(--set auth.topologySpread.whenUnsatisfiable=DoNotSchedule)
fi
"$HELM" upgrade --install svc "$ROOT/charts/svc" --namespace "$NS" --create-namespace \
  --set image.repository="${SVC_IMAGE%:*}" --set image.tag="${SVC_IMAGE##*:}" --set image.pullPolicy=Never \
  --set "networkPolicy.proxyNamespaces={$proxy_ns}" \
  "${spread_args[@]}" \
  --wait --timeout 5m
for d in svc-operator svc-auth svc-management; do kubectl -n "$NS" rollout status "deploy/$d" --timeout=120s; done

log "demo backends"
sed -e "s|\${SVC_IMAGE}|$SVC_IMAGE|" "$HERE/manifests/backends.yaml" | kubectl -n "$NS" apply -f -
kubectl -n "$NS" rollout status deploy/demo-backend --timeout=120s
sed -e "s/namespace: svc$/namespace: $NS/" -e "s/svc-auth\.svc\.svc/svc-auth.$NS.svc/" -e "s/data\.example\.org/$HOST/" \
  "$ROOT/deploy/ingress-nginx/ingress.yaml" >"$WORK/ingress.yaml"

if [[ "$PROVIDER" == docker ]]; then
  log "ingress-nginx $INGRESS_NGINX_VERSION and the Ingress of deploy/ingress-nginx/ingress.yaml"
  kubectl apply -f "https://raw.githubusercontent.com/kubernetes/ingress-nginx/$INGRESS_NGINX_VERSION/deploy/static/provider/kind/deploy.yaml"
  kubectl -n ingress-nginx rollout status deploy/ingress-nginx-controller --timeout=300s
  # status PATH [curl args...]: the HTTP status of a request through ingress-nginx.
  status() {
    local path="$1"
    shift
    curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Host: $HOST" "$@" "http://127.0.0.1:$HTTP_PORT$path" || true
  }
else
  log "Traefik (ingress-nginx provider) and the Ingress of deploy/ingress-nginx/ingress.yaml with auth-url on /authz/forward-auth"
  kubectl apply -f "$HERE/manifests/traefik.yaml"
  kubectl -n traefik rollout status deploy/traefik --timeout=180s
  grep -q '/authz/auth-request"' "$WORK/ingress.yaml" || die "deploy/ingress-nginx/ingress.yaml: auth-url not found"
  sed -i -e 's|/authz/auth-request"|/authz/forward-auth"|' "$WORK/ingress.yaml"
  TRAEFIK_IP="$(kubectl -n traefik get svc traefik -o jsonpath='{.spec.clusterIP}')"
  # status PATH [curl args...]: the HTTP status of a request through Traefik's Service, sent from the worker node.
  status() {
    local path="$1"
    shift
    podman exec "$CLUSTER-worker" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Host: $HOST" "$@" "http://$TRAEFIK_IP$path" || true
  }
fi
for _ in $(seq 1 30); do
  kubectl apply -f "$WORK/ingress.yaml" && break
  sleep 2
done
kubectl -n "$NS" get ingress svc-data >/dev/null

# ------------------------------------------------------------------------------------------ checks
# expect CODE PATH [curl args...]: fails unless the status is CODE.
expect() {
  local want="$1" got
  got="$(status "${@:2}")"
  [[ "$got" == "$want" ]] || die "${*:2}: expected $want, got $got"
  printf 'ok  %s  %s\n' "$want" "$2" >&2
}
# eventually CODE PATH [curl args...]: waits (90 s at most) for CODE, which covers the operator's
# reconcile, the snapshot reaching svc-auth, the controller's routing and ingress-nginx's decision cache.
eventually() {
  local want="$1" got=""
  for _ in $(seq 1 45); do
    got="$(status "${@:2}")"
    [[ "$got" == "$want" ]] && { printf 'ok  %s  %s\n' "$want" "$2" >&2; return 0; }
    sleep 2
  done
  die "${*:2}: expected $want within 90 s, last got $got"
}
svc_cli() { kubectl -n "$NS" exec deploy/svc-management -- svc "$@"; }

API="/oapi/collections/$TOPIC/items"
WAF="/data/2026-11-21/wis/origin/a/wis2/kind-test/data/core/synop/x.bufr4"
TOKEN="kind-test-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"

log "an open topic passes"
eventually 200 "$API"
expect 200 "$WAF"

log "the first token closes it"
svc_cli auth add-token --topic-hierarchy "$TOPIC" "$TOKEN" >/dev/null
eventually 401 "$API"
expect 401 "$WAF"
expect 200 "$API" -H "Authorization: Bearer $TOKEN"
expect 200 "$API?token=$TOKEN"
expect 200 "$WAF" -H "Authorization: Bearer $TOKEN"
expect 401 "$API" -H "Authorization: Bearer kind-test-not-the-token-0000"
svc_cli auth show >/dev/null
svc_cli auth has-access-topic --topic-hierarchy "$TOPIC" "$TOKEN" >/dev/null || die "has-access-topic denied the token"

log "removing every token opens it again"
svc_cli auth remove-tokens --topic-hierarchy "$TOPIC" >/dev/null
eventually 200 "$API"

log "RBAC: each ServiceAccount may do what it needs and nothing more"
can() { kubectl auth can-i --as="system:serviceaccount:$NS:$1" -n "$NS" "${@:2}"; }
can svc-management create protectedscopes.auth.svc.io >/dev/null || die "svc-management cannot create ProtectedScopes"
! can svc-management get secrets >/dev/null || die "svc-management may read Secrets"
! can svc-management patch protectedscopes.auth.svc.io --subresource=status >/dev/null || die "svc-management may write status"
can svc-auth watch configmaps >/dev/null || die "svc-auth cannot watch ConfigMaps"
! can svc-auth create configmaps >/dev/null || die "svc-auth may create ConfigMaps"
can svc-operator patch protectedscopes.auth.svc.io --subresource=status >/dev/null || die "svc-operator cannot patch status"
! can svc-operator update protectedscopes.auth.svc.io >/dev/null || die "svc-operator may update ProtectedScopes"
! kubectl auth can-i --as="system:serviceaccount:$NS:svc-operator" -n default list configmaps >/dev/null || die "svc-operator reaches beyond its namespace"
printf 'ok  RBAC\n' >&2

# probe NAMESPACE URL: exit 0 when a pod in NAMESPACE reaches URL (any HTTP answer), 1 when it cannot; dies when
# the probe itself did not run. Five tries 2 s apart: the policy controller admits a new pod's address a moment
# after the pod starts. Decided on what the pod printed: kubectl may fall back from attaching to reading the logs
# of a pod that ended quickly.
probe() {
  local js='const t=async(n)=>{try{const r=await fetch(process.argv[1],{signal:AbortSignal.timeout(3000)});console.log("answered "+r.status)}catch(e){if(n>1){await new Promise(z=>setTimeout(z,2000));return t(n-1)}console.log("no answer: "+(e.cause?.code??e.name))}};t(5)' out
  out="$(kubectl -n "$1" run "np-probe-$RANDOM" --image="$SVC_IMAGE" --image-pull-policy=Never --restart=Never --rm -i --quiet \
    --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532}}}' --command -- node -e "$js" "$2" 2>&1 || true)"
  printf '%s\n' "$out" >&2
  case "$out" in
    *"answered "*) return 0 ;;
    *"no answer: "*) return 1 ;;
    *) die "the probe pod in namespace $1 did not run" ;;
  esac
}
AUTH_URL="http://svc-auth.$NS.svc.cluster.local:8080/healthz"

log "cluster DNS: a pod resolves svc-auth.$NS.svc.cluster.local"
kubectl -n "$NS" run "dns-probe-$RANDOM" --image="$SVC_IMAGE" --image-pull-policy=Never --restart=Never --rm -i --quiet \
  --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532}}}' \
  --command -- node -e 'require("dns").lookup(process.argv[1],(e,a)=>{console.log(e?"no address: "+e.code:"resolved to "+a);process.exit(e?1:0)})' "svc-auth.$NS.svc.cluster.local" \
  || die "cluster DNS does not resolve svc-auth"

log "NetworkPolicy: a pod outside the proxy's namespace cannot reach svc-auth; one in $proxy_ns can"
if probe default "$AUTH_URL"; then
  [[ "$STRICT_NETWORK_POLICY" == "true" ]] && die "svc-auth is reachable from namespace default"
  printf 'WARNING: svc-auth is reachable from namespace default: does this CNI enforce NetworkPolicy?\n' >&2
else
  printf 'ok  refused: namespace default -> svc-auth:8080\n' >&2
fi
if kubectl get ns "$proxy_ns" >/dev/null 2>&1; then
  probe "$proxy_ns" "$AUTH_URL" || die "svc-auth is not reachable from namespace $proxy_ns"
  printf 'ok  allowed: namespace %s -> svc-auth:8080\n' "$proxy_ns" >&2
fi

if [[ "$(kubectl get nodes --no-headers | grep -c .)" -ge 2 ]]; then
log "svc-auth's replicas spread over the nodes"
spread="$(kubectl -n "$NS" get pods -l app.kubernetes.io/component=auth -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c)"
printf '%s\n' "$spread" >&2
[[ "$(printf '%s\n' "$spread" | grep -c .)" -ge 2 ]] || die "svc-auth's replicas are all on one node"
printf 'ok  svc-auth on %s nodes\n' "$(printf '%s\n' "$spread" | grep -c .)" >&2
fi

# ------------------------------------------------------------------------------------------ suites
if [[ "${SKIP_SUITES:-false}" != "true" ]]; then
  log "integration suites with USE_EXISTING_CLUSTER=true"
  cd "$ROOT"
  [[ -d node_modules ]] || npm ci
  # The cluster's CA, from the control-plane node: the suites issue client certificates for their test users.
  "$PROVIDER" exec "$CLUSTER-control-plane" cat /etc/kubernetes/pki/ca.crt >"$WORK/ca.crt"
  "$PROVIDER" exec "$CLUSTER-control-plane" cat /etc/kubernetes/pki/ca.key >"$WORK/ca.key"
  chmod 600 "$WORK/ca.key"
  USE_EXISTING_CLUSTER=true USE_EXISTING_CLUSTER_CA_CERT="$WORK/ca.crt" USE_EXISTING_CLUSTER_CA_KEY="$WORK/ca.key" \
    npm test -- --only integration
fi

log "kind: all checks passed"
