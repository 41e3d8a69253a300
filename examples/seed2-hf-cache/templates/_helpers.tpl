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
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Full label set of a component; call with (dict "root" $ "component" "name"). */}}
{{- define "apc.labels" -}}
{{ include "apc.commonLabels" .root }}
{{ include "apc.selectorLabels" . }}
{{- end -}}

{{/* "true" when this chart owns the cache claim (serving on, cache on, no existing claim). */}}
{{- define "apc.cache.owned" -}}
{{- $ms := .Values.modelServing -}}
{{- if and $ms.enabled $ms.cache.enabled (not $ms.cache.existingClaim) -}}true{{- end -}}
{{- end -}}

{{/* Name of the cache claim predictors mount: the existing claim or the chart's. */}}
{{- define "apc.cache.claimName" -}}
{{- .Values.modelServing.cache.existingClaim | default .Values.modelServing.cache.pvc.name -}}
{{- end -}}

{{/*
"true" when the chart's hook identity (<release>-hooks) is needed: the cache claim is the
chart's and is applied by the hook Job.
*/}}
{{- define "apc.hooks.enabled" -}}
{{- if and (include "apc.cache.owned" .) .Values.modelServing.cache.viaHook -}}true{{- end -}}
{{- end -}}

{{- define "apc.hooks.name" -}}
{{- printf "%s-hooks" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The cache claim as one line of JSON: the same object whether Helm applies it (release
resource) or the hook Job does. storageClassName: empty = unset, "-" = "" (empty class).
*/}}
{{- define "apc.cache.claim" -}}
{{- $ms := .Values.modelServing -}}
{{- $pvc := $ms.cache.pvc -}}
{{- $spec := dict "accessModes" $pvc.accessModes "resources" (dict "requests" (dict "storage" $pvc.size)) -}}
{{- if eq (toString $pvc.storageClassName) "-" -}}
{{- $_ := set $spec "storageClassName" "" -}}
{{- else if $pvc.storageClassName -}}
{{- $_ := set $spec "storageClassName" $pvc.storageClassName -}}
{{- end -}}
{{- if $pvc.volumeName -}}
{{- $_ := set $spec "volumeName" $pvc.volumeName -}}
{{- end -}}
{{- $labels := include "apc.selectorLabels" (dict "root" . "component" "model-cache") | fromYaml -}}
{{- $_ := set $labels "app.kubernetes.io/part-of" "agent-platform" -}}
{{- $meta := dict "name" $pvc.name "namespace" $ms.namespace "labels" $labels "annotations" (dict "helm.sh/resource-policy" "keep") -}}
{{- dict "apiVersion" "v1" "kind" "PersistentVolumeClaim" "metadata" $meta "spec" $spec | toJson -}}
{{- end -}}

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
