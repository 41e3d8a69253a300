{{/* kit.secrets.reuse: the key of an existing Secret, else empty (bitnami/common common.secrets.lookup) */}}
{{- define "kit.secrets.reuse" -}}
{{- $data := (lookup "v1" "Secret" .context.Release.Namespace .secret).data -}}
{{- if $data }}{{ index $data .key }}{{ end -}}
{{- end -}}

{{/* kit.secrets.exists: no template of lookup-app includes it */}}
{{- define "kit.secrets.exists" -}}
{{- if (lookup "v1" "Secret" .context.Release.Namespace .secret) }}true{{ end -}}
{{- end -}}
