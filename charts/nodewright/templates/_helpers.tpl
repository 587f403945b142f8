{{/* The chart's name, or nameOverride. */}}
{{- define "nodewright.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name
when it contains the chart's name (release "nodewright" gives "nodewright",
the names config/deploy uses), else release-chart. 63 characters at most,
the limit of a DNS label.
*/}}
{{- define "nodewright.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "nodewright.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "nodewright.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodewright.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the release's pods; fixed once installed. */}}
{{- define "nodewright.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodewright.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Metadata lines shared by the release's objects: labels, annotations. */}}
{{- define "nodewright.metadata" -}}
labels:
  {{- include "nodewright.labels" . | nindent 2 }}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "nodewright.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodewright.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository:tag@digest; the tag defaults to appVersion. */}}
{{- define "nodewright.image" -}}
{{- $img := .Values.controller.image }}
{{- $ref := printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- if $img.digest }}
{{- $ref = printf "%s@%s" $ref $img.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{/*
A copy of .Values.affinity in which each pod (anti-)affinity term without a
labelSelector selects this release's pods, as Karpenter's chart does: the
values cannot name the release, so the default anti-affinity leaves it out.
A copy, so that .Values stays as the user gave it.
*/}}
{{- define "nodewright.affinity" -}}
{{- $affinity := deepCopy .Values.affinity }}
{{- $selector := dict "matchLabels" (include "nodewright.selectorLabels" . | fromYaml) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with get $affinity $kind }}
{{- range $term := default list (get . "requiredDuringSchedulingIgnoredDuringExecution") }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" $selector }}
{{- end }}
{{- end }}
{{- range $weighted := default list (get . "preferredDuringSchedulingIgnoredDuringExecution") }}
{{- if not (hasKey $weighted.podAffinityTerm "labelSelector") }}
{{- $_ := set $weighted.podAffinityTerm "labelSelector" $selector }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}

{{/* .Values.topologySpreadConstraints, each with a labelSelector as above. */}}
{{- define "nodewright.topologySpreadConstraints" -}}
{{- $constraints := deepCopy .Values.topologySpreadConstraints }}
{{- $selector := dict "matchLabels" (include "nodewright.selectorLabels" . | fromYaml) }}
{{- range $c := $constraints }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" $selector }}
{{- end }}
{{- end }}
{{- toYaml $constraints }}
{{- end }}

{{/*
One "--flag=value" argument per setting that is set: a value left empty,
null or deleted (a value set to null is deleted) keeps the flag's default, and a false boolean is the default of every
boolean flag here. Values are quoted: an argument is a string, whatever YAML
would make of it.
*/}}
{{- define "nodewright.settingArgs" -}}
{{- $s := .Values.settings }}
{{- $flags := list
  (list "cluster-name" "clusterName")
  (list "cluster-endpoint" "clusterEndpoint")
  (list "cluster-ca-bundle" "clusterCABundle")
  (list "interruption-queue" "interruptionQueue")
  (list "vm-memory-overhead-percent" "vmMemoryOverheadPercent")
  (list "reserved-enis" "reservedENIs")
  (list "batch-max-duration" "batchMaxDuration")
  (list "batch-idle-duration" "batchIdleDuration")
  (list "preference-policy" "preferencePolicy")
  (list "min-values-policy" "minValuesPolicy")
}}
{{- range $f := $flags }}
{{- $v := get $s (index $f 1) }}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) "") }}
- {{ printf "--%s=%s" (index $f 0) (toString $v) | quote }}
{{- end }}
{{- end }}
{{- if eq (toString (get $s "isolatedVPC")) "true" }}
- "--isolated-vpc=true"
{{- end }}
{{- if eq (toString (get (get $s "featureGates" | default dict) "spotToSpotConsolidation")) "true" }}
- "--spot-to-spot-consolidation=true"
{{- end }}
{{- end }}

{{/* Refuses values the controller would refuse at start, at install instead. */}}
{{- define "nodewright.validate" -}}
{{- $provider := .Values.settings.cloudProvider }}
{{- if not (has $provider (list "kwok" "aws")) }}
{{- fail (printf "settings.cloudProvider %q: use kwok or aws" (toString $provider)) }}
{{- end }}
{{- if and (eq $provider "aws") (not (get .Values.settings "clusterName")) }}
{{- fail "settings.clusterName is required with settings.cloudProvider=aws" }}
{{- end }}
{{- range $setting, $allowed := dict "preferencePolicy" (list "Respect" "Ignore") "minValuesPolicy" (list "Strict" "BestEffort") }}
{{- $v := get $.Values.settings $setting }}
{{- if and $v (not (has $v $allowed)) }}
{{- fail (printf "settings.%s %q: use %s" $setting (toString $v) (join " or " $allowed)) }}
{{- end }}
{{- end }}
{{- if not (has (toString .Values.logLevel) (list "debug" "info" "error")) }}
{{- fail (printf "logLevel %q: use debug, info or error" (toString .Values.logLevel)) }}
{{- end }}
{{- end }}
