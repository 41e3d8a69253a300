{{- define "db.env" -}}{{ upper .Values.flavor }}{{- end -}}

{{- /* The pod spec of one role, in the shape of bitnami/charts bitnami/mysql/templates/primary/statefulset.yaml
       and secondary/statefulset.yaml (bitnami/mariadb's are the same with MARIADB_*). */ -}}
{{- define "db.pod" -}}
{{- $role := .role -}}
{{- with .ctx -}}
initContainers:
  - name: preserve-logs-symlinks
    image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
    command:
      - /bin/bash
    args:
      - -ec
      - |
        . /opt/bitnami/scripts/libfs.sh
        # We copy the logs folder because it has symlinks to stdout and stderr
        if ! is_dir_empty /opt/bitnami/{{ .Values.flavor }}/logs; then
          cp -r /opt/bitnami/{{ .Values.flavor }}/logs /emptydir/app-logs-dir
        fi
    volumeMounts:
      - name: empty-dir
        mountPath: /emptydir
containers:
  - name: {{ .Values.flavor }}
    image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
    env:
      - name: {{ include "db.env" . }}_REPLICATION_MODE
        value: {{ if eq $role "primary" }}master{{ else }}slave{{ end }}
      - name: {{ include "db.env" . }}_REPLICATION_USER
        value: replicator
      {{- if eq $role "secondary" }}
      - name: {{ include "db.env" . }}_MASTER_HOST
        value: {{ .Release.Name }}-primary
      - name: {{ include "db.env" . }}_MASTER_PORT_NUMBER
        value: {{ .Values.port | quote }}
      - name: {{ include "db.env" . }}_MASTER_ROOT_USER
        value: root
      {{- end }}
    ports:
      - name: {{ .Values.flavor }}
        containerPort: {{ .Values.port }}
    startupProbe:
      initialDelaySeconds: 15
      periodSeconds: 10
      failureThreshold: 15
      exec:
        command: [/bin/bash, -ec, 'mysqladmin ping -uroot -p"${ROOT_PASSWORD:-}" | grep "mysqld is alive"']
    readinessProbe:
      initialDelaySeconds: 5
      periodSeconds: 10
      exec:
        command: [/bin/bash, -ec, 'mysqladmin ping -uroot -p"${ROOT_PASSWORD:-}" | grep "mysqld is alive"']
    volumeMounts:
      - name: empty-dir
        mountPath: /opt/bitnami/{{ .Values.flavor }}/logs
        subPath: app-logs-dir
volumes:
  - name: empty-dir
    emptyDir: {}
{{- end -}}
{{- end -}}
