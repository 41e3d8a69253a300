{{- define "loki.container" -}}
- name: {{ .target }}
  image: {{ .ctx.Values.loki.image }}
  args:
    - -config.file=/etc/loki/config.yaml
    - -target={{ .target }}
  ports:
    - name: http-metrics
      containerPort: 3100
    - name: http-memberlist
      containerPort: 7946
  readinessProbe:
    httpGet:
      path: /ready
      port: http-metrics
    initialDelaySeconds: 15
  volumeMounts:
    - name: config
      mountPath: /etc/loki
{{- end -}}

{{- define "loki.labels" -}}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .target }}
app.kubernetes.io/part-of: memberlist
{{- end -}}
