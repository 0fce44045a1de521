{{/* Labels every object carries. */}}
{{- define "jupyter-pai.labels" -}}
app.kubernetes.io/name: jupyter-pai
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The flavour, checked: a typo would otherwise render no virtual clusters at all. */}}
{{- define "jupyter-pai.flavor" -}}
{{- $flavors := list "native" "volcano" "kueue" "hived" -}}
{{- if not (has .Values.flavor $flavors) -}}
{{- fail (printf "flavor: must be one of native, volcano, kueue, hived, not %q" (toString .Values.flavor)) -}}
{{- end -}}
{{- .Values.flavor -}}
{{- end -}}

{{/* The flavour's rules from files/permissions.yaml: {namespaced: [...], cluster: [...]}. */}}
{{- define "jupyter-pai.permissions" -}}
{{- $all := .Files.Get "files/permissions.yaml" | fromYaml -}}
{{- index $all (include "jupyter-pai.flavor" .) | toYaml -}}
{{- end -}}

{{/* A VC's settings, checked: {gpus: N >= 0, borrow: bool, lend: bool}. */}}
{{- define "jupyter-pai.vc" -}}
{{- $name := index . 0 -}}
{{- $vc := index . 1 -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "virtualClusters.%s: a VC name must be a DNS label (lower-case letters, digits, '-')" $name) -}}
{{- end -}}
{{- if not (kindIs "map" $vc) -}}
{{- fail (printf "virtualClusters.%s: must be a map {gpus, borrow, lend}" $name) -}}
{{- end -}}
{{- $gpus := $vc.gpus -}}
{{- if or (not (or (kindIs "float64" $gpus) (kindIs "int64" $gpus) (kindIs "int" $gpus))) (lt (float64 $gpus) 0.0) (ne (float64 $gpus) (float64 (int64 $gpus))) -}}
{{- fail (printf "virtualClusters.%s.gpus: must be a whole number of GPUs >= 0" $name) -}}
{{- end -}}
{{- range $key := list "borrow" "lend" -}}
{{- if and (hasKey $vc $key) (not (kindIs "bool" (index $vc $key))) -}}
{{- fail (printf "virtualClusters.%s.%s: must be true or false" $name $key) -}}
{{- end -}}
{{- end -}}
{{- dict "gpus" (int64 $gpus) "borrow" (ne (toString $vc.borrow) "false") "lend" (ne (toString $vc.lend) "false") | toJson -}}
{{- end -}}

{{/* The hub's service account as the API server names it. */}}
{{- define "jupyter-pai.hubUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Values.hub.serviceAccount.namespace .Values.hub.serviceAccount.name -}}
{{- end -}}
