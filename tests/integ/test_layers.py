"""The record of containment layers: `ward run --json` "layers", the runs
table's layers column, and `ward show` (text, --summary, --json)."""
import json


def layer(layers, name):
    found = [l for l in layers if l["name"] == name]
    assert len(found) == 1, (name, layers)
    return found[0]


def test_layers_recorded_everywhere(ctx):
    r, j = ctx.run_json("print('hi')")
    assert r.code == 0 and j["stdout"] == "hi\n", r
    for name in ("seccomp", "ptrace"):
        l = layer(j["layers"], name)
        assert l["active"] is True and l["detail"], l
    assert "policy default" in layer(j["layers"], "ptrace")["detail"]
    row = ctx.last_run()
    assert json.loads(row["layers"]) == j["layers"]
    s = ctx.ward("show", "last", "--json")
    assert s.code == 0 and s.json()["run"]["layers"] == j["layers"], s
    for opts in ((), ("--summary",)):
        t = ctx.ward("show", "last", *opts)
        # one line per layer under the "layers" heading, outermost first
        out = t.stdout.splitlines()
        head = [i for i, x in enumerate(out) if x.startswith("layers")]
        assert t.code == 0 and head, t
        block = out[head[0]:head[0] + len(j["layers"])]
        assert any("seccomp on:" in x for x in block), t
        assert any(x.split()[:2] == ["ptrace", "on:"]
                   for x in t.stdout.splitlines()), t


def test_audit_profile_ptrace_layer_says_audit(ctx):
    r, j = ctx.run_json("print(1)", "--profile", "audit")
    assert r.code == 0, r
    assert "audit mode" in layer(j["layers"], "ptrace")["detail"], j["layers"]
