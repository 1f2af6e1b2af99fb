# Expands the schema placeholders of a CRD (up.sh: yq . crd.yaml | jq --slurpfile api
# openapi-v2.json -f crd-schema.jq) into structural schemas taken from the running API
# server's own OpenAPI v2 document:
#   {"x-trainyard-openapi": "io.k8s.api.core.v1.PodTemplateSpec"}
#   {"x-trainyard-openapi": "io.k8s.api.core.v1.PodSpec", "x-trainyard-pick": [fields...],
#    "x-trainyard-container-pick": [fields...]}      (a PodSpecPatch: a subset of the fields)
# What a structural schema needs and OpenAPI v2 does not give: every $ref inlined; IntOrString
# and Quantity as x-kubernetes-int-or-string; an embedded ObjectMeta as the fields a template
# may carry (name, namespace, labels, annotations, finalizers), as controller-gen writes it.
# Descriptions and vendor extensions are dropped (size: etcd takes 1.5 MiB per object).
def defs: $api[0].definitions;
def formats: ["int32", "int64", "float", "double", "byte", "date-time", "date", "uuid"];
def intorstring: {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]};
def strmap: {"type": "object", "additionalProperties": {"type": "string"}};
def refname: sub("^#/definitions/"; "");
def expand($name):
  def conv:
    if has("$ref") then expand(.["$ref"] | refname)
    else
      (if has("type") then {"type": .type}
       elif has("properties") then {"type": "object"}
       else {"type": "object", "x-kubernetes-preserve-unknown-fields": true} end)
      + (if (.format // "") as $f | formats | index($f) then {"format": .format} else {} end)
      + (if has("enum") then {"enum": .enum} else {} end)
      + (if has("required") then {"required": .required} else {} end)
      + (if has("properties") then {"properties": (.properties | map_values(conv))} else {} end)
      + (if has("items") then {"items": (.items | conv)} else {} end)
      + (if (.additionalProperties | type) == "object" then {"additionalProperties": (.additionalProperties | conv)} else {} end)
    end;
  if $name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString" then intorstring
  elif $name == "io.k8s.apimachinery.pkg.api.resource.Quantity" then intorstring
  elif $name == "io.k8s.apimachinery.pkg.apis.meta.v1.Time" or $name == "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
  then {"type": "string", "format": "date-time"}
  elif $name == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
  then {"type": "object", "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
        "labels": strmap, "annotations": strmap, "finalizers": {"type": "array", "items": {"type": "string"}}}}
  elif $name == "io.k8s.apimachinery.pkg.runtime.RawExtension"
  then {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
  else (defs[$name] // error("no definition \($name) in /openapi/v2")) | conv
  end;
def pick($fields): .properties |= with_entries(select(.key as $k | $fields | index($k)))
  | if has("required") then .required |= map(select(. as $k | $fields | index($k))) else . end;
def placeholder:
  . as $ph
  | expand($ph["x-trainyard-openapi"])
  | if $ph | has("x-trainyard-pick") then
      pick($ph["x-trainyard-pick"]) | del(.required) # a patch: every field optional
      | if $ph["x-trainyard-container-pick"] == null then .
        else reduce ("containers", "initContainers") as $c (.;
          if .properties[$c] then
            .properties[$c].items |= (pick($ph["x-trainyard-container-pick"]) | .required = ["name"])
          else . end)
        end
    else . end;
walk(if type == "object" and has("x-trainyard-openapi") then placeholder else . end)
