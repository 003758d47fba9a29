"""deploy/: the Kubernetes manifests, the Prometheus rules and the Grafana
dashboard name only things that exist.

- Every manifest validates, offline and strictly (an unknown field fails),
  against the OpenAPI schemas of Kubernetes K8S_VERSION as kubernetes-validate
  ships them; the references between manifests resolve; the flags and
  ZEROLAYER_* variables given to `zerolayer serve` are in its --help, and the
  router's flags in `vllm-router --help`.
- Every metric in every PromQL expression (alerts, adapter rule, dashboard) is
  exposed by a real `zerolayer serve` (the HTTP suite's `server` fixture),
  read with prometheus-client's parser. The GPU gauges (zerolayer:gpu_*) are
  exported only with `serve --device cuda`, which fails without a CUDA device
  (the fake NVML of tests/core/fake_nvml.c reaches them only in the C++ test
  tests/server/gpu_metrics_test.cpp, which configures the HTTP server
  directly), so their names are read from the code that writes them,
  src/server/stats_monitor.cpp (src/core/gpu_counters.cpp only samples NVML).

Skipped only when kubernetes-validate is not installed.
"""

import json
import re
import shutil
import subprocess

import pytest

kubernetes_validate = pytest.importorskip("kubernetes_validate")
import yaml  # noqa: E402  (a dependency of kubernetes-validate)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

# The HTTP suite's module-scoped `server` fixture: this module gets its own server.
from test_http_server import BIN, REPO, server  # noqa: E402,F401

K8S_VERSION = "1.33"  # pinned: a kubernetes-validate without its schemas fails here
DEPLOY = REPO / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
ADAPTER = DEPLOY / "prometheus" / "adapter-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "zerolayer.json"
GPU_METRICS_SOURCE = REPO / "src" / "server" / "stats_monitor.cpp"

# ----------------------------------------------------------------- PromQL

# Functions and aggregation operators (Prometheus 3), the only identifiers
# followed by '('.
FUNCTIONS = set("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp clamp_max
clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month deg delta deriv
double_exponential_smoothing exp floor histogram_avg histogram_count histogram_fraction histogram_quantile
histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase info irate label_join
label_replace last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month pi
predict_linear present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort
sort_by_label sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh
time timestamp vector year start end
sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
""".split())
GROUPING = ["by", "without", "on", "ignoring", "group_left", "group_right"]
KEYWORDS = {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan", *GROUPING}
# What holds identifiers that are not metric names: strings and comments
# first (they may hold brackets), then label matchers, ranges and subqueries,
# and the label lists of grouping clauses.
STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`|#[^\n]*')
LABELS = re.compile(r"\{[^{}]*\}|\[[^\]]*\]|\b(?:" + "|".join(GROUPING) + r")\s*\([^()]*\)")
GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
TOKEN = re.compile(r"(?P<number>(?<![\w:.])(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:\d*(?:ms|[smhdwy]))*)"
                   r"|(?P<name>[A-Za-z_:][\w:]*)(?P<call>\s*\()?")


def promql_names(expr):
    """(metric names, unknown functions) of a PromQL expression."""
    text = GRAFANA_VARIABLE.sub("", expr)  # $__rate_interval, ${datasource}: Grafana fills them in
    text = LABELS.sub(" ", STRINGS.sub(" ", text))
    assert text.count("(") == text.count(")"), f"unbalanced parentheses in {expr!r}"
    metrics, unknown_functions = set(), set()
    for m in TOKEN.finditer(text):
        name = m.group("name")
        if name is None or name.lower() in KEYWORDS:
            continue
        if m.group("call"):
            if name not in FUNCTIONS:
                unknown_functions.add(name)
        else:
            metrics.add(name)
    return metrics, unknown_functions


def missing_names(expr, exposed):
    """What the expression names that does not exist: its errors, or []."""
    metrics, unknown_functions = promql_names(expr)
    assert metrics, f"no metric found in {expr!r}: the extractor is wrong or the expression is"
    return sorted(f"metric {m}" for m in metrics - exposed) + sorted(f"function {f}" for f in unknown_functions)


# Sample names of each metric type: what PromQL selects. The parser names a
# counter's family without `_total`; a histogram whose name ends in `_total`
# (vllm:iteration_tokens_total) keeps it.
SAMPLE_SUFFIXES = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"],
                   "summary": ["", "_sum", "_count"], "gauge": [""], "unknown": [""]}


def sample_names(family_name, kind):
    return {family_name + suffix for suffix in SAMPLE_SUFFIXES[kind]}


@pytest.fixture(scope="module")
def exposed(server):  # noqa: F811
    """Every series name a real server exposes, plus the CUDA-only gauges."""
    status, _, data = server.request("GET", "/metrics")
    assert status == 200
    names = set()
    for family in text_string_to_metric_families(data.decode()):
        names |= {s.name for s in family.samples} | sample_names(family.name, family.type)
    gpu = re.findall(r'metric\(\s*"(zerolayer:gpu_\w+)",\s*"(\w+)"', GPU_METRICS_SOURCE.read_text())
    assert len(gpu) >= 4, f"the zerolayer:gpu_* metrics moved out of {GPU_METRICS_SOURCE}"
    for name, kind in gpu:
        names |= sample_names(name, kind)
    return names


def alert_rules():
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_targets():
    return [(panel["title"], target) for panel in json.loads(DASHBOARD.read_text())["panels"]
            for target in panel["targets"]]


def test_extractor_reports_what_does_not_exist():
    exposed = {"vllm:prompt_tokens_total", "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket"}
    good = ('histogram_quantile(0.95, sum by (model_name, le) (rate(vllm:time_to_first_token_seconds_bucket'
            '{model_name=~"$model", le!="+Inf"}[$__rate_interval] offset 1h30m))) > 2.5e-1'
            ' and on (job, instance) vllm:kv_cache_usage_perc < bool 0.8 # vllm:not_a_metric\n'
            ' * ignoring (pod) group_left vllm:kv_cache_usage_perc')
    assert missing_names(good, exposed) == []
    assert promql_names(good)[0] == {"vllm:time_to_first_token_seconds_bucket", "vllm:kv_cache_usage_perc"}
    assert missing_names("rate(vllm:prompt_token_total[5m])", exposed) == ["metric vllm:prompt_token_total"]
    # A counter is selected with its `_total`, a gauge has no `_bucket`.
    assert missing_names("rate(vllm:prompt_tokens[5m])", exposed) == ["metric vllm:prompt_tokens"]
    assert missing_names("vllm:kv_cache_usage_perc_bucket", exposed) == ["metric vllm:kv_cache_usage_perc_bucket"]
    assert missing_names("rat(vllm:prompt_tokens_total[5m])", exposed) == ["function rat"]


def test_alert_rules_name_only_exposed_metrics(exposed):
    rules = alert_rules()
    assert {r["alert"] for r in rules} >= {"ZerolayerGpuUnderutilised", "ZerolayerTtftP95OverObjective",
                                            "ZerolayerQueueingWithKvRoom", "ZerolayerKvCacheNearlyFull"}
    for rule in rules:
        assert re.fullmatch(r"(\d+[smh])+", rule.get("for", "0s")), rule["alert"]
        assert rule["labels"]["severity"] and rule["annotations"]["summary"], rule["alert"]
        assert missing_names(rule["expr"], exposed) == [], rule["alert"]


def test_dashboard_panels_name_only_exposed_metrics(exposed):
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    targets = dashboard_targets()
    assert targets
    for title, target in targets:
        assert missing_names(target["expr"], exposed) == [], (title, target["expr"])


def test_adapter_rule_serves_the_hpa_metric(exposed):
    rule, = yaml.safe_load(ADAPTER.read_text())["rules"]
    series = re.sub(r"\{.*", "", rule["seriesQuery"])  # the rule's own selector, labels aside
    assert missing_names(series, exposed) == []
    assert re.fullmatch(rule["name"]["matches"], series)
    hpa, = [d for d in manifest_docs() if d["kind"] == "HorizontalPodAutoscaler"]
    assert [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]] == [rule["name"]["as"]]

# ------------------------------------------------------------- manifests


def manifest_docs():
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_manifests_validate_strictly():
    assert MANIFESTS
    errors = []
    for doc in manifest_docs():
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        try:
            assert kubernetes_validate.validate(doc, K8S_VERSION, strict=True) == K8S_VERSION, where
        except kubernetes_validate.ValidationError as e:
            errors.append(f"{where}: {'.'.join(map(str, e.path))}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            errors.append(f"{where}: {e.message}")
    assert errors == []
    # Strict means strict: a misspelt field is an error, not ignored.
    deployment = next(d for d in manifest_docs() if d["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def by_kind(kind):
    return {d["metadata"]["name"]: d for d in manifest_docs() if d["kind"] == kind}


def container(deployment):
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def flag_value(args, flag):
    return args[args.index(flag) + 1]


def test_manifests_refer_to_each_other():
    docs = manifest_docs()
    namespaces = set(by_kind("Namespace"))
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] in namespaces, doc["metadata"]["name"]
    deployments, config_maps = by_kind("Deployment"), by_kind("ConfigMap")
    for svc in by_kind("Service").values():
        pods = [d for d in deployments.values()
                if svc["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(pods) == 1, svc["metadata"]["name"]
        port_names = {p["name"] for p in container(pods[0])["ports"]}
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= port_names
    for d in deployments.values():
        c = container(d)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if probe in c:
                assert c[probe]["httpGet"]["port"] in {p["name"] for p in c["ports"]}, probe
        for source in c.get("envFrom", []):
            assert source["configMapRef"]["name"] in config_maps
    hpa, = by_kind("HorizontalPodAutoscaler").values()
    assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
    assert "replicas" not in deployments[hpa["spec"]["scaleTargetRef"]["name"]]["spec"], "the HPA owns replicas"
    binding, = by_kind("RoleBinding").values()
    assert binding["roleRef"]["name"] in by_kind("Role")
    subject, = binding["subjects"]
    assert subject["name"] in by_kind("ServiceAccount") and subject["namespace"] in namespaces


def test_server_gets_real_flags_and_drains_before_it_is_killed():
    serve = by_kind("Deployment")["zerolayer"]
    c = container(serve)
    assert c["command"][-1] == "serve"
    help_text = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"--[a-z][a-z0-9-]*", help_text))
    assert {a for a in c["args"] if a.startswith("--")} <= flags
    env_names = set(re.findall(r"Env:(ZEROLAYER_\w+)", help_text))
    given = {e["name"] for e in c.get("env", [])}
    for source in c.get("envFrom", []):
        given |= set(by_kind("ConfigMap")[source["configMapRef"]["name"]]["data"])
    assert {n for n in given if n.startswith("ZEROLAYER_")} <= env_names
    assert (flag_value(c["args"], "--host"), flag_value(c["args"], "--shm-name")) == ("0.0.0.0", "")
    assert int(flag_value(c["args"], "--port")) == c["ports"][0]["containerPort"]
    # The kubelet's SIGKILL must come after preStop's sleep and the server's own shutdown.
    drain_s = c["lifecycle"]["preStop"]["sleep"]["seconds"] + float(flag_value(c["args"], "--shutdown-timeout"))
    assert serve["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > drain_s
    assert all(c[p]["httpGet"]["path"] == "/health" for p in ("startupProbe", "readinessProbe", "livenessProbe"))


def test_router_discovers_the_server_pods():
    deployments = by_kind("Deployment")
    server_pod = deployments["zerolayer"]["spec"]["template"]
    router = container(deployments["zerolayer-router"])
    args = router["args"]
    assert "--service-discovery" in args and flag_value(args, "--policy") == "cache_aware"
    key, value = flag_value(args, "--selector").split("=")
    assert server_pod["metadata"]["labels"][key] == value
    assert deployments["zerolayer-router"]["spec"]["template"]["metadata"]["labels"].get(key) != value
    assert int(flag_value(args, "--service-discovery-port")) == container(deployments["zerolayer"])["ports"][0][
        "containerPort"]
    rule, = by_kind("Role")["zerolayer-router"]["rules"]
    assert "pods" in rule["resources"] and {"get", "list", "watch"} <= set(rule["verbs"])
    assert deployments["zerolayer-router"]["spec"]["template"]["spec"]["serviceAccountName"] in by_kind(
        "ServiceAccount")


def test_router_flags_exist():
    router_bin = shutil.which("vllm-router", path=str(REPO / ".venv" / "bin")) or shutil.which("vllm-router")
    if router_bin is None:
        pytest.skip("vllm-router is not installed (pip install vllm-router): its flags are not checked")
    help_text = subprocess.run([router_bin, "--help"], capture_output=True, text=True, check=True).stdout
    args = container(by_kind("Deployment")["zerolayer-router"])["args"]
    assert {a for a in args if a.startswith("--")} <= set(re.findall(r"--[a-z][a-z0-9-]*", help_text))
