{{/* Names and labels. */}}
{{- define "conduit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "conduit.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "conduit.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "conduit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "conduit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "conduit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "conduit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "conduit.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "conduit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The Secret every pod reads its secret settings from. */}}
{{- define "conduit.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- include "conduit.fullname" . }}
{{- end }}
{{- end }}

{{- define "conduit.temporalTLSSecretName" -}}
{{- if .Values.temporal.tls.existingSecret }}
{{- .Values.temporal.tls.existingSecret }}
{{- else }}
{{- printf "%s-temporal-tls" (include "conduit.fullname" .) }}
{{- end }}
{{- end }}

{{/* The worker's termination grace: the drain (temporal.stop_timeout) and a margin. */}}
{{- define "conduit.workerGrace" -}}
{{- add .Values.temporal.stopTimeoutSeconds .Values.worker.shutdownMarginSeconds }}
{{- end }}

{{/* The secret values as CONDUIT_* variables (only the set ones). */}}
{{- define "conduit.secretEnv" -}}
{{- $s := .Values.secrets }}
{{- $m := dict }}
{{- if $s.databaseUrl }}{{ $_ := set $m "CONDUIT_DATABASE_URL" $s.databaseUrl }}{{ end }}
{{- if $s.codecKeys }}{{ $_ := set $m "CONDUIT_TEMPORAL_CODEC_KEYS" $s.codecKeys }}{{ end }}
{{- if $s.temporalApiKey }}{{ $_ := set $m "CONDUIT_TEMPORAL_API_KEY" $s.temporalApiKey }}{{ end }}
{{- if $s.oauthSecret }}{{ $_ := set $m "CONDUIT_OAUTH_SECRET" $s.oauthSecret }}{{ end }}
{{- if $s.x402FacilitatorApiKey }}{{ $_ := set $m "CONDUIT_X402_FACILITATOR_API_KEY" $s.x402FacilitatorApiKey }}{{ end }}
{{- if $s.x402LocalKey }}{{ $_ := set $m "CONDUIT_X402_LOCAL_KEY" $s.x402LocalKey }}{{ end }}
{{- if $s.adminToken }}{{ $_ := set $m "CONDUIT_ADMIN_TOKEN" $s.adminToken }}{{ end }}
{{- range $k, $v := $s.extra }}{{ $_ := set $m $k $v }}{{ end }}
{{- toYaml $m }}
{{- end }}

{{/* Checks the schema cannot express; a failed one stops the render. */}}
{{- define "conduit.check" -}}
{{- $s := .Values.secrets }}
{{- if and $s.existingSecret (ne (include "conduit.secretEnv" .) "{}") }}
{{- fail "secrets.existingSecret is set: keep every secret in that Secret and leave the other secrets.* values empty" }}
{{- end }}
{{- if and (not $s.existingSecret) (not $s.databaseUrl) }}
{{- fail "secrets.databaseUrl (or secrets.existingSecret holding CONDUIT_DATABASE_URL) is required" }}
{{- end }}
{{- $t := .Values.temporal.tls }}
{{- if and $t.enabled (not $t.existingSecret) }}
{{- if and $t.mutual (or (not $t.certPem) (not $t.keyPem)) }}
{{- fail "temporal.tls.mutual needs temporal.tls.certPem and keyPem, or temporal.tls.existingSecret" }}
{{- end }}
{{- if and $t.privateCA (not $t.caPem) }}
{{- fail "temporal.tls.privateCA needs temporal.tls.caPem, or temporal.tls.existingSecret" }}
{{- end }}
{{- end }}
{{- if and $s.temporalApiKey (not $t.enabled) }}
{{- fail "secrets.temporalApiKey needs temporal.tls.enabled: an API key is only sent over TLS" }}
{{- end }}
{{- range $k, $_ := .Values.config.extraEnv }}
{{- if hasKey (include "conduit.configEnv" $ | fromYaml) $k }}
{{- fail (printf "config.extraEnv.%s is a setting the chart sets itself" $k) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The plain settings as CONDUIT_* variables. */}}
{{- define "conduit.configEnv" -}}
{{- $v := .Values }}
{{- $m := dict
  "CONDUIT_TEMPORAL_ADDRESS" $v.temporal.address
  "CONDUIT_TEMPORAL_NAMESPACE" $v.temporal.namespace
  "CONDUIT_TEMPORAL_POLLERS" (toString $v.temporal.pollers)
  "CONDUIT_TEMPORAL_RENDER_CONCURRENCY" (toString $v.temporal.renderConcurrency)
  "CONDUIT_TEMPORAL_STOP_TIMEOUT" (printf "%ds" (int $v.temporal.stopTimeoutSeconds))
  "CONDUIT_LOG_LEVEL" $v.config.logLevel
  "CONDUIT_LOG_FORMAT" $v.config.logFormat
}}
{{- if $v.config.publicUrl }}{{ $_ := set $m "CONDUIT_HTTP_PUBLIC_URL" $v.config.publicUrl }}{{ end }}
{{- if $v.config.trustedProxies }}{{ $_ := set $m "CONDUIT_HTTP_TRUSTED_PROXIES" (join " " $v.config.trustedProxies) }}{{ end }}
{{- if $v.metrics.enabled }}{{ $_ := set $m "CONDUIT_METRICS_ADDR" (printf "0.0.0.0:%d" (int $v.metrics.port)) }}{{ end }}
{{- if $v.tracing.endpoint }}{{ $_ := set $m "CONDUIT_TRACING_ENDPOINT" $v.tracing.endpoint }}{{ end }}
{{- with $v.temporal.tls }}
{{- if .enabled }}
{{- $_ := set $m "CONDUIT_TEMPORAL_TLS_ENABLED" "true" }}
{{- if .serverName }}{{ $_ := set $m "CONDUIT_TEMPORAL_TLS_SERVER_NAME" .serverName }}{{ end }}
{{- if .mutual }}
{{- $_ := set $m "CONDUIT_TEMPORAL_TLS_CERT_FILE" "/etc/conduit/temporal-tls/tls.crt" }}
{{- $_ := set $m "CONDUIT_TEMPORAL_TLS_KEY_FILE" "/etc/conduit/temporal-tls/tls.key" }}
{{- end }}
{{- if .privateCA }}{{ $_ := set $m "CONDUIT_TEMPORAL_TLS_CA_FILE" "/etc/conduit/temporal-tls/ca.crt" }}{{ end }}
{{- end }}
{{- end }}
{{- toYaml $m }}
{{- end }}

{{/* What both roles' pods share: environment, TLS files, security. */}}
{{- define "conduit.envFrom" -}}
- configMapRef:
    name: {{ include "conduit.fullname" . }}
- secretRef:
    name: {{ include "conduit.secretName" . }}
{{- end }}

{{- define "conduit.tlsMount" -}}
{{- if and .Values.temporal.tls.enabled (or .Values.temporal.tls.mutual .Values.temporal.tls.privateCA) }}
- name: temporal-tls
  mountPath: /etc/conduit/temporal-tls
  readOnly: true
{{- end }}
{{- end }}

{{- define "conduit.tlsVolume" -}}
{{- if and .Values.temporal.tls.enabled (or .Values.temporal.tls.mutual .Values.temporal.tls.privateCA) }}
- name: temporal-tls
  secret:
    secretName: {{ include "conduit.temporalTLSSecretName" . }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{/* Restarts pods when the settings they read change. */}}
{{- define "conduit.checksums" -}}
checksum/config: {{ include "conduit.configEnv" . | sha256sum }}
checksum/secret: {{ include "conduit.secretEnv" . | sha256sum }}
{{- end }}
