{{/* The release's name for this chart's objects, at most 63 characters. */}}
{{- define "llmrouter.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "llmrouter.labels" -}}
app.kubernetes.io/name: llmrouter
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "llmrouter.selector" -}}
app.kubernetes.io/name: {{ if eq .Values.mode "sidecar" }}{{ .Values.sidecar.app.name }}{{ else }}llmrouter{{ end }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* What the Service carries for a ServiceMonitor to select. */}}
{{- define "llmrouter.serviceSelector" -}}
app.kubernetes.io/name: llmrouter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The admin token's Secret name. */}}
{{- define "llmrouter.adminSecret" -}}
{{- .Values.adminToken.existingSecret | default (printf "%s-admin" (include "llmrouter.fullname" .)) -}}
{{- end -}}

{{/* Whether the admin token is on: gateway mode with adminToken.enabled. */}}
{{- define "llmrouter.adminTokenOn" -}}
{{- if and (ne .Values.mode "sidecar") .Values.adminToken.enabled -}}true{{- end -}}
{{- end -}}

{{/* The router's config file: the values' config with what the shape sets. */}}
{{- define "llmrouter.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- if eq .Values.mode "sidecar" -}}
{{- $_ := set $c "listen" "127.0.0.1:8080" -}}
{{- else -}}
{{- $_ := set $c "listen" (printf "0.0.0.0:%v" .Values.service.port) -}}
{{- end -}}
{{- $_ := set $c "admin_listen" (printf "0.0.0.0:%v" .Values.service.adminPort) -}}
{{- if include "llmrouter.adminTokenOn" . -}}
{{- $_ := set $c "admin_token_env" "LLMROUTER_ADMIN_TOKEN" -}}
{{- end -}}
{{- if .Values.redis.url -}}
{{- $ss := get $c "shared_state" | default dict -}}
{{- $_ := set $ss "redis_url" .Values.redis.url -}}
{{- if .Values.redis.passwordSecret.name -}}
{{- $_ := set $ss "password_env" .Values.redis.passwordSecret.key -}}
{{- end -}}
{{- $_ := set $c "shared_state" $ss -}}
{{- end -}}
{{- if .Values.tracing.otlpEndpoint -}}
{{- $tr := get $c "tracing" | default dict -}}
{{- $_ := set $tr "otlp_endpoint" .Values.tracing.otlpEndpoint -}}
{{- $_ := set $c "tracing" $tr -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* The llmrouter container, in either shape. */}}
{{- define "llmrouter.container" -}}
name: llmrouter
image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}"
imagePullPolicy: {{ .Values.image.pullPolicy }}
args: ["--config", "/etc/llmrouter/config.yaml"]
env:
  {{- range .Values.providerKeys.keys }}
  - name: {{ . }}
    valueFrom:
      secretKeyRef: {name: {{ $.Values.providerKeys.secretName }}, key: {{ . }}, optional: false}
  {{- end }}
  {{- if and .Values.clientKeys.secretName (ne .Values.mode "sidecar") }}
  - name: {{ .Values.clientKeys.key }}
    valueFrom:
      secretKeyRef: {name: {{ .Values.clientKeys.secretName }}, key: {{ .Values.clientKeys.key }}, optional: false}
  {{- end }}
  {{- if include "llmrouter.adminTokenOn" . }}
  - name: LLMROUTER_ADMIN_TOKEN
    valueFrom:
      secretKeyRef: {name: {{ include "llmrouter.adminSecret" . }}, key: {{ .Values.adminToken.key }}}
  {{- end }}
  {{- if .Values.redis.passwordSecret.name }}
  - name: {{ .Values.redis.passwordSecret.key }}
    valueFrom:
      secretKeyRef: {name: {{ .Values.redis.passwordSecret.name }}, key: {{ .Values.redis.passwordSecret.key }}}
  {{- end }}
  # Let the Go GC work harder before the container reaches its limit.
  - name: GOMEMLIMIT
    valueFrom:
      resourceFieldRef: {resource: limits.memory}
ports:
  - {name: api, containerPort: {{ .Values.service.port }}, protocol: TCP}
  - {name: admin, containerPort: {{ .Values.service.adminPort }}, protocol: TCP}
# /readyz: config loaded, listeners up, not draining; never failed by
# providers being down, so an outage never takes the pod out of its Service.
startupProbe:
  httpGet: {path: /readyz, port: admin}
  periodSeconds: 1
  failureThreshold: 30
readinessProbe:
  httpGet: {path: /readyz, port: admin}
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 2
livenessProbe:
  httpGet: {path: /healthz, port: admin}
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  capabilities: {drop: ["ALL"]}
  seccompProfile: {type: RuntimeDefault}
volumeMounts:
  # A directory, not a subPath: the router reloads when the kubelet swaps it.
  - {name: config, mountPath: /etc/llmrouter, readOnly: true}
{{- end -}}
