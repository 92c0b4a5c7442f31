{{/* Names and labels shared by every template. */}}

{{- define "akri.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "akri.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; "akri.labels" (dict "root" $ "component" "agent"). */}}
{{- define "akri.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{ include "akri.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{- end -}}

{{/* The labels that select one component's pods (immutable in a workload's selector). */}}
{{- define "akri.selectorLabels" -}}
app.kubernetes.io/name: {{ include "akri.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "akri.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Whether DRA may be used (mode dra or auto): DRA mounts and RBAC only then. */}}
{{- define "akri.dra" -}}
{{- if ne .Values.mode "device-plugin" }}true{{ end -}}
{{- end -}}

{{/* Environment every component reads the same way. */}}
{{- define "akri.commonEnv" -}}
- name: AKRI_MODE
  value: {{ .Values.mode | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
{{- with .Values.watchNamespace }}
- name: AKRI_NAMESPACE
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Probes on the telemetry port: /healthz (the event loop runs), /readyz (caches synced). */}}
{{- define "akri.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}
