{{/*
lookup-app.fullname: the release's name.
A comment that names lookup "v1" "Secret" is not a call, nor is {{ lookup "v1" "Secret" "x" "y" }} inside it.
*/}}
{{- define "lookup-app.fullname" -}}
{{ .Release.Name }}-app
{{- end }}

{{/* the password of the existing Secret on upgrade, else a default (bitnami/common's shape) */}}
{{- define "lookup-app.password" -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "lookup-app.fullname" .) -}}
{{- if and $secret $secret.data -}}
{{ index $secret.data "password" }}
{{- else -}}
{{ "changeme" | b64enc }}
{{- end -}}
{{- end }}

{{- define "lookup-app.unused" -}}
{{ lookup "v1" "ConfigMap" .Release.Namespace "never-included" }}
{{- end }}
