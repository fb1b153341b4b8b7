#!/usr/bin/env python3
"""Offline checks of docker-compose.yml and deployments/ (run by
scripts/lint-deploy.sh, i.e. `make lint`). No Docker engine is needed.

Checks, each failure printed as "lint-deploy: <where>: <what>":
  * the compose file parses; every depends_on names a service, with a valid
    condition (service_healthy needs a healthcheck on the target);
  * every build context and Dockerfile exists; SERVICE names services/<S>
    holding a main package; the Dockerfile copies go.work and every module
    of go.work, ends on a non-root user, and its Go image is at least the
    go.work go version;
  * every environment variable a Go service is given is read by its Config
    (env:"..." tags of services/<S>/*.go, plus service.Common when embedded,
    plus LOG_LEVEL/LOG_FORMAT when it runs under service.Main), and every
    required variable without a default is set;
  * every published port of a Go service is its HTTP_ADDR or ADMIN_ADDR port;
  * every Go service has a healthcheck probing /healthz or /readyz on its
    admin port; infrastructure services have a healthcheck;
  * kafka-init's KAFKA_TOPICS is exactly pkg/events AllTopics;
  * deployments/prometheus/prometheus.yml scrapes every Go service on its
    admin port; files the compose file mounts from the repo exist;
  * every boxoffice_* / http_* metric the Grafana dashboard queries is
    defined in the Go code (non-test files);
  * with --build DIR: each service binary (and /healthcheck) is built with
    the Dockerfile's own `go build` command lines, from the workspace root.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.exit("lint-deploy: python3 module yaml (PyYAML) is missing: apt-get install python3-yaml")

errors = []


def fail(where, msg):
    errors.append(f"{where}: {msg}")


# ---------------------------------------------------------------- helpers

INTERP = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(s, env):
    """Compose-style interpolation with the given environment (defaults used
    when unset): ${X}, ${X:-d}, ${X-d}, ${X:?e}, $X and $$."""
    if not isinstance(s, str):
        return s

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        val = env.get(name)
        if op in (":-", "-"):
            if val is None or (op == ":-" and val == ""):
                return arg
        if op in (":?", "?") and not val:
            return ""
        return val or ""

    return INTERP.sub(sub, s)


def env_dict(env):
    if env is None:
        return {}
    if isinstance(env, list):
        out = {}
        for item in env:
            k, _, v = str(item).partition("=")
            out[k] = v
        return out
    return {str(k): ("" if v is None else str(v)) for k, v in env.items()}


def port_of(addr):
    addr = str(addr)
    return addr.rsplit(":", 1)[-1] if ":" in addr else addr


def container_ports(ports):
    """Container ports of a compose ports list (short or long syntax)."""
    out = []
    for p in ports or []:
        if isinstance(p, dict):
            out.append(str(p.get("target")))
            continue
        s = str(p).split("/")[0]
        out.append(s.rsplit(":", 1)[-1])
    return out


TAG = re.compile(r'`([^`]*\benv:"[^"]+"[^`]*)`')
KV = re.compile(r'(\w+):"((?:[^"\\]|\\.)*)"')


def env_tags(files):
    """{NAME: {"default":..., "required":bool, "field":..., "file":...}} from struct tags."""
    out = {}
    for f in files:
        src = open(f, encoding="utf-8").read()
        for line in src.splitlines():
            if line.lstrip().startswith("//"):
                continue
            m = TAG.search(line)
            if not m:
                continue
            kv = dict(KV.findall(m.group(1)))
            name = kv["env"]
            out[name] = {
                "default": kv.get("default"),
                "required": kv.get("required") == "true",
                "secret": kv.get("secret") == "true",
                "field": line.strip().split()[0],
                "file": f,
            }
    return out


def go_files(d):
    return sorted(f for f in glob.glob(os.path.join(d, "*.go")) if not f.endswith("_test.go"))


def is_main_package(d):
    for f in go_files(d):
        if re.search(r"^package main\b", open(f, encoding="utf-8").read(), re.M):
            return True
    return False


# ---------------------------------------------------------------- the Go side


class Repo:
    def __init__(self, root):
        self.root = root
        cfg = os.path.join(root, "pkg/service/config.go")
        self.common = env_tags([cfg])
        src = open(cfg, encoding="utf-8").read()
        m = re.search(r"adminPorts = map\[string\]string\{(.*?)\n\}", src, re.S)
        self.admin_ports = dict(re.findall(r'"([^"]+)":\s*"([^"]*)"', m.group(1))) if m else {}
        if not self.admin_ports:
            fail("pkg/service/config.go", "cannot find the adminPorts table (DefaultAdminAddr)")

    def service_env(self, svc):
        """Env variables services/<svc> reads: its own tags, Common's when
        it embeds service.Common, LOG_LEVEL/LOG_FORMAT under service.Main."""
        files = go_files(os.path.join(self.root, "services", svc))
        tags = env_tags(files)
        src = "\n".join(open(f, encoding="utf-8").read() for f in files)
        if re.search(r"^\s*service\.Common\s*$", src, re.M):
            for k, v in self.common.items():
                tags.setdefault(k, v)
        if "service.Main(" in src:
            for k, d in (("LOG_LEVEL", "info"), ("LOG_FORMAT", "json")):
                tags.setdefault(k, {"default": d, "required": False, "secret": False, "field": "(service.Main)", "file": "pkg/service/run.go"})
        if "ADMIN_ADDR" in tags and "DefaultAdminAddr(name)" in src and svc in self.admin_ports:
            tags["ADMIN_ADDR"] = dict(tags["ADMIN_ADDR"], default=self.admin_ports[svc], required=False)
        return tags

    def all_topics(self):
        src = open(os.path.join(self.root, "pkg/events/events.go"), encoding="utf-8").read()
        consts = dict(re.findall(r'\b(Topic\w+)\s*=\s*"([^"]+)"', src))
        m = re.search(r"var AllTopics = \[\]string\{(.*?)\}", src, re.S)
        if not m:
            fail("pkg/events/events.go", "cannot find AllTopics")
            return []
        return [consts.get(n, n) for n in re.findall(r"\w+", m.group(1))]

    def metric_names(self):
        """Metric names the Go code defines (a heuristic over string
        literals: a full name, Namespace+Subsystem+Name, or prefix+name)."""
        names = set()
        for f in glob.glob(os.path.join(self.root, "**/*.go"), recursive=True):
            if f.endswith("_test.go") or "/deployments/" in f:
                continue
            src = open(f, encoding="utf-8").read()
            if "prometheus" not in src:
                continue
            lits = set(re.findall(r'"([a-zA-Z_:][a-zA-Z0-9_:]*)"', src))
            names |= lits
            subs = set(re.findall(r'Subsystem:\s*"(\w+)"', src))
            nss = set(re.findall(r'Namespace:\s*"(\w+)"', src))
            prefixes = {l for l in lits if l.endswith("_")}
            for l in lits:
                for ns in nss:
                    for sub in subs:
                        names.add(f"{ns}_{sub}_{l}")
                for p in prefixes:
                    names.add(p + l)
        return names


# ---------------------------------------------------------------- checks


def check_dockerfile(root, path, where, go_work_version):
    if not os.path.isfile(path):
        fail(where, f"Dockerfile {os.path.relpath(path, root)} does not exist")
        return None
    text = open(path, encoding="utf-8").read()
    joined = re.sub(r"\\\n", " ", text)
    lines = [l.strip() for l in joined.splitlines() if l.strip() and not l.strip().startswith("#")]
    rel = os.path.relpath(path, root)
    args = {}
    for l in lines:
        m = re.match(r"ARG\s+(\w+)(?:=(\S+))?", l)
        if m and m.group(2):
            args.setdefault(m.group(1), m.group(2))
    froms = [l for l in lines if l.upper().startswith("FROM ")]
    if len(froms) < 2:
        fail(rel, "not a multi-stage build")
    for f in froms:
        img = f.split()[1]
        img = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), ""), img)
        if img.startswith("golang:"):
            ver = img.split(":", 1)[1].split("-")[0]
            if tuple(map(int, ver.split(".")[:2])) < tuple(map(int, go_work_version.split(".")[:2])):
                fail(rel, f"builder {img} is older than go.work's go {go_work_version}")
    final = lines[len(lines) - 1 - [l.upper().startswith("FROM ") for l in reversed(lines)].index(True):]
    users = [l.split(None, 1)[1] for l in final if l.upper().startswith("USER ")]
    base = final[0].split()[1]
    if not users and "nonroot" not in base:
        fail(rel, "final stage sets no USER (must not run as root)")
    for u in users:
        if u.split(":")[0] in ("root", "0"):
            fail(rel, f"final stage runs as {u}")
    copied = []
    for l in lines:
        if l.upper().startswith("COPY ") and "--from=" not in l:
            parts = [p for p in l.split()[1:] if not p.startswith("--")]
            for src in parts[:-1]:
                copied.append(src.rstrip("/"))
                if not glob.glob(os.path.join(root, src)) and not src.endswith("*"):
                    fail(rel, f"COPY source {src} does not exist")
    # every go.work module must be inside a copied path
    gw = open(os.path.join(root, "go.work"), encoding="utf-8").read()
    mods = re.findall(r"^\s*(\./[^\s)]+)", gw, re.M)
    for m in mods:
        m = m[2:]
        if not any(m == c or m.startswith(c + "/") for c in copied):
            fail(rel, f"workspace module {m} (go.work) is not copied into the build")
    if "go.work" not in copied:
        fail(rel, "go.work is not copied")
    builds = [re.sub(r"--mount=\S+\s*", "", l[4:]).strip() for l in lines if l.upper().startswith("RUN ") and " go build " in f" {l} "]
    if not builds:
        fail(rel, "no RUN ... go build line")
    for b in builds:
        if "CGO_ENABLED=0" not in b or "-trimpath" not in b:
            fail(rel, f"go build must use CGO_ENABLED=0 and -trimpath: {b}")
    return builds


def healthcheck_url(hc):
    test = hc.get("test") if isinstance(hc, dict) else None
    if isinstance(test, str):
        return test
    if isinstance(test, list):
        return " ".join(str(t) for t in test)
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))
    ap.add_argument("--compose", help="compose file (default ROOT/docker-compose.yml); relative paths resolve against ROOT")
    ap.add_argument("--build", metavar="DIR", help="build every service binary into DIR as the Dockerfile does")
    ap.add_argument("--env-table", action="store_true", help="print the configuration table (markdown) and exit")
    ap.add_argument("--env-json", action="store_true", help="print each service's variables as JSON and exit (deployments/helm's test)")
    o = ap.parse_args()
    root = os.path.abspath(o.root)
    compose_path = o.compose or os.path.join(root, "docker-compose.yml")
    repo = Repo(root)

    go_services = sorted(d for d in os.listdir(os.path.join(root, "services"))
                         if is_main_package(os.path.join(root, "services", d)))
    if o.env_table:
        print_env_table(repo, go_services)
        return 0
    if o.env_json:
        print(json.dumps({svc: {k: {"default": t["default"], "required": t["required"], "secret": t["secret"]}
                                for k, t in repo.service_env(svc).items()}
                          for svc in go_services if svc != "kafka-dev"}, indent=1, sort_keys=True))
        return 0

    try:
        compose = yaml.safe_load(open(compose_path, encoding="utf-8"))
    except Exception as e:  # noqa: BLE001
        fail(compose_path, f"does not parse: {e}")
        return report()
    services = (compose or {}).get("services") or {}
    if not services:
        fail(compose_path, "no services")
        return report()
    shell_env = {}  # defaults only: the check must not depend on the caller's environment

    gw_ver = re.search(r"^go\s+(\S+)", open(os.path.join(root, "go.work"), encoding="utf-8").read(), re.M).group(1)
    dockerfiles = {}  # path -> build lines
    built = {}  # compose service -> go service dir
    cf = os.path.basename(compose_path)

    for name, s in services.items():
        where = f"{cf}: {name}"
        s = s or {}
        # depends_on
        deps = s.get("depends_on") or {}
        if isinstance(deps, list):
            deps = {d: {"condition": "service_started"} for d in deps}
        for d, spec in deps.items():
            if d not in services:
                fail(where, f"depends_on {d}: no such service")
                continue
            cond = (spec or {}).get("condition", "service_started")
            if cond not in ("service_started", "service_healthy", "service_completed_successfully"):
                fail(where, f"depends_on {d}: unknown condition {cond}")
            if cond == "service_healthy" and not (services[d] or {}).get("healthcheck"):
                fail(where, f"depends_on {d} with service_healthy, but {d} has no healthcheck")
        # mounted repo files
        for v in s.get("volumes") or []:
            src = v.split(":")[0] if isinstance(v, str) else (v.get("source") or "")
            if src.startswith("./") or src.startswith("../"):
                if not os.path.exists(os.path.join(root, src)):
                    fail(where, f"volume source {src} does not exist")
        # build
        b = s.get("build")
        if b is None:
            if not s.get("image"):
                fail(where, "neither build nor image")
            if name != "kafka-init" and not s.get("healthcheck") and s.get("restart") != "no":
                fail(where, "infrastructure service without a healthcheck")
            continue
        if isinstance(b, str):
            b = {"context": b}
        ctx = os.path.normpath(os.path.join(root, b.get("context", ".")))
        if not os.path.isdir(ctx):
            fail(where, f"build context {b.get('context')} does not exist")
            continue
        df = os.path.join(ctx, b.get("dockerfile", "Dockerfile"))
        if df not in dockerfiles:
            dockerfiles[df] = check_dockerfile(root, df, where, gw_ver)
        args = env_dict(b.get("args"))
        svc = interpolate(args.get("SERVICE", ""), shell_env)
        if not svc:
            fail(where, "build has no SERVICE arg")
            continue
        if not os.path.isdir(os.path.join(root, "services", svc)):
            fail(where, f"SERVICE={svc}: services/{svc} does not exist")
            continue
        if svc not in go_services:
            fail(where, f"SERVICE={svc}: services/{svc} holds no main package")
            continue
        built[name] = (svc, df)
        tags = repo.service_env(svc)
        env = {k: interpolate(v, shell_env) for k, v in env_dict(s.get("environment")).items()}
        for k in env:
            if k not in tags:
                fail(where, f"environment {k} is not read by services/{svc} (its Config has no env:\"{k}\")")
        for k, t in tags.items():
            if t["required"] and not t["default"] and not env.get(k):
                fail(where, f"{k} is required by services/{svc} and not set")

        def eff(k):
            if env.get(k):
                return env[k]
            t = tags.get(k)
            return t["default"] if t else None

        admin, http = eff("ADMIN_ADDR"), eff("HTTP_ADDR")
        allowed = {port_of(a) for a in (admin, http) if a}
        for p in container_ports(s.get("ports")):
            if p not in allowed:
                fail(where, f"publishes container port {p}, but the service listens on {sorted(allowed)} (HTTP_ADDR/ADMIN_ADDR)")
        hc = s.get("healthcheck")
        if not hc or hc.get("disable"):
            fail(where, "no healthcheck")
        else:
            t = healthcheck_url(hc)
            m = re.search(r"https?://[^/\s:]+:(\d+)(/\S*)", t)
            if not m:
                fail(where, f"healthcheck does not probe an http URL: {t}")
            else:
                if m.group(2) not in ("/healthz", "/readyz"):
                    fail(where, f"healthcheck probes {m.group(2)}, want /healthz or /readyz")
                if admin and m.group(1) != port_of(admin):
                    fail(where, f"healthcheck probes port {m.group(1)}, admin port is {port_of(admin)}")
            test = hc.get("test")
            if isinstance(test, list) and test and test[0] == "CMD-SHELL" or isinstance(test, str):
                fail(where, "healthcheck needs a shell; the distroless image has none (use [\"CMD\", \"/healthcheck\", URL])")
        built[name] = (svc, df, admin)

    # Kafka topics
    topics = repo.all_topics()
    init = services.get("kafka-init")
    if not init:
        fail(cf, "no kafka-init service creating the topics")
    else:
        got = [t.strip() for t in env_dict(init.get("environment")).get("KAFKA_TOPICS", "").split(",") if t.strip()]
        if sorted(got) != sorted(topics):
            fail(f"{cf}: kafka-init", f"KAFKA_TOPICS {got} != pkg/events AllTopics {topics}")
    # every Go service with a main package must be in the compose file (kafka-dev excepted)
    in_compose = {v[0] for v in built.values()}
    for g in go_services:
        if g != "kafka-dev" and g not in in_compose:
            fail(cf, f"services/{g} is not in the compose file")

    # Prometheus
    prom_path = os.path.join(root, "deployments/prometheus/prometheus.yml")
    try:
        prom = yaml.safe_load(open(prom_path, encoding="utf-8"))
        targets = set()
        for job in prom.get("scrape_configs") or []:
            for sc in job.get("static_configs") or []:
                targets |= set(sc.get("targets") or [])
        for name, v in built.items():
            if len(v) < 3 or not v[2]:
                continue
            want = f"{name}:{port_of(v[2])}"
            if want not in targets:
                fail("deployments/prometheus/prometheus.yml", f"does not scrape {want}")
    except Exception as e:  # noqa: BLE001
        fail("deployments/prometheus/prometheus.yml", f"{e}")

    # Grafana dashboards
    defined = repo.metric_names()
    for dpath in sorted(glob.glob(os.path.join(root, "deployments/grafana/dashboards/*.json"))):
        rel = os.path.relpath(dpath, root)
        try:
            dash = json.load(open(dpath, encoding="utf-8"))
        except Exception as e:  # noqa: BLE001
            fail(rel, f"invalid JSON: {e}")
            continue
        exprs = []

        def walk(x):
            if isinstance(x, dict):
                for k, v in x.items():
                    if k in ("expr", "query") and isinstance(v, str):
                        exprs.append(v)
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        walk(dash)
        for e in exprs:
            for n in set(re.findall(r"\b((?:boxoffice|http)_[a-zA-Z0-9_]+)", e)):
                base = re.sub(r"_(bucket|sum|count)$", "", n)
                if n not in defined and base not in defined:
                    fail(rel, f"metric {n} is not defined in the Go code")

    if errors:
        return report()

    if o.build:
        build_all(root, o.build, built, dockerfiles)
    return report()


def build_all(root, out, built, dockerfiles):
    """Runs the Dockerfile's go build lines (output redirected into out),
    three at a time, and checks each binary is static."""
    from concurrent.futures import ThreadPoolExecutor

    os.makedirs(out, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("GOFLAGS", "GOWORK", "GOOS", "GOARCH", "CGO_ENABLED")}
    jobs, seen = [], set()
    for v in built.values():
        svc, df = v[0], v[1]
        for cmd in dockerfiles.get(df) or []:
            per_service = "${SERVICE}" in cmd or "$SERVICE" in cmd
            key = (df, cmd, svc if per_service else "")
            if key in seen:
                continue
            seen.add(key)
            c = cmd.replace("/out/", f"{out}/{svc}." if per_service else f"{out}/")
            jobs.append((svc, cmd, c))

    def run(job):
        svc, cmd, c = job
        t0 = time.time()
        r = subprocess.run(["bash", "-c", c], cwd=root, env=dict(env, SERVICE=svc), capture_output=True, text=True)
        return job, r, time.time() - t0

    with ThreadPoolExecutor(max_workers=3) as ex:
        for (svc, cmd, c), r, dt in ex.map(run, jobs):
            binary = c.split(" -o ")[1].split()[0]
            if r.returncode != 0:
                fail(f"build {svc}", f"`{cmd}` failed:\n{r.stdout}{r.stderr}")
            elif not is_static(binary):
                fail(f"build {svc}", f"{binary} is dynamically linked (has an ELF interpreter)")
            else:
                print(f"lint-deploy: built {binary} ({dt:.1f}s)")


def is_static(path):
    """True when the ELF file has no PT_INTERP program header."""
    import struct

    with open(path, "rb") as f:
        h = f.read(64)
        if h[:4] != b"\x7fELF" or h[4] != 2:
            return False
        end = "<" if h[5] == 1 else ">"
        phoff, = struct.unpack(end + "Q", h[32:40])
        phentsize, phnum = struct.unpack(end + "HH", h[54:58])
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            if struct.unpack(end + "I", f.read(4))[0] == 3:
                return False
    return True


def report():
    for e in errors:
        print(f"lint-deploy: {e}", file=sys.stderr)
    return 1 if errors else 0


def print_env_table(repo, go_services):
    rows = {}
    for svc in go_services:
        if svc == "kafka-dev":
            continue
        for k, t in repo.service_env(svc).items():
            r = rows.setdefault(k, {"defaults": {}, "services": [], "t": t})
            r["services"].append(svc)
            d = "" if t["secret"] and t["default"] else (t["default"] or "")
            if t["secret"] and t["default"]:
                d = t["default"] + " (dev)"
            r["defaults"][svc] = d
    print("| variable | default | services |")
    print("|---|---|---|")
    for k in sorted(rows):
        r = rows[k]
        ds = set(r["defaults"].values())
        d = ", ".join(f"{s}: `{v}`" for s, v in r["defaults"].items()) if len(ds) > 1 else (f"`{ds.pop()}`" if ds and list(ds)[0] else "—")
        print(f"| `{k}` | {d} | {', '.join(r['services'])} |")


if __name__ == "__main__":
    sys.exit(main())
