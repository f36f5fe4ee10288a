"""docs/scale-out.md and examples/scale-out/: the Kubernetes Jobs' and the
Slurm scripts' own commands run here for each shard (only the variables the
engine would set are faked: JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_*), in
parallel, each into its own database; then their merge commands, `ward
verify --all`, and the layout checked (every sample in exactly one shard,
every run in the merged database). The manifests' structure, the pod's
capabilities (measured by running ward with exactly those), a masked /proc,
the image's package list, and the SIEM path: ward-ship appends each ended
run as OCSF lines carrying the fields the Vector config uses.

Not here: Kubernetes, Slurm, Docker and Vector themselves (none is
installed on this machine; docs/scale-out.md says so)."""
import fnmatch
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

import yaml

import wardtest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EX = os.path.join(ROOT, "examples", "scale-out")
SAMPLES = os.path.join(EX, "samples.jsonl")
SHIP = os.path.join(EX, "siem", "ward-ship")


def _yaml(name):
    with open(os.path.join(EX, "k8s", name)) as f:
        return list(yaml.safe_load_all(f))


def _kind(docs, kind):
    found = [d for d in docs if d and d.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _container(job):
    cs = job["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1, cs
    return cs[0]


def _env(container):
    return {e["name"]: e["value"] for e in container.get("env", [])}


def _sample_ids():
    with open(SAMPLES) as f:
        return [json.loads(l)["id"] for l in f if l.strip()]


def _bin(ctx):
    """A PATH where `ward` is this build and `ward-ship` the example's."""
    d = ctx.path("bin")
    os.makedirs(d, exist_ok=True)
    os.symlink(os.path.abspath(wardtest.ward_bin()), os.path.join(d, "ward"))
    os.symlink(os.path.abspath(SHIP), os.path.join(d, "ward-ship"))
    env = dict(os.environ)
    env["PATH"] = d + ":/usr/local/bin:/usr/bin:/bin"
    env.pop("WARD_DB", None)
    return env


def _data(ctx, name):
    d = ctx.path(name)
    os.makedirs(d)
    shutil.copy(SAMPLES, os.path.join(d, "samples.jsonl"))
    return d


# ---- the layout: what must hold after the shards and the merge ----

def layout_problems(data, n):
    """What is wrong with DATA after n shards and the merge: every sample
    in exactly one shard's result lines, each shard's runs in its own
    database, all of them (and no other) in all.db, results.jsonl the
    union. [] when all holds."""
    probs = []
    ids = _sample_ids()
    where = {}
    shard_runs = set()
    for i in range(1, n + 1):
        out = os.path.join(data, f"shard-{i}.jsonl")
        db = os.path.join(data, f"shard-{i}.db")
        if not os.path.exists(out) or not os.path.exists(db):
            probs.append(f"shard {i}: no {out} or {db}")
            continue
        with open(out) as f:
            lines = [json.loads(l) for l in f]
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        in_db = {r[0] for r in con.execute("select id from runs")}
        con.close()
        for l in lines:
            where.setdefault(l["id"], []).append(i)
            if l["status"] != "ok" or l["pass"] is not True:
                probs.append(f"shard {i}: {l['id']} {l['status']} pass={l['pass']}")
            if l["run_id"] not in in_db:
                probs.append(f"shard {i}: run {l['run_id']} not in {db}")
        if in_db != {l["run_id"] for l in lines}:
            probs.append(f"shard {i}: runs of the db {sorted(in_db)} are not its lines'")
        shard_runs |= in_db
    for s in ids:
        if len(where.get(s, [])) != 1:
            probs.append(f"sample {s} in shards {where.get(s, [])}, not exactly one")
    if set(where) - set(ids):
        probs.append(f"unknown samples {sorted(set(where) - set(ids))}")
    all_db = os.path.join(data, "all.db")
    if not os.path.exists(all_db):
        return probs + ["no all.db"]
    con = sqlite3.connect(f"file:{all_db}?mode=ro", uri=True)
    merged = {r[0] for r in con.execute("select id from runs")}
    con.close()
    if merged != shard_runs or len(merged) != len(ids):
        probs.append(f"all.db has {len(merged)} runs, the shards {len(shard_runs)}, "
                     f"samples {len(ids)}")
    r = subprocess.run([wardtest.ward_bin(), "verify", "--all", "--strict", "--json",
                        "--db", all_db], capture_output=True, text=True)
    if r.returncode != 0:
        probs.append(f"ward verify --all: exit {r.returncode}: {r.stdout[-500:]} {r.stderr[-500:]}")
    else:
        runs = json.loads(r.stdout)["runs"]
        bad = [x for x in runs if x["verdict"] != "intact"]
        if bad or {x["run_id"] for x in runs} != merged:
            probs.append(f"verify: {bad}")
    res = os.path.join(data, "results.jsonl")
    if not os.path.exists(res):
        probs.append("no results.jsonl")
    else:
        with open(res) as f:
            got = sorted(json.loads(l)["id"] for l in f)
        if got != sorted(ids):
            probs.append(f"results.jsonl has {got}")
    return probs


# ---- Kubernetes ----

def job_problems(docs, merge_docs):
    """The structural checks of batch-job.yaml and merge-job.yaml."""
    p = []
    job = _kind(docs, "Job")
    pvc = _kind(docs, "PersistentVolumeClaim")
    merge = _kind(merge_docs, "Job")
    spec = job["spec"]
    c = _container(job)
    env = _env(c)
    n = int(env.get("WARD_SHARDS", "0"))
    if spec.get("completionMode") != "Indexed":
        p.append("the Job is not Indexed")
    if not (spec.get("completions") == spec.get("parallelism") == n > 0):
        p.append(f"completions {spec.get('completions')}, parallelism "
                 f"{spec.get('parallelism')}, WARD_SHARDS {n}: not one N")
    if int(_env(_container(merge)).get("WARD_SHARDS", "0")) != n:
        p.append("the merge Job's WARD_SHARDS is not the batch Job's")
    script = c["args"][0] if c.get("command") == ["/bin/sh", "-c"] else ""
    for need in ("I=$((JOB_COMPLETION_INDEX + 1))",
                 'ward batch --shard "$I/$WARD_SHARDS" --jobs "$WARD_JOBS"',
                 '--db "$D.db" --out "$D.jsonl"', 'D=$WARD_DATA/shard-$I',
                 '--require "$WARD_REQUIRE"',
                 'ward-ship "$D.db" "$D.ocsf.jsonl"'):
        if need not in script:
            p.append(f"the pod's command lacks {need}")
    mscript = _container(merge)["args"][0]
    for need in ('ward merge "$@" -o "$D/all.db"', 'ward verify --all --db "$D/all.db"',
                 'set -- "$@" "$D/shard-$I.db"', 'for I in $(seq 1 "$WARD_SHARDS")'):
        if need not in mscript:
            p.append(f"the merge command lacks {need}")
    if c["resources"]["requests"].get("cpu") != env.get("WARD_JOBS"):
        p.append("--jobs (WARD_JOBS) is not the pod's CPU request")
    sc = c.get("securityContext", {})
    if sc.get("runAsUser") != 0:
        p.append("ward does not run as root")
    if not {"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"} <= set(
            sc.get("capabilities", {}).get("add", [])):
        p.append("capabilities: SYS_ADMIN, NET_ADMIN, SYS_PTRACE not all added")
    for k in ("seccompProfile", "appArmorProfile"):
        if sc.get(k, {}).get("type") != "Unconfined":
            p.append(f"{k} is not Unconfined")
    if sc.get("allowPrivilegeEscalation") is False:
        p.append("allowPrivilegeEscalation false: no_new_privs stops nothing "
                 "ward needs, but the capabilities added must stay effective")
    for j, who in ((job, "batch"), (merge, "merge")):
        cc = _container(j)
        vols = {v["name"]: v for v in j["spec"]["template"]["spec"]["volumes"]}
        data = [m for m in cc["volumeMounts"] if m["mountPath"] == _env(cc).get("WARD_DATA")]
        if len(data) != 1:
            p.append(f"{who}: WARD_DATA is not a mounted volume")
            continue
        claim = vols.get(data[0]["name"], {}).get("persistentVolumeClaim", {})
        if claim.get("claimName") != pvc["metadata"]["name"]:
            p.append(f"{who}: WARD_DATA is not on the claim {pvc['metadata']['name']}")
        if j["spec"]["template"]["spec"].get("restartPolicy") != "Never":
            p.append(f"{who}: restartPolicy is not Never")
    if _container(merge)["image"] != c["image"]:
        p.append("the two Jobs run different images")
    return p


def test_k8s_manifests_structure(ctx):
    docs, mdocs = _yaml("batch-job.yaml"), _yaml("merge-job.yaml")
    assert job_problems(docs, mdocs) == []
    # each check fails when the thing it checks is broken
    def broken(edit):
        d, m = _yaml("batch-job.yaml"), _yaml("merge-job.yaml")
        edit(_kind(d, "Job"), _container(_kind(d, "Job")), _kind(m, "Job"))
        return job_problems(d, m)
    assert broken(lambda j, c, m: j["spec"].pop("completionMode"))
    assert broken(lambda j, c, m: j["spec"].update(completions=3))
    assert broken(lambda j, c, m: c["args"].__setitem__(
        0, c["args"][0].replace("JOB_COMPLETION_INDEX + 1", "JOB_COMPLETION_INDEX")))
    assert broken(lambda j, c, m: c["securityContext"]["seccompProfile"].update(
        type="RuntimeDefault"))
    assert broken(lambda j, c, m: c["securityContext"]["capabilities"]["add"].remove(
        "NET_ADMIN"))
    assert broken(lambda j, c, m: c["volumeMounts"][0].update(mountPath="/mnt"))
    assert broken(lambda j, c, m: _container(m)["env"][0].update(value="3"))
    # shellcheck finds nothing in the scripts (the pods' as sh scripts)
    if shutil.which("shellcheck"):
        scripts = [SHIP, _sbatch("batch.sbatch"), _sbatch("merge.sbatch")]
        for name, d in (("pod.sh", docs), ("merge.sh", mdocs)):
            scripts.append(ctx.write(name, "#!/bin/sh\n" + _container(_kind(d, "Job"))["args"][0]))
        r = subprocess.run(["shellcheck"] + scripts, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout
    # the doc shows the pod's command as the Job has it
    with open(os.path.join(ROOT, "docs", "scale-out.md")) as f:
        doc = f.read()
    script = _container(_kind(docs, "Job"))["args"][0]
    assert script.strip() in doc, "docs/scale-out.md does not show the pod's command"


def _pod_script(job):
    c = _container(job)
    assert c["command"] == ["/bin/sh", "-c"]
    return c["args"][0], _env(c)


def test_k8s_job_commands_run_four_shards_then_merge(ctx):
    """The Indexed Job's pod command, 4 at once (JOB_COMPLETION_INDEX 0..3),
    then the merge Job's command; as in the pods, but in this machine."""
    env = _bin(ctx)
    data = _data(ctx, "data")
    job = _kind(_yaml("batch-job.yaml"), "Job")
    script, penv = _pod_script(job)
    penv["WARD_DATA"] = data
    n = job["spec"]["completions"]
    pods = []
    for idx in range(n):
        e = dict(env, **penv, JOB_COMPLETION_INDEX=str(idx))
        pods.append(wardtest.spawn(["/bin/sh", "-c", script], env=e, cwd=ctx.tmp,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for idx, pod in enumerate(pods):
        out, err = pod.communicate(timeout=180)
        assert pod.returncode == 0, f"pod {idx}: {pod.returncode} {out[-800:]} {err[-1500:]}"
    # before the merge: the check names what is missing
    assert "no all.db" in layout_problems(data, n)
    mscript, menv = _pod_script(_kind(_yaml("merge-job.yaml"), "Job"))
    menv["WARD_DATA"] = data
    # the merge pod has no capability at all (capabilities: drop ALL)
    argv = ["/bin/sh", "-c", mscript]
    if shutil.which("capsh"):
        argv = [shutil.which("capsh"), "--drop=" + _all_caps(), "--", "-c", mscript]
    r = subprocess.run(argv, env=dict(env, **menv), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r
    assert layout_problems(data, n) == []
    # its ward-ship appended every run of its shard, once
    for i in range(1, n + 1):
        with open(os.path.join(data, f"shard-{i}.jsonl")) as f:
            runs = {json.loads(l)["run_id"] for l in f}
        shipped = _ocsf(os.path.join(data, f"shard-{i}.ocsf.jsonl"))
        assert {o["metadata"]["correlation_uid"] for o in shipped} == runs, i
    # a pod started again for its index resumes: nothing runs twice
    e = dict(env, **penv, JOB_COMPLETION_INDEX="1")
    r = subprocess.run(["/bin/sh", "-c", script], env=e, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "resume" in r.stdout, r
    con = sqlite3.connect(os.path.join(data, "shard-2.db"))
    assert con.execute("select count(*) from runs").fetchone()[0] == \
        len(open(os.path.join(data, "shard-2.jsonl")).readlines())
    con.close()
    # the checks fail when a shard is missing or two shards overlap
    os.rename(os.path.join(data, "shard-3.jsonl"), os.path.join(data, "gone"))
    assert any("shard 3" in x for x in layout_problems(data, n))
    os.rename(os.path.join(data, "gone"), os.path.join(data, "shard-3.jsonl"))
    shutil.copy(os.path.join(data, "shard-1.jsonl"), os.path.join(data, "shard-2.jsonl"))
    assert any("not exactly one" in x for x in layout_problems(data, n))
    # and the merge Job fails when a shard's database is missing
    os.remove(os.path.join(data, "shard-4.db"))
    r = subprocess.run(["/bin/sh", "-c", mscript], env=dict(env, **menv),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "shard-4.db" in r.stderr, r


def test_k8s_pod_stopped_then_started_again_resumes(ctx):
    """SIGTERM to the pod's shell (pid 1 in a pod, the kubelet's stop):
    it reaches ward batch, the pod fails (the Job starts it again), and
    the next pod for the index goes on with --resume: each sample of the
    shard has one final line and one finished run."""
    env = _bin(ctx)
    data = _data(ctx, "data")
    # slow samples, so that the stop comes while they run
    with open(os.path.join(data, "samples.jsonl"), "w") as f:
        for i in range(6):
            f.write(json.dumps({"id": f"slow-{i}", "language": "sh",
                                "code": "sleep 1; echo done", "expect_stdout": "done\n"}) + "\n")
    script, penv = _pod_script(_kind(_yaml("batch-job.yaml"), "Job"))
    e = dict(env)
    e.update(penv)
    e.update(WARD_DATA=data, WARD_SHARDS="1", WARD_JOBS="2", JOB_COMPLETION_INDEX="0")
    pod = wardtest.spawn(["/bin/sh", "-c", script], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out = os.path.join(data, "shard-1.jsonl")
    assert wardtest.wait_until(
        lambda: os.path.exists(out) and os.path.getsize(out) > 0, 60)
    pod.send_signal(signal.SIGTERM)
    _, err = pod.communicate(timeout=60)
    assert pod.returncode != 0, err
    with open(out) as f:
        first = [json.loads(l) for l in f]
    assert any(l["status"] == "cancelled" for l in first), first
    r = subprocess.run(["/bin/sh", "-c", script], env=e, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r
    with open(out) as f:
        final = {}
        for l in map(json.loads, f):
            if l["status"] != "cancelled":
                assert l["id"] not in final, l
                final[l["id"]] = l
    assert sorted(final) == [f"slow-{i}" for i in range(6)]
    assert all(l["pass"] for l in final.values())
    # the OCSF stream has every run that ended, the aborted ones too
    con = sqlite3.connect(os.path.join(data, "shard-1.db"))
    ended = {x[0] for x in con.execute("select id from runs where ended_ns is not null")}
    con.close()
    shipped = {o["metadata"]["correlation_uid"]
               for o in _ocsf(os.path.join(data, "shard-1.ocsf.jsonl"))}
    assert shipped == ended


# ---- what the pod needs, measured ----

# containerd's and Docker's default capability set
DEFAULT_CAPS = ["cap_chown", "cap_dac_override", "cap_fsetid", "cap_fowner", "cap_mknod",
                "cap_net_raw", "cap_setgid", "cap_setuid", "cap_setfcap", "cap_setpcap",
                "cap_net_bind_service", "cap_sys_chroot", "cap_kill", "cap_audit_write"]


def _all_caps():
    r = subprocess.run(["capsh", "--print"], capture_output=True, text=True, check=True)
    m = re.search(r"^Bounding set =(.*)$", r.stdout, re.M)
    return m.group(1).strip()


def _run_with_caps(ctx, keep):
    """ward run as root with only the capabilities keep (the pod's
    bounding set); the run's JSON and ward's stderr."""
    drop = [c for c in _all_caps().split(",") if c not in keep]
    db = ctx.path("caps.db")
    cmd = (f"exec {wardtest.ward_bin()} run --json --db {db} "
           "-c 'print(\"hi\")'")
    r = subprocess.run(["capsh", "--drop=" + ",".join(drop), "--", "-c", cmd],
                       capture_output=True, text=True, timeout=60)
    try:
        return json.loads(r.stdout), r.stderr
    except ValueError:
        # refused before a run began: no JSON, ward's message on stderr
        return {"status": f"exit {r.returncode}", "layers": []}, r.stderr


def test_pod_capabilities_are_those_ward_needs(ctx):
    """The runtime's default set plus the three batch-job.yaml adds: the
    run is ok with its namespaces, Landlock, seccomp and ptrace layers; each
    one left out breaks it (or its namespaces)."""
    if os.geteuid() != 0 or not shutil.which("capsh"):
        raise wardtest.Skip("needs root and capsh")
    job = _kind(_yaml("batch-job.yaml"), "Job")
    add = _container(job)["securityContext"]["capabilities"]["add"]
    keep = DEFAULT_CAPS + ["cap_" + c.lower() for c in add]
    j, err = _run_with_caps(ctx, keep)
    assert j["status"] == "ok" and j.get("stdout") == "hi\n", (j, err)
    layers = {l["name"]: l for l in j["layers"]}
    for name in ("namespaces", "landlock", "seccomp", "ptrace", "workdir-quota"):
        assert layers[name]["active"], layers[name]
    for cap in add:
        j, err = _run_with_caps(ctx, [c for c in keep if c != "cap_" + cap.lower()])
        layers = {l["name"]: l for l in j["layers"]}
        assert j["status"] != "ok" or not layers["namespaces"]["active"], (cap, j, err)


def test_k8s_pod_refuses_a_node_without_the_layers(ctx):
    """The pod's preflight: without CAP_SYS_ADMIN (no namespaces) the pod
    fails at once, exit 125, before its shard's database exists."""
    if os.geteuid() != 0 or not shutil.which("capsh"):
        raise wardtest.Skip("needs root and capsh")
    env = _bin(ctx)
    data = _data(ctx, "data")
    script, penv = _pod_script(_kind(_yaml("batch-job.yaml"), "Job"))
    e = dict(env)
    e.update(penv)
    e.update(WARD_DATA=data, JOB_COMPLETION_INDEX="0")
    drop = [c for c in _all_caps().split(",") if c == "cap_sys_admin"]
    r = subprocess.run([shutil.which("capsh"), "--drop=" + ",".join(drop), "--", "-c",
                        script], env=e, capture_output=True, text=True, timeout=60)
    assert r.returncode == 125 and "namespaces" in r.stderr, r
    assert not os.path.exists(os.path.join(data, "shard-1.db"))


def test_masked_proc_needs_root_or_unmasked(ctx):
    """A container runtime masks parts of /proc; ward as root mounts the
    run's /proc anyway, an unprivileged ward (in a user namespace) cannot
    (the kernel wants a fully visible /proc): exit 125, named. That is why
    the Job runs ward as root, and the unprivileged way needs procMount
    Unmasked."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"):
        raise wardtest.Skip("needs root, unshare and setpriv")
    os.chmod(ctx.tmp, 0o777)
    ward = wardtest.ward_bin()

    def run(user, mask):
        db = ctx.path(f"m-{user}-{mask}.db")
        cmd = f"{ward} run --json --db {db} -c 'print(1)'"
        if user:
            cmd = (f"HOME={ctx.tmp} setpriv --reuid=65534 --regid=65534 "
                   f"--clear-groups --inh-caps=-all -- {cmd}")
        if mask:
            cmd = f"mount -t tmpfs -o ro tmpfs /proc/acpi && {cmd}"
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    if not os.path.isdir("/proc/acpi"):
        raise wardtest.Skip("no /proc/acpi to mask")
    assert run(False, True)[0] == 0
    code, out, err = run(True, False)
    if code != 0:
        raise wardtest.Skip(f"no unprivileged user namespaces here: {err[-300:]}")
    code, out, err = run(True, True)
    assert code == 125 and "mounting /proc for the run's pid namespace" in err, (code, err)


# ---- the image ----

def _apt_list(dockerfile, stage):
    """The packages of the stage-th `apt-get install` of the Dockerfile."""
    runs = re.findall(r"apt-get install -y --no-install-recommends(.*?)&&",
                      dockerfile, re.S)
    return runs[stage].replace("\\", " ").split()


def test_image_package_lists(ctx):
    with open(os.path.join(EX, "Dockerfile")) as f:
        df = f.read()
    build, run = _apt_list(df, 0), _apt_list(df, 1)
    with open(os.path.join(ROOT, "tools", "install-deps")) as f:
        m = re.search(r'PKGS="(.*?)"', f.read(), re.S)
    deps = m.group(1).split()
    assert set(build) <= set(deps), set(build) - set(deps)
    # every library ward links or loads comes from a package of the image
    ldd = subprocess.run(["ldd", wardtest.ward_bin()], capture_output=True, text=True,
                         check=True).stdout
    # a sanitizer build's runtimes (make asan) are not the image's: it
    # builds plain ward
    libs = [l.split()[2] for l in ldd.splitlines() if "=>" in l and "/" in l
            and not re.search(r"/lib(asan|ubsan|lsan|tsan)\.so", l)]
    with open(wardtest.ward_bin(), "rb") as f:
        so = re.search(rb"libunwind-x86_64\.so\.\d+", f.read()).group().decode()
    libs.append(so)
    # the run stage's packages and all they depend on
    deps_of = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends",
                              "--no-suggests", "--no-conflicts", "--no-breaks",
                              "--no-replaces", "--no-enhances"] + run,
                             capture_output=True, text=True, check=True).stdout
    pulled = set(re.findall(r"^(\S+)$", deps_of, re.M)) | set(
        re.findall(r"^\s+(?:Pre)?Depends: (\S+)$", deps_of, re.M))
    missing = []
    for lib in libs:
        owner = ""
        for name in (lib, os.path.realpath(lib), "/usr" + lib, "*/" + lib):
            r = subprocess.run(["dpkg", "-S", name], capture_output=True, text=True)
            if r.returncode == 0:
                owner = r.stdout.split(":")[0]
                break
        # libc6 is in every Debian image
        if owner != "libc6" and owner not in pulled:
            missing.append((lib, owner))
    assert not missing, missing
    assert "COPY examples/scale-out/siem/ward-ship /usr/local/bin/ward-ship" in df


# ---- Slurm ----

def _sbatch(name):
    return os.path.join(EX, "slurm", name)


def test_slurm_array_runs_each_shard_then_merge(ctx):
    for name in ("batch.sbatch", "merge.sbatch"):
        r = subprocess.run(["bash", "-n", _sbatch(name)], capture_output=True, text=True)
        assert r.returncode == 0, r
    with open(_sbatch("batch.sbatch")) as f:
        m = re.search(r"^#SBATCH --array=1-(\d+)$", f.read(), re.M)
    n = int(m.group(1))
    env = _bin(ctx)
    data = _data(ctx, "slurm")
    env.update(WARD_DATA=data, SLURM_ARRAY_TASK_COUNT=str(n), SLURM_SUBMIT_DIR=ctx.tmp)
    tasks = [wardtest.spawn(["bash", _sbatch("batch.sbatch")],
                            env=dict(env, SLURM_ARRAY_TASK_ID=str(i)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
             for i in range(1, n + 1)]
    for i, t in enumerate(tasks, 1):
        out, err = t.communicate(timeout=180)
        assert t.returncode == 0, f"task {i}: {out[-600:]} {err[-1500:]}"
    r = subprocess.run(["bash", _sbatch("merge.sbatch")], env=dict(env, WARD_SHARDS=str(n)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r
    assert layout_problems(data, n) == []
    # a task outside 1..N is refused before it runs anything
    r = subprocess.run(["bash", _sbatch("batch.sbatch")],
                       env=dict(env, SLURM_ARRAY_TASK_ID="0"), capture_output=True, text=True)
    assert r.returncode == 125 and "--array=1-4" in r.stderr, r


# ---- the SIEM ----

def _ocsf(path):
    with open(path) as f:
        text = f.read()
    assert text == "" or text.endswith("\n"), "a line cut short"
    objs = [json.loads(l) for l in text.splitlines()]
    uids = [o["metadata"]["uid"] for o in objs]
    assert len(uids) == len(set(uids)), "an object shipped twice"
    return objs


def _vector():
    with open(os.path.join(EX, "siem", "vector.yaml")) as f:
        return yaml.safe_load(f)


def vector_problems(conf, objs, shipped_path):
    """Does the Vector config tail shipped_path, and does every OCSF object
    have each field its transforms read?"""
    p = []
    inc = [g for s in conf["sources"].values() if s["type"] == "file" for g in s["include"]]
    if not any(fnmatch.fnmatch(shipped_path, g) for g in inc):
        p.append(f"no file source includes {shipped_path}: {inc}")
    # ward-ship's own files beside it are not events
    for other in (shipped_path + ".part", shipped_path + ".shipped"):
        if any(fnmatch.fnmatch(other, g) for g in inc):
            p.append(f"a file source includes {other}")
    vrl = " ".join(t.get("source", "") + " " + t.get("condition", "")
                   for t in conf["transforms"].values())
    assigned = set(re.findall(r"^\s*(\.[a-z_.]+)\s*=(?!=)", vrl, re.M))
    read = set(re.findall(r"(?<![\w.])(\.[a-z_]+(?:\.[a-z_]+)*)", vrl))
    read -= assigned | {".message"}  # .message is Vector's: the line
    if not read:
        p.append("the transforms read no field")
    for path in sorted(read):
        for o in objs:
            v = o
            for k in path[1:].split("."):
                v = v.get(k) if isinstance(v, dict) else None
            if v is None:
                p.append(f"{path} missing in {o['metadata']['uid']}")
                break
    return p


def test_ship_follows_runs_and_vector_fields(ctx):
    env = _bin(ctx)
    db, out = ctx.path("s.db"), ctx.path("s.ocsf.jsonl")
    ship = [SHIP, db, out]
    # no database yet: nothing, and no error
    r = subprocess.run(ship + ["0"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and os.path.getsize(out) == 0, r
    # a database still being made (the batch beside it has just created
    # the file): the loop waits for it instead of dying (seen in the Slurm
    # script, whose shipper starts with its batch)
    open(db, "w").close()
    p = subprocess.Popen(ship + ["1"], env=env, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert p.poll() is None, p.stderr.read()
    os.unlink(db)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    ctx.run("print(1)", "--db", db, db=False)
    ctx.run("open('/etc/shadow')", "--db", db, db=False)
    assert subprocess.run(ship + ["0"], env=env).returncode == 0
    first = _ocsf(out)
    con = sqlite3.connect(db)
    runs = [x[0] for x in con.execute("select id from runs order by started_ns")]
    con.close()
    assert [o["metadata"]["correlation_uid"] for o in first][0] == runs[0]
    assert {o["metadata"]["correlation_uid"] for o in first} == set(runs)
    # the denial is there, as the Vector filter selects it
    blocked = [o for o in first if o["disposition_id"] == 2 and o["severity_id"] >= 3]
    assert blocked and blocked[0]["file"]["path"] == "/etc/shadow", blocked
    # a pass with nothing new appends nothing
    with open(out) as f:
        before = f.read()
    size = len(before.encode())
    assert subprocess.run(ship + ["0"], env=env).returncode == 0
    assert os.path.getsize(out) == size
    # following: runs made while it loops are appended as they end
    def last_id():
        con = sqlite3.connect(db)
        try:
            return con.execute("select id from runs order by started_ns desc"
                               " limit 1").fetchone()[0]
        finally:
            con.close()
    loop = wardtest.spawn(ship + ["1"], env=env, stderr=subprocess.PIPE, text=True)
    ctx.run("print(3)", "--db", db, db=False)
    third = last_id()
    assert wardtest.wait_until(
        lambda: third in open(out).read(), 15), "a new run was not shipped"
    loop.send_signal(signal.SIGTERM)
    _, err = loop.communicate(timeout=30)
    assert loop.returncode == 0, err
    # SIGTERM during the sleep between passes (60 s here): it ends at once
    # with one last pass, which ships the run made since the last one
    loop = wardtest.spawn(ship + ["60"], env=env, stderr=subprocess.PIPE, text=True)
    def sleeping():
        try:
            with open(f"/proc/{loop.pid}/task/{loop.pid}/children") as f:
                kids = f.read().split()
            for k in kids:
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    if f.read() == b"sleep\x0060\x00":
                        return True
        except OSError:
            pass
        return False
    assert wardtest.wait_until(sleeping, 15), "ward-ship never slept"
    ctx.run("print(4)", "--db", db, db=False)
    fourth = last_id()
    assert fourth not in open(out).read()
    t0 = time.monotonic()
    loop.send_signal(signal.SIGTERM)
    _, err = loop.communicate(timeout=30)
    assert loop.returncode == 0 and time.monotonic() - t0 < 10, (err, time.monotonic() - t0)
    assert fourth in open(out).read()
    objs = _ocsf(out)
    with open(out) as f:
        assert f.read().startswith(before), "the file was rewritten, not appended to"
    assert len({o["metadata"]["correlation_uid"] for o in objs}) == 4
    with open(out + ".shipped") as f:
        assert len(f.read().split()) == 4
    # the Vector config tails the files the pods write, and every field it
    # reads is in every object
    job = _kind(_yaml("batch-job.yaml"), "Job")
    pod_out = _env(_container(job))["WARD_DATA"] + "/shard-1.ocsf.jsonl"
    conf = _vector()
    assert vector_problems(conf, objs, pod_out) == []
    conf["transforms"]["ward_blocked"]["condition"] = ".disposition_idx == 2"
    assert vector_problems(conf, objs, pod_out)
    assert vector_problems(_vector(), objs, "/var/log/other.jsonl")
    # a database ward cannot read fails the shipper (no silent gap)
    with open(ctx.path("bad.db"), "w") as f:
        f.write("not a database")
    r = subprocess.run([SHIP, ctx.path("bad.db"), ctx.path("bad.out"), "0"], env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0, r
