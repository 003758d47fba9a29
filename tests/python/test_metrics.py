"""`GET /metrics` read by Prometheus's own parser (prometheus-client).

Every vLLM metric the observability issue lists must be there under vLLM's
name, with vLLM's type and its `model_name` label, so that a vLLM dashboard
works unchanged; and the counters and histograms must move by exactly what a
request served between two scrapes adds.
"""

import pytest

# The HTTP suite's module-scoped `server` fixture: this module gets its own server.
from test_http_server import MODEL, server  # noqa: F401

parser = pytest.importorskip("prometheus_client.parser")

# vLLM's names and types. The parser names a counter's family without its
# `_total` suffix; its samples keep it.
VLLM_METRICS = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prompt_tokens": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:num_preemptions": "counter",
    "vllm:prefix_cache_queries": "counter",
    "vllm:prefix_cache_hits": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_prefill_time_seconds": "histogram",
    "vllm:request_decode_time_seconds": "histogram",
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
    "vllm:iteration_tokens_total": "histogram",
}


def scrape(server):
    """{family name: family} as prometheus-client parses the exposition."""
    status, headers, data = server.request("GET", "/metrics")
    assert status == 200
    assert headers.get("Content-Type", "").startswith("text/plain")
    return {family.name: family for family in parser.text_string_to_metric_families(data.decode())}


def value(families, family, sample, **labels):
    """The value of one sample, matched by name and by the given labels."""
    for s in families[family].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample {sample} {labels} in {family}")


def test_every_vllm_metric_parses_with_its_type_and_label(server):
    families = scrape(server)
    for name, kind in VLLM_METRICS.items():
        assert name in families, name
        assert families[name].type == kind, (name, families[name].type)
        for s in families[name].samples:
            assert s.labels.get("model_name") == MODEL, (name, s.labels)
    reasons = {s.labels["finished_reason"] for s in families["vllm:request_success"].samples}
    assert {"stop", "length", "abort"} <= reasons


def test_counters_move_by_what_a_request_adds(server):
    prompt = [5, 9, 13, 17, 21, 25, 29]  # token ids: a known prompt length
    before = scrape(server)
    status, _, data = server.request("POST", "/v1/completions",
                                     {"model": MODEL, "prompt": prompt, "max_tokens": 6, "ignore_eos": True})
    assert status == 200, data
    after = scrape(server)

    def moved(family, sample, **labels):
        return value(after, family, sample, **labels) - value(before, family, sample, **labels)

    assert moved("vllm:prompt_tokens", "vllm:prompt_tokens_total") == len(prompt)
    assert moved("vllm:generation_tokens", "vllm:generation_tokens_total") == 6
    assert moved("vllm:request_success", "vllm:request_success_total", finished_reason="length") == 1
    assert moved("vllm:prefix_cache_queries", "vllm:prefix_cache_queries_total") >= len(prompt) - 1
    for name in ("vllm:e2e_request_latency_seconds", "vllm:time_to_first_token_seconds",
                 "vllm:request_queue_time_seconds", "vllm:request_prompt_tokens"):
        assert moved(name, name + "_count") == 1, name
        assert moved(name, name + "_sum") >= 0, name
    assert moved("vllm:request_generation_tokens", "vllm:request_generation_tokens_sum") == 6
    assert moved("vllm:inter_token_latency_seconds", "vllm:inter_token_latency_seconds_count") == 5
    assert moved("vllm:iteration_tokens_total", "vllm:iteration_tokens_total_count") >= 6
    # Idle again: nothing running or waiting, and the request's KV is back.
    assert value(after, "vllm:num_requests_running", "vllm:num_requests_running") == 0
    assert value(after, "vllm:num_requests_waiting", "vllm:num_requests_waiting") == 0
    assert value(after, "zerolayer:kv_blocks_used", "zerolayer:kv_blocks_used") == 0


def test_histogram_buckets_are_cumulative_and_end_in_inf(server):
    families = scrape(server)
    for name, kind in VLLM_METRICS.items():
        if kind != "histogram":
            continue
        buckets = [(s.labels["le"], s.value) for s in families[name].samples if s.name == name + "_bucket"]
        assert buckets and buckets[-1][0] == "+Inf", name
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), name
        assert counts[-1] == value(families, name, name + "_count"), name
        bounds = [float(le) for le, _ in buckets[:-1]]
        assert bounds == sorted(bounds) and len(set(bounds)) == len(bounds), name
    assert families["zerolayer:scheduling_gap_seconds"].type == "histogram"


def test_info_gauges_the_gateway_inference_extension_reads(server):
    """vllm:cache_config_info and vllm:lora_requests_info, as vLLM exposes them."""
    import time
    families = scrape(server)
    (config,) = families["vllm:cache_config_info"].samples
    assert config.value == 1.0
    assert config.labels["block_size"] == "16"
    assert config.labels["cache_dtype"] == "f16"  # dummy:tiny's f32 weights get 16-bit KV
    assert int(config.labels["num_gpu_blocks"]) == value(families, "zerolayer:kv_blocks_total",
                                                         "zerolayer:kv_blocks_total")
    assert config.labels["enable_prefix_caching"] == "True"
    (lora,) = families["vllm:lora_requests_info"].samples
    assert lora.labels == {"max_lora": "0", "running_lora_adapters": "", "waiting_lora_adapters": ""}
    assert abs(lora.value - time.time()) < 60
