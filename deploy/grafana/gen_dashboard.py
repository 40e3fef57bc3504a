#!/usr/bin/env python3
"""Writes dashboards/shepherd.json, the Grafana dashboard of deploy/compose.yaml
and the Helm chart. Edit the panels here and rerun (python3 gen_dashboard.py);
test/deploy checks every metric the dashboard's queries name is one a running
shepherd exposes."""
import json, os

DS = {"type": "prometheus", "uid": "prometheus"}
RI = "$__rate_interval"
panels = []
y = 0


def row(title):
    global y
    panels.append({"type": "row", "title": title, "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "id": len(panels) + 1, "panels": []})
    y += 1


def panel(title, targets, x, w=12, h=8, unit="short", kind="timeseries", desc="", stack=False):
    p = {
        "id": len(panels) + 1, "type": kind, "title": title, "description": desc,
        "datasource": DS, "gridPos": {"h": h, "w": w, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "max"]},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": [{"datasource": DS, "refId": chr(ord("A") + i), "expr": e, "legendFormat": l}
                    for i, (e, l) in enumerate(targets)],
    }
    if kind == "timeseries" and stack:
        p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal"}, "fillOpacity": 20}
    if kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area", "textMode": "auto"}
    panels.append(p)


def next_row(h=8):
    global y
    y += h


row("Traffic")
panel("Requests by route", [(f'sum by (route) (rate(shepherd_requests_total[{RI}]))', "{{route}}")], 0, unit="reqps",
      desc="Requests per second by route (shepherd_requests_total).")
panel("Errors by route", [
    (f'sum by (route, status) (rate(shepherd_requests_total{{status=~"4..|5.."}}[{RI}]))', "{{route}} {{status}}"),
    (f'sum by (route, kind) (rate(shepherd_upstream_errors_total[{RI}]))', "upstream {{route}} {{kind}}"),
], 12, unit="reqps", desc="Answers with a 4xx or 5xx status (499: the client left), and upstream failures by kind.")
next_row()
panel("Error ratio", [(f'(sum(rate(shepherd_requests_total{{status=~"5.."}}[{RI}])) or vector(0)) / sum(rate(shepherd_requests_total[{RI}]))', "5xx / all")],
      0, w=6, unit="percentunit", kind="stat")
panel("Streams open", [("sum(shepherd_streams_open)", "open")], 6, w=6, kind="stat")
panel("Client disconnects", [(f'sum by (route, phase) (rate(shepherd_client_disconnects_total[{RI}]))', "{{route}} {{phase}}")],
      12, unit="reqps", desc="Clients that left before their reply was complete.")
next_row()

row("Latency")
panel("Proxy overhead percentiles", [
    (f'histogram_quantile({q}, sum by (le) (rate(shepherd_overhead_seconds_bucket[{RI}])))', f"p{int(q*100)}")
    for q in (0.5, 0.9, 0.99)
], 0, unit="s", desc="Time spent inside shepherd per request, excluding the wait for the upstream (shepherd_overhead_seconds).")
panel("Overhead p99 by route", [
    (f'histogram_quantile(0.99, sum by (le, route) (rate(shepherd_overhead_seconds_bucket[{RI}])))', "{{route}}"),
], 12, unit="s")
next_row()
panel("Upstream time to headers", [
    (f'histogram_quantile({q}, sum by (le) (rate(shepherd_upstream_duration_seconds_bucket[{RI}])))', f"p{int(q*100)}")
    for q in (0.5, 0.9, 0.99)
], 0, unit="s")
panel("Stream duration p50 / p95", [
    (f'histogram_quantile({q}, sum by (le) (rate(shepherd_stream_duration_seconds_bucket[{RI}])))', f"p{int(q*100)}")
    for q in (0.5, 0.95)
], 12, unit="s")
next_row()

row("Governance and turns")
panel("Refusals by reason", [
    (f'sum by (decision, rule) (rate(shepherd_intent_decisions_total{{decision=~"refused|held|would_refuse"}}[{RI}]))', "{{decision}} {{rule}}"),
    (f'sum by (budget) (rate(shepherd_budget_refusals_total[{RI}]))', "budget {{budget}}"),
], 0, unit="ops", stack=True,
      desc="Tool calls intent governance refused or held for approval (would_refuse: audit mode), by the rule that decided; requests (HTTP 429) and tool calls a session budget refused, by budget.")
panel("Continuations and follow-ups", [
    (f'sum by (route) (rate(shepherd_recovery_attempts_total[{RI}]))', "continuation {{route}}"),
    (f'sum by (route, result) (rate(shepherd_recoveries_total[{RI}]))', "recovery {{route}} {{result}}"),
    (f'sum by (route) (rate(shepherd_followups_total[{RI}]))', "follow-up {{route}}"),
], 12, unit="ops",
      desc="Continuation requests truncation recovery sent, the turns it recovered, exhausted or failed, and the turn engine's follow-ups.")
next_row()
panel("Truncations", [(f'sum by (route, stop) (rate(shepherd_truncations_total[{RI}]))', "{{route}} {{stop}}")], 0, unit="ops")
panel("State store errors", [
    (f'sum by (op) (rate(shepherd_store_errors_total[{RI}]))', "{{op}}"),
], 12, unit="ops", desc="State store failures by operation; /readyz answers 503 while the store does not answer.")
next_row()

row("Tokens and cost")
panel("Cache-read ratio by model", [
    (f'sum by (model) (rate(shepherd_tokens_total{{kind="cache_read"}}[{RI}])) / sum by (model) (rate(shepherd_tokens_total{{kind=~"input|cache_read|cache_write"}}[{RI}]))', "{{model}}"),
], 0, unit="percentunit",
      desc="Share of prompt tokens read from the provider's prompt cache. A drop means the prompt prefix changed between requests.")
panel("Tokens by model", [
    (f'sum by (model, kind) (rate(shepherd_tokens_total[{RI}]))', "{{model}} {{kind}}"),
], 12, unit="short", stack=True)
next_row()
panel("Cost by model (USD per hour)", [
    (f'sum by (model) (rate(shepherd_cost_usd_total[{RI}])) * 3600', "{{model}}"),
], 0, unit="currencyUSD", stack=True, desc="List-price cost (shepherd_cost_usd_total).")
panel("Cost in range by model", [
    ('sum by (model) (increase(shepherd_cost_usd_total[$__range]))', "{{model}}"),
], 12, unit="currencyUSD", kind="stat")
next_row()

row("Context and cache integrity")
panel("Prompt prefix breaks by cause", [
    (f'sum by (cause) (rate(shepherd_prefix_breaks_total[{RI}]))', "{{cause}}"),
], 0, unit="ops", stack=True,
      desc="Turns whose upstream conversation did not extend the session's previous request (docs/diagnostics.md): client (the agent changed its history), compaction and gating (by design, once per epoch or new topic), proxy (a bug).")
panel("Context features", [
    (f'sum(rate(shepherd_compaction_epochs_total[{RI}]))', "compaction epochs"),
    (f'sum by (kind) (rate(shepherd_prose_replies_total[{RI}]))', "prose {{kind}}"),
    (f'sum by (decision) (rate(shepherd_gating_decisions_total[{RI}]))', "gating {{decision}}"),
    (f'sum by (rule) (rate(shepherd_format_applied_total[{RI}]))', "format {{rule}}"),
], 12, unit="ops",
      desc="The opt-in context features (docs/context.md); a feature that is off has no series.")
next_row()

dash = {
    "uid": "shepherd", "title": "shepherd", "tags": ["shepherd"], "timezone": "",
    "schemaVersion": 39, "version": 1, "editable": True, "refresh": "30s",
    "time": {"from": "now-3h", "to": "now"}, "graphTooltip": 1,
    "annotations": {"list": []}, "templating": {"list": []}, "links": [],
    "panels": panels,
}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboards", "shepherd.json")
with open(out, "w") as f:
    json.dump(dash, f, indent=2)
    f.write("\n")
