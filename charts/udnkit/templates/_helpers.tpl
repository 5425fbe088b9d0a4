{{- define "udnkit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "udnkit.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "udnkit.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "udnkit.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "udnkit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "udnkit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- /* The dataplane DaemonSet's pods: not the manager's selector, so the
webhook Service and the PodDisruptionBudget never pick them. */ -}}
{{- define "udnkit.dataplaneSelectorLabels" -}}
app.kubernetes.io/name: {{ include "udnkit.name" . }}-dataplane
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "udnkit.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "udnkit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "udnkit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "udnkit.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "udnkit.webhookService" -}}
{{- printf "%s-webhook" (include "udnkit.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "udnkit.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "udnkit.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* The components that run, as JSON: only admission with profile admission-only; controllers with full and udn-controllers. */ -}}
{{- define "udnkit.controllers" -}}
{{- if eq .Values.profile "admission-only" }}{{ list "admission" | toJson }}{{ else }}{{ .Values.controllers | toJson }}{{ end }}
{{- end }}

{{- define "udnkit.admissionEnabled" -}}
{{- if has "admission" (include "udnkit.controllers" . | fromJsonArray) }}true{{ end }}
{{- end }}

{{- define "udnkit.metricsPortName" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{- define "udnkit.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- /* YAML documents of a generated file, parsed, skipping empty ones. */ -}}
{{- define "udnkit.documents" -}}
{{- $out := list }}
{{- range $doc := regexSplit "(?m)^---\\s*$" . -1 }}
{{- $obj := $doc | fromYaml }}
{{- if and $obj (hasKey $obj "kind") }}{{ $out = append $out $obj }}{{ end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{- /* The Deployment's components: all but the dataplane when a DaemonSet runs it. */ -}}
{{- define "udnkit.deploymentControllers" -}}
{{- $all := include "udnkit.controllers" . | fromJsonArray }}
{{- if eq .Values.dataplane.mode "daemonset" }}{{ without $all "dataplane" | toJson }}{{ else }}{{ $all | toJson }}{{ end }}
{{- end }}

{{- /* The cluster's facts (ovnk.ClusterConfig's flags), alike for the
manager and the dataplane DaemonSet: the dataplane reads the masquerade and
transit subnets, the UDN-enabled services and the MTU among them. */ -}}
{{- define "udnkit.clusterArgs" -}}
- --cluster-subnets={{ join "," .Values.network.clusterSubnets }}
- --service-cidrs={{ join "," .Values.network.serviceCIDRs }}
- --join-subnets={{ join "," .Values.network.joinSubnets }}
- --masquerade-subnets={{ join "," .Values.network.masqueradeSubnets }}
- --transit-subnets={{ join "," .Values.network.transitSubnets }}
{{- with .Values.network.nodeSubnets }}
- --node-subnets={{ join "," . }}
{{- end }}
- --udn-join-subnets={{ join "," .Values.network.udnJoinSubnets }}
- --udn-allowed-default-services={{ join "," .Values.network.udnAllowedDefaultServices }}
- --mtu={{ int .Values.network.mtu }}
- --preconfigured-udn-addresses-enable={{ .Values.features.preconfiguredUDNAddresses }}
{{- end }}

{{- /* The dataplane's own arguments, for whichever component runs it (the
Deployment or the DaemonSet): its OVN databases and dataplane.* options. */ -}}
{{- define "udnkit.dataplaneArgs" -}}
- --adopt-legacy-layer2={{ .Values.dataplane.adoptLegacyLayer2 }}
- --layer3-subnet-policies={{ .Values.dataplane.layer3SubnetPolicies }}
- --gateway-mode={{ .Values.dataplane.gatewayMode }}
- --external-port-range={{ .Values.dataplane.externalPortRange }}
- --enable-egress-ip={{ .Values.dataplane.enableEgressIP }}
- --enable-multi-networkpolicy={{ .Values.dataplane.enableMultiNetworkPolicy }}
- --dataplane-workers={{ int .Values.dataplane.workers }}
- --ovn-nb-address={{ required "ovn.nbAddress is required when the dataplane controller runs" .Values.ovn.nbAddress }}
- --ovn-sb-address={{ required "ovn.sbAddress is required when the dataplane controller runs" .Values.ovn.sbAddress }}
- --ovn-connect-timeout={{ .Values.ovn.connectTimeout }}
{{- if .Values.ovn.tls.secretName }}
- --ovn-client-cert=/etc/udnkit/ovn-tls/tls.crt
- --ovn-client-key=/etc/udnkit/ovn-tls/tls.key
- --ovn-ca-cert=/etc/udnkit/ovn-tls/ca.crt
{{- with .Values.ovn.tls.nbServerName }}
- --ovn-nb-server-name={{ . }}
{{- end }}
{{- with .Values.ovn.tls.sbServerName }}
- --ovn-sb-server-name={{ . }}
{{- end }}
{{- else if or (contains "ssl:" .Values.ovn.nbAddress) (contains "ssl:" .Values.ovn.sbAddress) }}
{{- fail "ovn.tls.secretName is required when ovn.nbAddress or ovn.sbAddress uses ssl:" }}
{{- end }}
{{- end }}
