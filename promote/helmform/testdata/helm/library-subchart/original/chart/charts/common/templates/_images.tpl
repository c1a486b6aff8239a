{{/* The image of a values mapping {registry, repository, tag, digest}. */}}
{{- define "common.image" -}}
{{- $ref := printf "%s/%s" .registry .repository -}}
{{- if .digest -}}{{ printf "%s@%s" $ref .digest }}{{- else -}}{{ printf "%s:%s" $ref (toString .tag) }}{{- end -}}
{{- end -}}
