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
