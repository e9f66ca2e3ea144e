{{/*
The RBAC rules of the three components, in one place. Each is granted through a namespaced Role bound
to the component's ServiceAccount in the release namespace; nothing is cluster-wide. Keep each list the
least the program needs: a program that calls something not listed here fails with 403 (and says so).
*/}}

{{/* svc-operator: reads ProtectedScopes, merge-patches their status, owns the snapshot ConfigMaps
(server-side apply: create and patch; delete of stale shards), reports events.k8s.io Events, and holds
its leader-election Lease, which it may read and renew by name only. Nothing cluster-wide: it never
reads the CRD, and no Secrets, Pods or other namespaces. */}}
{{- define "svc.rbac.operatorRules" -}}
- apiGroups: ["auth.svc.io"]
  resources: ["protectedscopes"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["auth.svc.io"]
  resources: ["protectedscopes/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
{{- if .Values.operator.leaderElect }}
{{- /* create cannot be limited by name (the name is not known when it is authorized). */}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: [{{ include "svc.leaseName" . | quote }}]
  verbs: ["get", "update"]
{{- end }}
{{- end -}}

{{/* svc-auth: reads (and watches) the snapshot ConfigMaps, nothing else. */}}
{{- define "svc.rbac.authRules" -}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{/* svc-management: the `svc auth ...` CLI edits ProtectedScopes, nothing else (not even their status). */}}
{{- define "svc.rbac.managementRules" -}}
- apiGroups: ["auth.svc.io"]
  resources: ["protectedscopes"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end -}}

{{/* The data owners' Role (svc-data-owner, bound by the cluster's admin to people, not to a component):
whoever holds it decides who gets in by editing ProtectedScopes, the same and only grant svc-management has.
No ConfigMaps (the snapshot), Secrets, pods, exec or impersonation: docs/access-rules.md, "Who can change who
gets in". */}}
{{- define "svc.rbac.dataOwnerRules" -}}
{{ include "svc.rbac.managementRules" . }}
{{- end -}}

{{/* The Role for data owners (templates/data-owner-role.yaml); fixed like the components' names, so the documented
`kubectl create rolebinding ... --role=svc-data-owner` works as written. */}}
{{- define "svc.dataOwnerName" -}}svc-data-owner{{- end -}}

{{/* The ValidatingAdmissionPolicy that keeps the snapshot the operator's, and its binding
(templates/snapshot-admission-policy.yaml): cluster-scoped objects, so one name per release namespace. */}}
{{- define "svc.snapshotPolicyName" -}}{{ printf "svc-snapshot-writer.%s" .Release.Namespace }}{{- end -}}
