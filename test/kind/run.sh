#!/usr/bin/env bash
# End-to-end on a real cluster, for people with Docker (it cannot run on the project's build machines,
# which have no Docker daemon and no network but the package registries): creates a kind cluster, builds
# and loads the image, installs ingress-nginx and the chart, checks the whole path through the ingress
# (open -> add-token closes -> token opens -> remove-tokens reopens), checks RBAC and the NetworkPolicy,
# then runs the integration suites against the cluster with USE_EXISTING_CLUSTER=true.
#
#   test/kind/run.sh                       everything, then delete the cluster
#   KEEP_CLUSTER=true test/kind/run.sh     leave the cluster (and print how to reach it)
#   SKIP_SUITES=true test/kind/run.sh      only the cluster checks, not `npm test -- --only integration`
#
# Needs: docker (running), kind, kubectl, helm (PATH, $HELM, or ~/.cache/svc-access-control), curl, node/npm.
# Settings (environment): KIND_CLUSTER_NAME (svc-kind), KIND_NODE_IMAGE (kind's default), SVC_NAMESPACE (svc),
# SVC_IMAGE (svc-access-control:kind), HTTP_PORT (18080), HTTPS_PORT (18443),
# INGRESS_NGINX_VERSION (controller-v1.12.1), STRICT_NETWORK_POLICY (false: a CNI that does not enforce
# NetworkPolicy only warns).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/test/kind"
CLUSTER="${KIND_CLUSTER_NAME:-svc-kind}"
NS="${SVC_NAMESPACE:-svc}"
SVC_IMAGE="${SVC_IMAGE:-svc-access-control:kind}"
HTTP_PORT="${HTTP_PORT:-18080}"
HTTPS_PORT="${HTTPS_PORT:-18443}"
INGRESS_NGINX_VERSION="${INGRESS_NGINX_VERSION:-controller-v1.12.1}"
HOST="data.kind.test"
TOPIC="origin.a.wis2.kind-test.data.core"
WORK="$(mktemp -d)"
export KUBECONFIG="$WORK/kubeconfig"

log() { printf '\n=== %s\n' "$*" >&2; }
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

cleanup() {
  local rc=$?
  if [[ "${KEEP_CLUSTER:-false}" == "true" ]]; then
    cp "$KUBECONFIG" "$HERE/.kubeconfig" 2>/dev/null || true
    printf '\nCluster "%s" kept: export KUBECONFIG=%s; curl -H "Host: %s" http://127.0.0.1:%s/oapi/collections/%s/items\n' \
      "$CLUSTER" "$HERE/.kubeconfig" "$HOST" "$HTTP_PORT" "$TOPIC" >&2
  else
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}

# ------------------------------------------------------------------------------------------ tools
for tool in docker kind kubectl curl node npm; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
HELM="${HELM:-$(command -v helm || true)}"
if [[ -z "$HELM" ]]; then
  HELM="$(find "$HOME/.cache/svc-access-control" -name helm -type f -perm -u+x 2>/dev/null | head -n 1 || true)"
fi
[[ -n "$HELM" && -x "$HELM" ]] || die "helm not found (PATH, \$HELM or ~/.cache/svc-access-control)"
docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable"

trap cleanup EXIT

# ------------------------------------------------------------------------------------------ cluster
log "kind cluster $CLUSTER (host ports $HTTP_PORT/$HTTPS_PORT)"
if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"
else
  sed -e "s/\${HTTP_PORT}/$HTTP_PORT/" -e "s/\${HTTPS_PORT}/$HTTPS_PORT/" "$HERE/kind-config.yaml" >"$WORK/kind-config.yaml"
  kind create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --config "$WORK/kind-config.yaml" --wait 180s \
    ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
fi

log "image $SVC_IMAGE"
docker build -t "$SVC_IMAGE" "$ROOT"
kind load docker-image "$SVC_IMAGE" --name "$CLUSTER"

log "ingress-nginx $INGRESS_NGINX_VERSION"
kubectl apply -f "https://raw.githubusercontent.com/kubernetes/ingress-nginx/$INGRESS_NGINX_VERSION/deploy/static/provider/kind/deploy.yaml"
kubectl -n ingress-nginx rollout status deploy/ingress-nginx-controller --timeout=300s

log "chart charts/svc into namespace $NS"
"$HELM" lint --strict "$ROOT/charts/svc"
"$HELM" upgrade --install svc "$ROOT/charts/svc" --namespace "$NS" --create-namespace \
  --set image.repository="${SVC_IMAGE%:*}" --set image.tag="${SVC_IMAGE##*:}" --set image.pullPolicy=Never \
  --wait --timeout 5m
kubectl -n "$NS" rollout status deploy/svc-operator --timeout=120s
kubectl -n "$NS" rollout status deploy/svc-auth --timeout=120s
kubectl -n "$NS" rollout status deploy/svc-management --timeout=120s

log "demo backends and the ingress-nginx Ingress of deploy/ingress-nginx/ingress.yaml"
sed -e "s|\${SVC_IMAGE}|$SVC_IMAGE|" "$HERE/manifests/backends.yaml" | kubectl -n "$NS" apply -f -
kubectl -n "$NS" rollout status deploy/demo-backend --timeout=120s
sed -e "s/namespace: svc$/namespace: $NS/" -e "s/svc-auth\.svc\.svc/svc-auth.$NS.svc/" -e "s/data\.example\.org/$HOST/" \
  "$ROOT/deploy/ingress-nginx/ingress.yaml" >"$WORK/ingress.yaml"
# The controller's admission webhook can take a moment to answer after the rollout.
for _ in $(seq 1 30); do
  kubectl apply -f "$WORK/ingress.yaml" && break
  sleep 2
done
kubectl -n "$NS" get ingress svc-data >/dev/null

# ------------------------------------------------------------------------------------------ checks
# status PATH [curl args...]: the HTTP status of a request through ingress-nginx.
status() {
  local path="$1"
  shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Host: $HOST" "$@" "http://127.0.0.1:$HTTP_PORT$path" || true
}
# expect CODE PATH [curl args...]: fails unless the status is CODE.
expect() {
  local want="$1" got
  got="$(status "${@:2}")"
  [[ "$got" == "$want" ]] || die "${*:2}: expected $want, got $got"
  printf 'ok  %s  %s\n' "$want" "$2" >&2
}
# eventually CODE PATH [curl args...]: waits (90 s at most) for CODE, which covers the operator's
# reconcile, the snapshot reaching svc-auth and ingress-nginx's decision cache (30 s at most).
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

log "NetworkPolicy: a pod outside the ingress namespace cannot reach svc-auth"
probe='fetch(process.argv[1],{signal:AbortSignal.timeout(5000)}).then(()=>process.exit(1),()=>process.exit(0))'
if kubectl -n default run np-probe --image="$SVC_IMAGE" --image-pull-policy=Never --restart=Never --rm -i --quiet \
  --command -- node -e "$probe" "http://svc-auth.$NS.svc.cluster.local:8080/healthz"; then
  printf 'ok  svc-auth unreachable from namespace default\n' >&2
elif [[ "${STRICT_NETWORK_POLICY:-false}" == "true" ]]; then
  die "svc-auth is reachable from namespace default"
else
  printf 'WARNING: svc-auth is reachable from namespace default: does this CNI enforce NetworkPolicy?\n' >&2
fi

# ------------------------------------------------------------------------------------------ suites
if [[ "${SKIP_SUITES:-false}" != "true" ]]; then
  log "integration suites with USE_EXISTING_CLUSTER=true"
  cd "$ROOT"
  [[ -d node_modules ]] || npm ci
  USE_EXISTING_CLUSTER=true npm test -- --only integration
fi

log "kind: all checks passed"
