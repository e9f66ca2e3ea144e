{{/*
The wiring (values protect.*): what one controller reads to ask svc-auth about every request on the data routes. Each
setting is written once here; the objects (wiring-*.yaml), NOTES.txt and `svc auth wiring` (cli/commands/wiring.ts,
diffed against `helm template` by test/integration/chart-wiring.test.ts) all say the same.
*/}}

{{/* Labels of the wiring objects: no release or tool names, so `svc auth wiring` prints the very same objects. */}}
{{- define "svc.wiringLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/part-of: svc-access-control
app.kubernetes.io/component: wiring
{{- end -}}

{{/* The namespace of the data Services and their routes. */}}
{{- define "svc.protectNamespace" -}}
{{- .Values.protect.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* svc-auth's address as the controller's proxies reach it (no trailing slash). */}}
{{- define "svc.authURL" -}}
{{- .Values.protect.authURL | default (printf "http://%s.%s.svc.cluster.local:%v" (include "svc.authName" .) .Release.Namespace .Values.auth.port) -}}
{{- end -}}

{{/* The controller whose pods ask svc-auth: ingress-nginx's Ingress read by Traefik's provider is Traefik's. */}}
{{- define "svc.proxyController" -}}
{{- $c := .Values.protect.controller -}}
{{- if and (eq $c "ingress-nginx") (eq .Values.protect.ingressNginx.readBy "traefik") }}traefik{{ else }}{{ $c }}{{ end -}}
{{- end -}}

{{/*
ingress-nginx's annotations, for readBy ingress-nginx or traefik (only auth-url's path differs: Traefik's provider
sends X-Forwarded-*, which only /authz/forward-auth reads; it ignores the other auth-* annotations). No auth-signin:
it redirects every 401, programs' and fetch()es' too.
*/}}
{{- define "svc.ingressNginxAnnotations" -}}
{{- $p := .Values.protect -}}
{{- $endpoint := eq $p.ingressNginx.readBy "traefik" | ternary "/authz/forward-auth" "/authz/auth-request" -}}
nginx.ingress.kubernetes.io/auth-url: {{ printf "%s%s" (include "svc.authURL" .) $endpoint | quote }}
nginx.ingress.kubernetes.io/auth-method: "GET"
nginx.ingress.kubernetes.io/auth-keepalive: "32"
nginx.ingress.kubernetes.io/auth-keepalive-requests: "10000"
nginx.ingress.kubernetes.io/auth-keepalive-timeout: "60"
nginx.ingress.kubernetes.io/auth-proxy-set-headers: {{ printf "%s/%s" (include "svc.protectNamespace" .) (include "svc.authHeadersName" .) | quote }}
{{- if and $p.ingressNginx.authCache (gt (int .Values.auth.cacheMaxAge) 0) }}
nginx.ingress.kubernetes.io/auth-cache-key: "$request_method $request_uri $http_authorization $arg_token"
nginx.ingress.kubernetes.io/auth-cache-duration: {{ printf "200 202 %ds, 401 403 0s" (int .Values.auth.cacheMaxAge) | quote }}
{{- end }}
nginx.ingress.kubernetes.io/auth-response-headers: "X-Auth-Request-Scope, X-Auth-Request-Token-Id, X-Auth-Request-User, X-Auth-Request-Group, X-Auth-Request-Network, X-Svc-Sign-In, X-Svc-Denied"
{{- end -}}

{{/* The ConfigMap auth-proxy-set-headers names: the headers ingress-nginx sets on the auth subrequest. */}}
{{- define "svc.authHeadersName" -}}svc-auth-request-headers{{- end -}}

{{/* Traefik's forwardAuth: the headers svc-auth reads go to it; of its answer only the answer headers (X-Auth-Request-*, X-Svc-*), which replace a client's copies. */}}
{{- define "svc.forwardAuth" -}}
address: {{ printf "%s/authz/forward-auth" (include "svc.authURL" .) }}
trustForwardHeader: false
authRequestHeaders:
  - Authorization
  - X-HTTP-Method-Override
  - X-HTTP-Method
  - X-Method-Override
  - Cookie
  - Accept
  - Sec-Fetch-Mode
  - Sec-Fetch-Site
  - Sec-Fetch-Dest
  - Origin
authResponseHeaders:
  - X-Auth-Request-Scope
  - X-Auth-Request-Token-Id
  - X-Auth-Request-User
  - X-Auth-Request-Group
  - X-Auth-Request-Network
  - X-Svc-Sign-In
  - X-Svc-Denied
maxResponseBodySize: 4096
{{- end -}}

{{/* svc-auth's Service as a Gateway API backendRef from the routes' namespace. */}}
{{- define "svc.authBackendRef" -}}
name: {{ include "svc.authName" . }}
{{- if ne (include "svc.protectNamespace" .) .Release.Namespace }}
namespace: {{ .Release.Namespace }}
{{- end }}
port: {{ .Values.auth.port }}
{{- end -}}

{{/* Envoy Gateway's extAuth: svc-auth's Envoy endpoint, failing closed, with the client headers it reads. */}}
{{- define "svc.extAuth" -}}
failOpen: false
http:
  backendRefs:
    {{- toYaml (list (include "svc.authBackendRef" . | fromYaml)) | nindent 4 }}
  path: /authz/ext-authz
  headersToBackend:
    - x-auth-request-scope
    - x-auth-request-token-id
    - x-auth-request-user
    - x-auth-request-group
    - x-auth-request-network
    - x-svc-sign-in
    - x-svc-denied
headersToExtAuth:
  - authorization
  - x-forwarded-for
  - x-http-method-override
  - x-http-method
  - x-method-override
  - cookie
  - accept
  - sec-fetch-mode
  - sec-fetch-site
  - sec-fetch-dest
  - origin
{{- end -}}

{{/* Gateway API's ExternalAuth filter (GEP-1494): http.path without a trailing slash (NGINX Gateway Fabric's dialect). */}}
{{- define "svc.externalAuthFilter" -}}
type: ExternalAuth
externalAuth:
  protocol: HTTP
  backendRef:
    {{- include "svc.authBackendRef" . | nindent 4 }}
  http:
    path: /authz/ext-authz
    allowedHeaders:
      - X-HTTP-Method-Override
      - X-HTTP-Method
      - X-Method-Override
      - Cookie
      - Accept
      - Sec-Fetch-Mode
      - Sec-Fetch-Site
      - Sec-Fetch-Dest
      - Origin
    allowedResponseHeaders:
      - X-Auth-Request-Scope
      - X-Auth-Request-Token-Id
      - X-Auth-Request-User
      - X-Auth-Request-Group
      - X-Auth-Request-Network
      - X-Svc-Sign-In
      - X-Svc-Denied
{{- end -}}

{{/* svc-auth's pages on the data hosts: the public list, and the sign-in paths with auth.signIn on (each exact). */}}
{{- define "svc.pagesPaths" -}}
{{- if .Values.auth.signIn.enabled -}}
{{ include "svc.signInPaths" . }}
{{- else -}}
- /authz/v1/protected
{{- end -}}
{{- end -}}

{{/* The hosts of the pages route: the protected ones, then the sign-in external URLs' others, each once. */}}
{{- define "svc.pagesHosts" -}}
{{- $hosts := list -}}
{{- range .Values.protect.hosts }}{{ $hosts = append $hosts .host }}{{ end -}}
{{- if .Values.auth.signIn.enabled }}{{ $hosts = concat $hosts (include "svc.signInHosts" . | fromYamlArray) }}{{ end -}}
{{- toYaml (uniq $hosts) -}}
{{- end -}}

{{/* The name of one host's HTTPRoute (HTTPRoute rules cannot differ per hostname, so one route per host). */}}
{{- define "svc.hostRouteName" -}}svc-data.{{ . }}{{- end -}}

{{/* What the schema cannot say about protect: each host once, each path once per host. */}}
{{- define "svc.wiringChecks" -}}
{{- $seen := dict -}}
{{- range $h := .Values.protect.hosts -}}
{{- if hasKey $seen $h.host }}{{ fail (printf "protect.hosts: %s is listed twice: give each host once, with all its paths" $h.host) }}{{ end -}}
{{- $_ := set $seen $h.host true -}}
{{- $paths := dict -}}
{{- range $h.paths -}}
{{- if hasKey $paths .path }}{{ fail (printf "protect.hosts: %s has the path %s twice" $h.host .path) }}{{ end -}}
{{- $_ := set $paths .path true -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The pods that may reach svc-auth's port with protect.controller set, as a NetworkPolicy `from` peer: the controller's
namespace and labels (networkPolicy.controllerPods); gateway-api's default is the first Gateway's namespace and name.
*/}}
{{- define "svc.controllerPeer" -}}
{{- $c := include "svc.proxyController" . -}}
{{- $pods := index .Values.networkPolicy.controllerPods $c -}}
{{- $ns := $pods.namespace -}}
{{- $labels := $pods.podLabels -}}
{{- if eq $c "gateway-api" -}}
{{- $gw := first .Values.protect.gatewayApi.parentRefs -}}
{{- $ns = $ns | default ($gw.namespace | default (include "svc.protectNamespace" .)) -}}
{{- $labels = $labels | default (dict "gateway.networking.k8s.io/gateway-name" $gw.name) -}}
{{- end -}}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ $ns }}
  {{- with $labels }}
  podSelector:
    matchLabels:
      {{- toYaml . | nindent 6 }}
  {{- end }}
{{- end -}}
