{{- define "shepherd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "shepherd.fullname" -}}
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

{{- define "shepherd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shepherd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "shepherd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "shepherd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "shepherd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "shepherd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* redis: whether the sessions are kept in Redis. */}}
{{- define "shepherd.redis" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret .Values.redis.addrs }}true{{ end }}
{{- end }}

{{/* The Secret the chart creates (Redis URL, generated admin token). */}}
{{- define "shepherd.secretName" -}}
{{- include "shepherd.fullname" . }}
{{- end }}

{{/* shepherd's config file: the user's config plus state.backend (and the
Redis seeds). listen and admin.listen are set through the environment
(deployment.yaml): the image's ENV sets them, and the environment beats the
file. */}}
{{- define "shepherd.config" -}}
{{- $c := deepCopy .Values.config }}
{{- $_ := "" }}
{{- $state := default dict (get $c "state") }}
{{- if include "shepherd.redis" . }}
{{- $_ = set $state "backend" "redis" }}
{{- if or .Values.redis.addrs .Values.redis.masterName }}
{{- $r := default dict (get $state "redis") }}
{{- if .Values.redis.addrs }}{{ $_ = set $r "addrs" .Values.redis.addrs }}{{ end }}
{{- if .Values.redis.masterName }}{{ $_ = set $r "master_name" .Values.redis.masterName }}{{ end }}
{{- $_ = set $state "redis" $r }}
{{- end }}
{{- else }}
{{- $_ = set $state "backend" "memory" }}
{{- end }}
{{- $_ = set $c "state" $state }}
{{- toYaml $c }}
{{- end }}
