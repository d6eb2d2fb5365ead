"""The deployment check: render every overlay of deploy/kubernetes with kustomize, validate what
it renders against the Kubernetes schemas (kubernetes-validate, strict: unknown fields are
errors) and the Gateway API schemas vendored in deploy/kubernetes/schemas, then check the rules
the project holds its manifests to, and that the compose stack's gateway (Caddyfile) routes the
same paths as Kubernetes. Prints one line per problem; exits 1 when there is any.

usage: check_manifests.py KUSTOMIZE_BINARY
"""

import json
import pathlib
import re
import subprocess
import sys

import jsonschema
import kubernetes_validate
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = ["dev", "prod"]
# The oldest Kubernetes release the manifests must be valid for.
KUBERNETES_VERSION = "1.33.0"
# Custom resources, by (apiVersion, kind): their schema file in deploy/kubernetes/schemas.
VENDORED = {
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): "httproute-gateway.networking.k8s.io-v1.json",
    ("gateway.networking.k8s.io/v1", "Gateway"): "gateway-gateway.networking.k8s.io-v1.json",
}
# Paths that stay inside the cluster: no route may reach them.
INTERNAL_PATHS = ["/metrics", "/healthz", "/readyz"]


def render(kustomize, overlay):
    out = subprocess.run(
        [kustomize, "build", str(KUBERNETES / "overlays" / overlay)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def name_of(doc):
    return f"{doc['kind']}/{doc['metadata']['name']}"


def schema_problems(doc):
    key = (doc["apiVersion"], doc["kind"])
    if key in VENDORED:
        schema = json.loads((KUBERNETES / "schemas" / VENDORED[key]).read_text())
        validator = jsonschema.Draft7Validator(schema)
        return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                for e in validator.iter_errors(doc)]
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {doc['apiVersion']} {doc['kind']}"]
    return []


def pod_spec(doc):
    if doc["kind"] in ("Deployment", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def probe_path(container, probe):
    return ((container.get(probe) or {}).get("httpGet") or {}).get("path")


def workload_problems(doc):
    spec = pod_spec(doc)
    if spec is None:
        return []
    problems = []
    pod_security = spec.get("securityContext") or {}
    if pod_security.get("runAsNonRoot") is not True:
        problems.append("the pod does not set runAsNonRoot: true")
    for c in spec["containers"]:
        security = c.get("securityContext") or {}
        if security.get("readOnlyRootFilesystem") is not True:
            problems.append(f"container {c['name']}: the root filesystem is not read-only")
        if security.get("allowPrivilegeEscalation") is not False:
            problems.append(f"container {c['name']}: privilege escalation is not off")
        image = c["image"]
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        if not tag or tag == "latest":
            problems.append(f"container {c['name']}: image {image} has no fixed tag")
        if doc["kind"] == "Deployment":
            for probe, path in [("livenessProbe", "/healthz"), ("startupProbe", "/healthz"),
                                ("readinessProbe", "/readyz")]:
                if probe_path(c, probe) != path:
                    problems.append(f"container {c['name']}: {probe} is not GET {path}")
    return problems


def secret_refs(docs):
    """The (Secret, key) pairs the workloads read: what an operator must create."""
    refs = set()
    for doc in docs:
        spec = pod_spec(doc)
        for c in (spec or {}).get("containers", []):
            for env in c.get("env", []):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    refs.add((ref["name"], ref["key"]))
    return refs


def route_paths(docs):
    """(route, host, path, service, port) for every HTTPRoute and Ingress rule."""
    out = []
    for doc in docs:
        if doc["kind"] == "HTTPRoute":
            for rule in doc["spec"].get("rules", []):
                for backend in rule.get("backendRefs", []):
                    for match in rule.get("matches", []):
                        for host in doc["spec"].get("hostnames", []):
                            out.append((name_of(doc), host, match["path"]["value"],
                                        backend["name"], backend["port"]))
        if doc["kind"] == "Ingress":
            for rule in doc["spec"]["rules"]:
                for p in rule["http"]["paths"]:
                    service = p["backend"]["service"]
                    out.append((name_of(doc), rule["host"], p["path"], service["name"],
                                service["port"].get("name") or service["port"].get("number")))
    return out


def routing_problems(docs):
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    problems = []
    routes = route_paths(docs)
    if not routes:
        problems.append("no HTTPRoute or Ingress routes to the APIs")
    for route, host, path, service, port in routes:
        target = services.get(service)
        if target is None:
            problems.append(f"{route}: {host}{path} goes to an unknown Service {service}")
            continue
        ports = {p["port"] for p in target["spec"]["ports"]} | {
            p.get("name") for p in target["spec"]["ports"]}
        if port not in ports:
            problems.append(f"{route}: {host}{path} goes to port {port} that {service} lacks")
        for internal in INTERNAL_PATHS:
            if internal.startswith(path.rstrip("/") + "/") or internal == path or path == "/":
                problems.append(f"{route}: {host}{path} exposes {internal}")
    hosts = {}
    for _, host, _, service, _ in routes:
        hosts.setdefault(host, set()).add(service)
    for host, served in hosts.items():
        if len(served) > 1:
            problems.append(f"host {host} is routed to several APIs: {sorted(served)}")
    return problems


def caddy_paths():
    """{API service: set of paths} routed by the compose gateway (`/x/*` counted as `/x`)."""
    text = (ROOT / "deploy" / "compose" / "Caddyfile").read_text()
    out = {}
    for block in re.finditer(r"@api path ([^\n]+)\n\s*handle @api \{\s*reverse_proxy ([\w-]+):", text):
        paths = {p.removesuffix("/*") for p in block.group(1).split()}
        out[block.group(2)] = paths
    return out


# The API documents, and the pages no document lists, whose paths the routes must carry.
DOCUMENTS = {"memory-api": "memory-api.openapi.json", "mail-api": "mail-api.openapi.json"}
PAGES = {"memory-api": ["/dashboard"], "mail-api": ["/dashboard"]}


def routed(path, prefixes):
    """Whether a path is carried by one of the routes' prefixes (whole segments) or exact paths."""
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def unrouted_problems(docs):
    """Every public path of each API's committed document (and its pages) has a route: a form
    link or an OAuth callback the gateway drops is a feature the deployment does not have."""
    kubernetes = {}
    for _, _, path, service, _ in route_paths(docs):
        kubernetes.setdefault(service, set()).add(path)
    problems = []
    for service, document in DOCUMENTS.items():
        paths = json.loads((ROOT / "proto-docs" / document).read_text())["paths"]
        public = [p for p in paths if not routed(p, INTERNAL_PATHS)] + PAGES[service]
        for path in sorted(p for p in public if not routed(p, kubernetes.get(service, ()))):
            problems.append(f"{service}: {path} is documented but no route carries it")
    return problems


def compose_problems(docs):
    """The compose gateway must route exactly what the Kubernetes routes do, per API."""
    kubernetes = {}
    for _, _, path, service, _ in route_paths(docs):
        kubernetes.setdefault(service, set()).add(path)
    compose = caddy_paths()
    problems = []
    for service in sorted(set(kubernetes) | set(compose)):
        k, c = kubernetes.get(service, set()), compose.get(service, set())
        if k != c:
            problems.append(f"compose gateway and Kubernetes differ for {service}: "
                            f"only in Kubernetes {sorted(k - c)}, only in Caddyfile {sorted(c - k)}")
    return problems


def check(kustomize, overlay):
    docs = render(kustomize, overlay)
    problems = []
    for doc in docs:
        for problem in schema_problems(doc) + workload_problems(doc):
            problems.append(f"{overlay}: {name_of(doc)}: {problem}")
        if doc["kind"] == "Secret":
            problems.append(f"{overlay}: {name_of(doc)}: a Secret is committed")
    problems += [f"{overlay}: {p}" for p in
                 routing_problems(docs) + compose_problems(docs) + unrouted_problems(docs)]
    kinds = sorted({doc["kind"] for doc in docs})
    print(f"{overlay}: {len(docs)} objects ({', '.join(kinds)})")
    for host in sorted({r[1] for r in route_paths(docs)}):
        print(f"{overlay}:   {host}: " + " ".join(
            sorted({r[2] for r in route_paths(docs) if r[1] == host})))
    secrets = sorted(secret_refs(docs))
    print(f"{overlay}:   Secrets read: " + ", ".join(f"{n}/{k}" for n, k in secrets))
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    problems = []
    for overlay in OVERLAYS:
        problems += check(sys.argv[1], overlay)
    for problem in problems:
        print(f"problem: {problem}")
    print(f"deploy check: {len(problems)} problem(s) in {len(OVERLAYS)} overlays")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
