{{/*
The RBAC rules of the three components, in one place. Each is granted through a namespaced Role bound
to the component's ServiceAccount in the release namespace; nothing is cluster-wide. Keep each list the
least the program needs: a program that calls something not listed here fails with 403 (and says so).
*/}}

{{/* svc-operator: reads ProtectedScopes, writes their status, owns the snapshot ConfigMaps, reports
Events, and holds its leader-election Lease. */}}
{{- define "svc.rbac.operatorRules" -}}
- apiGroups: ["auth.svc.io"]
  resources: ["protectedscopes"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["auth.svc.io"]
  resources: ["protectedscopes/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
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
