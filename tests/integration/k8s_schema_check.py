#!/usr/bin/python3
"""Checks Kubernetes manifests against the API's own schema, offline.

usage: k8s_schema_check.py FILE.yaml...

Every document of a built-in kind is walked against the generated models of
the Kubernetes Python client (Debian's python3-kubernetes): each field must
be one the API knows at that place, of the right type, and every field the
API requires must be there. So a misspelt or misplaced field (`volumeMount`,
`readinessProbe` under the pod instead of the container), which kubectl
would accept into a file and the API server would refuse or drop, fails
here. Documents of custom resources (cert-manager's) are listed but not
checked: their schemas are not packaged. Prints one line per problem and
exits 1 if there is any.
"""

import re
import sys

import yaml
from kubernetes import client

# (apiVersion, kind) of the custom resources deploy/k8s uses, whose CRDs
# are installed with cert-manager rather than known to the client.
CUSTOM = {("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate"),
          ("kustomize.config.k8s.io/v1beta1", "Kustomization")}

# Fields newer than the packaged client's API (Debian 12 has 22.6, the
# Kubernetes 1.22 API), by model: each with its type in the API that has it.
NEWER = {"V1PodSpec": {"hostUsers": "bool"}}

PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float),
              "quantity": (str, int, float)}


def model_of(api_version, kind):
    """The client's model class of a built-in kind, or None."""
    version = api_version.split("/")[-1]
    return getattr(client.models, version.capitalize() + kind, None)


def check(value, type_name, path, problems):
    """Walks `value` against the client's type `type_name`."""
    if value is None:
        return
    if type_name in PRIMITIVES:
        if not isinstance(value, PRIMITIVES[type_name]) or (
                type_name != "bool" and isinstance(value, bool)):
            problems.append(f"{path}: {value!r} is not a {type_name}")
        return
    if type_name in ("object", "datetime", "date"):
        return  # IntOrString, Quantity and free-form objects: the server decides
    match = re.fullmatch(r"list\[(.+)\]", type_name)
    if match:
        if not isinstance(value, list):
            problems.append(f"{path}: a list was expected")
            return
        for i, item in enumerate(value):
            check(item, match.group(1), f"{path}[{i}]", problems)
        return
    match = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if match:
        if not isinstance(value, dict):
            problems.append(f"{path}: a map was expected")
            return
        for key, item in value.items():
            check(item, match.group(1), f"{path}.{key}", problems)
        return
    model = getattr(client.models, type_name)
    if not isinstance(value, dict):
        problems.append(f"{path}: an object ({type_name}) was expected")
        return
    by_json = {json: attribute for attribute, json in model.attribute_map.items()}
    newer = NEWER.get(type_name, {})
    for key, item in value.items():
        if key in newer and key not in by_json:
            check(item, newer[key], f"{path}.{key}", problems)
            continue
        if key not in by_json:
            known = ", ".join(sorted(by_json))
            problems.append(f"{path}.{key}: no such field of {type_name} (known: {known})")
            continue
        field_type = model.openapi_types[by_json[key]]
        if model is client.V1ResourceRequirements:  # quantities: "1", 1, "500m"
            field_type = field_type.replace("str)", "quantity)")
        check(item, field_type, f"{path}.{key}", problems)
    # The models refuse a missing required field, or a value outside an
    # enumeration, when they are built.
    try:
        model(**{attribute: value.get(json) for attribute, json in model.attribute_map.items()})
    except ValueError as error:
        problems.append(f"{path}: {error}")


def main(paths):
    problems = []
    checked = 0
    for path in paths:
        with open(path, encoding="utf-8") as file:
            for number, document in enumerate(yaml.safe_load_all(file)):
                if not isinstance(document, dict):
                    continue
                where = f"{path}#{number}"
                api_version, kind = document.get("apiVersion"), document.get("kind")
                if (api_version, kind) in CUSTOM:
                    print(f"{where}: {kind} ({api_version}) is a custom resource: not checked")
                    continue
                model = model_of(str(api_version), str(kind))
                if model is None:
                    problems.append(f"{where}: unknown kind {kind} of {api_version}")
                    continue
                check(document, model.__name__, f"{where} {kind}", problems)
                checked += 1
    for problem in problems:
        print(problem)
    print(f"{checked} documents checked against Kubernetes "
          f"{client.__version__}'s schema, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
