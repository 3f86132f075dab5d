{{/* Chart name, truncated to fit a label. */}}
{{- define "skills-sidecar.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name of the release's objects. */}}
{{- define "skills-sidecar.fullname" -}}
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

{{/* Labels of every object, without the component. */}}
{{- define "skills-sidecar.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "skills-sidecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of the injector's objects. */}}
{{- define "skills-sidecar.labels" -}}
{{ include "skills-sidecar.commonLabels" . }}
app.kubernetes.io/component: injector
{{- end -}}

{{- define "skills-sidecar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skills-sidecar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: injector
{{- end -}}

{{- define "skills-sidecar.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "skills-sidecar.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The image of the injector and of the sidecar it injects: image.tag, or the
chart's appVersion (never latest); a digest (sha256:...) is joined with "@".
*/}}
{{- define "skills-sidecar.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if hasPrefix "sha256:" $tag -}}
{{- printf "%s@%s" .Values.image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
The webhook's name: the release's, so that two releases' webhooks, the API
server's messages about them and the alerts on its metrics are told apart.
*/}}
{{- define "skills-sidecar.webhookName" -}}
{{- printf "%s.inject.skills-sidecar.io" (include "skills-sidecar.fullname" .) -}}
{{- end -}}

{{/* The Secret holding the injector's serving certificate. */}}
{{- define "skills-sidecar.tlsSecret" -}}
{{- printf "%s-tls" (include "skills-sidecar.fullname" .) -}}
{{- end -}}

{{/* The injector Service's DNS name, the certificate's subject. */}}
{{- define "skills-sidecar.serviceDNS" -}}
{{- printf "%s.%s.svc" (include "skills-sidecar.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/*
Where the serving certificate comes from: "byo" (tls.existingSecret and
tls.caBundle), "certManager", or "self" (the injector manages it).
*/}}
{{- define "skills-sidecar.tlsMode" -}}
{{- if .Values.tls.existingSecret -}}byo
{{- else if .Values.tls.certManager.enabled -}}certManager
{{- else -}}self
{{- end -}}
{{- end -}}

{{/* The Secret the injector reads its certificate from. */}}
{{- define "skills-sidecar.servingSecret" -}}
{{- if eq (include "skills-sidecar.tlsMode" .) "byo" -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- include "skills-sidecar.tlsSecret" . -}}
{{- end -}}
{{- end -}}

{{/*
The names the serving certificate carries: the host of webhook.url, or the
Service's names.
*/}}
{{- define "skills-sidecar.certHosts" -}}
{{- if .Values.webhook.url -}}
{{- (urlParse .Values.webhook.url).hostname -}}
{{- else -}}
{{- $svc := include "skills-sidecar.fullname" . -}}
{{- list $svc (printf "%s.%s" $svc .Release.Namespace) (include "skills-sidecar.serviceDNS" .) (printf "%s.cluster.local" (include "skills-sidecar.serviceDNS" .)) | join "," -}}
{{- end -}}
{{- end -}}

{{/*
The demo's namespace: never the release's, which the webhook never sees.
*/}}
{{- define "skills-sidecar.demoNamespace" -}}
{{- default (printf "%s-demo" .Release.Namespace) .Values.demo.namespace -}}
{{- end -}}
