{{/* Chart label value: name-version, "+" is not allowed in label values. */}}
{{- define "apc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object of the release carries (with the selector labels, or alone on shared objects). */}}
{{- define "apc.commonLabels" -}}
helm.sh/chart: {{ include "apc.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: agent-platform
{{- end -}}

{{/* Selector labels of a component; call with (dict "root" $ "component" "name"). */}}
{{- define "apc.selectorLabels" -}}
app.kubernetes.io/name: agent-manager
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Full label set of a component; call with (dict "root" $ "component" "name"). */}}
{{- define "apc.labels" -}}
{{ include "apc.commonLabels" .root }}
{{ include "apc.selectorLabels" . }}
{{- end -}}

{{- define "apc.agentManager.fullname" -}}
{{- printf "%s-agent-manager" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "apc.agentManager.image" -}}
{{- printf "%s:%s" .Values.agentManager.image.repository (.Values.agentManager.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Name of the migration's ServiceAccount, Role and network policy (stable across versions). */}}
{{- define "apc.migrate.name" -}}
{{- printf "%s-agent-manager-migrate" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of the migrate Job: suffixed with a short hash of the chart version and the migrated
API versions, so each chart version runs a new Job (a Job's pod template is immutable).
*/}}
{{- define "apc.migrate.jobName" -}}
{{- $m := .Values.agentManager.migration -}}
{{- $hash := printf "%s/%s/%s" .Chart.Version $m.fromApiVersion $m.toApiVersion | sha256sum | trunc 8 -}}
{{- printf "%s-%s" (include "apc.migrate.name" .) $hash -}}
{{- end -}}

{{/*
Network policy flavour: "cilium" or "kubernetes". "auto" picks cilium when the cluster
serves the CiliumNetworkPolicy kind (helm template: --api-versions cilium.io/v2/CiliumNetworkPolicy).
*/}}
{{- define "apc.networkPolicy.flavour" -}}
{{- $flavour := .Values.networkPolicy.flavour | default "auto" -}}
{{- if eq $flavour "auto" -}}
{{- if or (.Capabilities.APIVersions.Has "cilium.io/v2/CiliumNetworkPolicy") (.Capabilities.APIVersions.Has "cilium.io/v2") -}}
cilium
{{- else -}}
kubernetes
{{- end -}}
{{- else if or (eq $flavour "cilium") (eq $flavour "kubernetes") -}}
{{- $flavour -}}
{{- else -}}
{{- fail (printf "networkPolicy.flavour must be auto, cilium or kubernetes, not %q" $flavour) -}}
{{- end -}}
{{- end -}}

{{/* Hook annotations of the migration's network policy when migration.policyAsHook is on. */}}
{{- define "apc.migrate.policyHookAnnotations" -}}
{{- if .Values.agentManager.migration.policyAsHook -}}
helm.sh/hook: pre-install,pre-upgrade
helm.sh/hook-weight: "-5"
helm.sh/hook-delete-policy: before-hook-creation
{{- end -}}
{{- end -}}

{{/* Restricted-profile container security context shared by every container. */}}
{{- define "apc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}
