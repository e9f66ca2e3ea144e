{{/*
Names are fixed (one release per namespace) so the documented commands work as written:
kubectl exec deploy/svc-management -- svc auth ..., auth-url http://svc-auth.<namespace>.svc...
*/}}
{{- define "svc.authName" -}}svc-auth{{- end -}}
{{- define "svc.operatorName" -}}svc-operator{{- end -}}
{{- define "svc.managementName" -}}svc-management{{- end -}}
{{/* svc-operator's leader-election Lease (passed as --lease-name; its Role may touch no other). */}}
{{- define "svc.leaseName" -}}{{ printf "%s-operator" .Values.snapshotName }}{{- end -}}

{{- define "svc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by every object of the release. */}}
{{- define "svc.labels" -}}
helm.sh/chart: {{ include "svc.chart" . }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: svc-access-control
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "auth"). Immutable once installed. */}}
{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* All labels of one component's objects: (dict "ctx" $ "component" "auth"). */}}
{{- define "svc.componentLabels" -}}
{{ include "svc.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The one image of the three programs; a digest, when given, wins over the tag. */}}
{{- define "svc.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Pod-level hardening, the same for every component. 65532 is the image's (and distroless') nonroot uid. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level hardening, the same for every container. */}}
{{- define "svc.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Downward-API environment every component gets: its namespace (the programs' default) and pod name. */}}
{{- define "svc.podEnv" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: NODE_ENV
  value: production
{{- end -}}

{{/* Scheduling fields shared by the pod templates: (dict "ctx" $ "values" .Values.auth). */}}
{{- define "svc.scheduling" -}}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The writable /tmp every read-only container gets. */}}
{{- define "svc.tmpVolume" -}}
- name: tmp
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- end -}}
{{- define "svc.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* The Secret of the session keys the chart generates when auth.signIn.sessionKeys.existingSecret is empty. */}}
{{- define "svc.sessionKeysName" -}}svc-auth-session-keys{{- end -}}

{{/* The Secret svc-auth reads its session keys from: the existing one, or the generated one. */}}
{{- define "svc.sessionKeysSecret" -}}
{{- .Values.auth.signIn.sessionKeys.existingSecret | default (include "svc.sessionKeysName" .) -}}
{{- end -}}

{{/* svc-auth's browser-facing paths on the data host: the only ones the sign-in route carries. */}}
{{- define "svc.signInPaths" -}}
- /authz/sign-in
- /authz/callback
- /authz/sign-out
- /authz/v1/session
- /authz/v1/protected
{{- end -}}

{{/* The hosts of auth.signIn.externalURLs, without port, each once, as a YAML list. */}}
{{- define "svc.signInHosts" -}}
{{- $hosts := list -}}
{{- range .Values.auth.signIn.externalURLs -}}
{{- $hosts = append $hosts (regexReplaceAll ":[0-9]+$" (urlParse .).host "") -}}
{{- end -}}
{{- toYaml (uniq $hosts) -}}
{{- end -}}

{{/*
What the schema cannot say about auth.signIn, checked where it is rendered: the sign-in needs one issuer of auth.oidc,
the one auth.signIn.issuer names when there are several.
*/}}
{{- define "svc.signInChecks" -}}
{{- with .Values.auth.signIn }}
{{- if .enabled }}
{{- $issuers := list }}
{{- range $.Values.auth.oidc.issuers }}{{ $issuers = append $issuers . }}{{ end }}
{{- range ($.Values.auth.oidc.authenticationConfig.jwt | default list) }}{{ $issuers = append $issuers .issuer.url }}{{ end }}
{{- if not $issuers }}
{{- fail "auth.signIn.enabled=true needs the OpenID provider it signs browsers in with: set auth.oidc.issuers (and auth.oidc.audiences), or auth.oidc.authenticationConfig" }}
{{- end }}
{{- if and .issuer (not (has .issuer $issuers)) }}
{{- fail (printf "auth.signIn.issuer %s is not one of the issuers svc-auth trusts (auth.oidc): %s" .issuer (join ", " $issuers)) }}
{{- end }}
{{- if and (gt (len $issuers) 1) (not .issuer) }}
{{- fail (printf "auth.oidc trusts %d issuers: set auth.signIn.issuer to the one that signs browsers in (%s)" (len $issuers) (join ", " $issuers)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
