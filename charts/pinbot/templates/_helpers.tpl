{{/* The release's name, the prefix of every object's name. */}}
{{- define "pinbot.fullname" -}}
{{- if contains "pinbot" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-pinbot" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pinbot.labels" -}}
app.kubernetes.io/name: pinbot
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "pinbot.selector" -}}
app.kubernetes.io/name: pinbot
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: serve
{{- end -}}

{{/* The image: repository:tag[-debug][@digest]. */}}
{{- define "pinbot.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- $digest := .Values.image.digest -}}
{{- if .Values.image.debug }}{{ $tag = printf "%s-debug" $tag }}{{ $digest = .Values.image.debugDigest }}{{ end -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- with $digest }}@{{ . }}{{ end -}}
{{- end -}}

{{/* The ConfigMap that holds reconciler.yaml. */}}
{{- define "pinbot.configMap" -}}
{{- .Values.config.existingConfigMap | default (printf "%s-config" (include "pinbot.fullname" .)) -}}
{{- end -}}

{{/* The ServiceAccount, a subject of every binding. */}}
{{- define "pinbot.subject" -}}
- kind: ServiceAccount
  name: {{ include "pinbot.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The Secret holding the admission webhook's serving certificate. */}}
{{- define "pinbot.admissionSecret" -}}
{{- .Values.admission.certSecret | default (printf "%s-admission-tls" (include "pinbot.fullname" .)) -}}
{{- end }}
