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

{{/* The GPU types, checked: gpuTypes {name: {product} or {products: [..]}} as JSON
{name: [{product, flavor}]}, each product with the Kueue ResourceFlavor that holds its quota
(a flavor's nodeLabels take one value per label: one flavor per product). */}}
{{- define "jupyter-pai.gpuTypes" -}}
{{- $types := .Values.gpuTypes | default dict -}}
{{- if not (kindIs "map" $types) -}}
{{- fail "gpuTypes: must be a map {type: {product: <nvidia.com/gpu.product>}}" -}}
{{- end -}}
{{- $prefix := .Values.kueue.resourceFlavor -}}
{{- $out := dict -}}
{{- $taken := dict $prefix "the untyped flavor (kueue.resourceFlavor)" -}}
{{- range $name, $type := $types -}}
{{- if not (regexMatch "^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$" $name) -}}
{{- fail (printf "gpuTypes.%s: a type name is letters, digits, '.', '_', '-' (as users write it in gpus: \"%s:2\")" $name $name) -}}
{{- end -}}
{{- if not (kindIs "map" $type) -}}
{{- fail (printf "gpuTypes.%s: must be a map {product: <nvidia.com/gpu.product>} or {products: [..]}" $name) -}}
{{- end -}}
{{- if eq (hasKey $type "product") (hasKey $type "products") -}}
{{- fail (printf "gpuTypes.%s: give exactly one of product (one nvidia.com/gpu.product value) or products (a list of them)" $name) -}}
{{- end -}}
{{- $products := list -}}
{{- if hasKey $type "product" -}}
{{- $products = list $type.product -}}
{{- else if kindIs "slice" $type.products -}}
{{- $products = $type.products -}}
{{- end -}}
{{- if not $products -}}
{{- fail (printf "gpuTypes.%s.products: must be a non-empty list of nvidia.com/gpu.product values" $name) -}}
{{- end -}}
{{- $entries := list -}}
{{- range $product := $products -}}
{{- if not (and (kindIs "string" $product) (regexMatch "^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$" $product)) -}}
{{- fail (printf "gpuTypes.%s: product %v is not a node label value (GPU Feature Discovery's nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3)" $name $product) -}}
{{- end -}}
{{- $flavor := printf "%s-%s" $prefix ($name | lower | replace "_" "-") -}}
{{- if gt (len $products) 1 -}}
{{- $flavor = printf "%s-%s" $flavor ($product | lower | replace "_" "-") -}}
{{- end -}}
{{- if hasKey $taken $flavor -}}
{{- fail (printf "gpuTypes.%s: its Kueue ResourceFlavor %s is also %s's (names differ in case only?)" $name $flavor (index $taken $flavor)) -}}
{{- end -}}
{{- $_ := set $taken $flavor (printf "gpuTypes.%s" $name) -}}
{{- $entries = append $entries (dict "product" $product "flavor" $flavor) -}}
{{- end -}}
{{- $_ := set $out $name $entries -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/* A whole number >= 0 (YAML's 8 or 8.0; not "8"). */}}
{{- define "jupyter-pai.isCount" -}}
{{- if and (or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .)) (ge (float64 .) 0.0) (eq (float64 .) (float64 (int64 .))) -}}true{{- end -}}
{{- end -}}

{{/* A VC's settings, checked: {gpus: N >= 0, borrow: bool, lend: bool, types}. With a
third argument, the checked gpuTypes: the VC's gpuTypes {type: N or {product: N}} become
types {type: {product: N}} ("" for a type of several products given one number), and
gpus, when given, must be their sum. */}}
{{- define "jupyter-pai.vc" -}}
{{- $name := index . 0 -}}
{{- $vc := index . 1 -}}
{{- $known := dict -}}
{{- if gt (len .) 2 -}}{{- $known = index . 2 -}}{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "virtualClusters.%s: a VC name must be a DNS label (lower-case letters, digits, '-')" $name) -}}
{{- end -}}
{{- if not (kindIs "map" $vc) -}}
{{- fail (printf "virtualClusters.%s: must be a map {gpus, borrow, lend}" $name) -}}
{{- end -}}
{{- $types := dict -}}
{{- $sum := 0 -}}
{{- if hasKey $vc "gpuTypes" -}}
{{- if not (kindIs "map" $vc.gpuTypes) -}}
{{- fail (printf "virtualClusters.%s.gpuTypes: must be a map {type: GPUs}, the types from gpuTypes" $name) -}}
{{- end -}}
{{- range $type, $count := $vc.gpuTypes -}}
{{- if not (hasKey $known $type) -}}
{{- fail (printf "virtualClusters.%s.gpuTypes.%s: not a type in gpuTypes (%s); add it there with its nvidia.com/gpu.product" $name $type (keys $known | sortAlpha | join ", " | default "none")) -}}
{{- end -}}
{{- $products := list -}}
{{- range $entry := index $known $type -}}{{- $products = append $products $entry.product -}}{{- end -}}
{{- $split := dict -}}
{{- if kindIs "map" $count -}}
{{- range $product, $n := $count -}}
{{- if not (has $product $products) -}}
{{- fail (printf "virtualClusters.%s.gpuTypes.%s.%s: not a product of gpuTypes.%s (%s)" $name $type $product $type (join ", " $products)) -}}
{{- end -}}
{{- if not (include "jupyter-pai.isCount" $n) -}}
{{- fail (printf "virtualClusters.%s.gpuTypes.%s.%s: must be a whole number of GPUs >= 0" $name $type $product) -}}
{{- end -}}
{{- $_ := set $split $product (int64 $n) -}}
{{- $sum = add $sum (int64 $n) -}}
{{- end -}}
{{- else if include "jupyter-pai.isCount" $count -}}
{{- $_ := set $split (ternary (first $products) "" (eq (len $products) 1)) (int64 $count) -}}
{{- $sum = add $sum (int64 $count) -}}
{{- else -}}
{{- fail (printf "virtualClusters.%s.gpuTypes.%s: must be a whole number of GPUs >= 0 (or {product: GPUs} for a type of several products)" $name $type) -}}
{{- end -}}
{{- $_ := set $types $type $split -}}
{{- end -}}
{{- end -}}
{{- $gpus := $vc.gpus -}}
{{- if and $types (kindIs "invalid" $vc.gpus) -}}
{{- $gpus = $sum -}}
{{- end -}}
{{- if not (include "jupyter-pai.isCount" $gpus) -}}
{{- fail (printf "virtualClusters.%s.gpus: must be a whole number of GPUs >= 0" $name) -}}
{{- end -}}
{{- if and $types (ne (int64 $gpus) (int64 $sum)) -}}
{{- fail (printf "virtualClusters.%s.gpus: %v is not the sum of its gpuTypes (%v); give the sum or leave gpus out" $name $gpus $sum) -}}
{{- end -}}
{{- range $key := list "borrow" "lend" -}}
{{- if and (hasKey $vc $key) (not (kindIs "bool" (index $vc $key))) -}}
{{- fail (printf "virtualClusters.%s.%s: must be true or false" $name $key) -}}
{{- end -}}
{{- end -}}
{{- dict "gpus" (int64 $gpus) "borrow" (ne (toString $vc.borrow) "false") "lend" (ne (toString $vc.lend) "false") "types" $types | toJson -}}
{{- end -}}

{{/* The hub's service account as the API server names it. */}}
{{- define "jupyter-pai.hubUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Values.hub.serviceAccount.namespace .Values.hub.serviceAccount.name -}}
{{- end -}}

{{/* CEL: whether the resource name k is a GPU's (userNamespaces.gpuResourcePrefixes). */}}
{{- define "jupyter-pai.gpuKeyCel" -}}
{{- $prefixes := .Values.userNamespaces.gpuResourcePrefixes -}}
{{- if not $prefixes }}{{ fail "userNamespaces.gpuResourcePrefixes: name at least one, e.g. nvidia.com/" }}{{ end -}}
{{- $parts := list -}}
{{- range $p := $prefixes }}{{ $parts = append $parts (printf "k.startsWith(%s)" ($p | toJson)) }}{{ end -}}
({{ join " || " $parts }})
{{- end -}}

{{/* CEL: whether the pod spec at (list SPEC KEY) asks for a GPU in a container or an init
container: KEY is jupyter-pai.gpuKeyCel. */}}
{{- define "jupyter-pai.gpuSpecCel" -}}
{{- $s := index . 0 }}{{ $key := index . 1 -}}
{{- $c := printf "has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, %s)) || (has(c.resources.requests) && c.resources.requests.exists(k, %s)))" $key $key -}}
((has({{ $s }}.containers) && {{ $s }}.containers.exists(c, {{ $c }})) || (has({{ $s }}.initContainers) && {{ $s }}.initContainers.exists(c, {{ $c }})))
{{- end -}}
