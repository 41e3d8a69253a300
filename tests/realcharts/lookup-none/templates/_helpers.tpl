{{/* no-lookup.name: never calls lookup "v1" "Secret" */}}
{{- define "no-lookup.name" -}}
{{ .Release.Name }}-plain
{{- end }}
