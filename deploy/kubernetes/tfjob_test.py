#!/usr/bin/python3
"""Checks the TFJob manifest(s) here without a Kubernetes cluster.

For every replica of every TFJob it derives the pod's TF_CONFIG as Kubeflow's
training operator does (cluster: "<job>-<type>-<index>.<namespace>.svc:<port>"
for each replica of each type, the type lower-cased, the port that of the
container port named "tfjob-port", 2222 without one; task: this pod's type
and index), runs the pod's command (the image's binary mapped to this build's)
with --dry_run, and checks what the program says it would be: the whole
cluster, this task, and a server reachable from other pods (0.0.0.0).

Usage: tfjob_test.py BUILD_DIR [MANIFEST...]   (default: every *.yaml here)
"""
import glob
import json
import os
import subprocess
import sys

import yaml

DEFAULT_PORT = 2222


def training_container(spec, where):
    containers = spec["template"]["spec"]["containers"]
    named = [c for c in containers if c.get("name") == "tensorflow"]
    assert len(named) == 1, f"{where}: no container named 'tensorflow'"
    return named[0]


def operator_cluster(job):
    """TF_CONFIG's cluster, as the training operator builds it."""
    name = job["metadata"]["name"]
    namespace = job["metadata"].get("namespace", "default")
    cluster = {}
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        c = training_container(spec, rtype)
        ports = [p["containerPort"] for p in c.get("ports", [])
                 if p.get("name") == "tfjob-port"]
        port = ports[0] if ports else DEFAULT_PORT
        t = rtype.lower()
        cluster[t] = [f"{name}-{t}-{i}.{namespace}.svc:{port}"
                      for i in range(int(spec.get("replicas", 1)))]
    return cluster


def check(build_dir, manifest):
    with open(manifest) as f:
        job = yaml.safe_load(f)
    assert job["apiVersion"] == "kubeflow.org/v1", job["apiVersion"]
    assert job["kind"] == "TFJob", job["kind"]
    cluster = operator_cluster(job)
    assert set(cluster) <= {"chief", "worker", "ps", "evaluator"}, cluster
    want_jobs = {t: addrs for t, addrs in cluster.items()}
    pods = 0
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        c = training_container(spec, rtype)
        cmd = list(c.get("command", [])) + list(c.get("args", []))
        assert cmd, f"{rtype}: the container has no command"
        binary = os.path.join(build_dir, "examples", os.path.basename(cmd[0]))
        assert os.access(binary, os.X_OK), f"{binary} is not built"
        port = cluster[rtype.lower()][0].rsplit(":", 1)[1]
        for index in range(int(spec.get("replicas", 1))):
            tf_config = {"cluster": cluster,
                         "task": {"type": rtype.lower(), "index": index},
                         "environment": "cloud"}
            env = dict(os.environ, TF_CONFIG=json.dumps(tf_config))
            out = subprocess.run([binary] + cmd[1:] + ["--dry_run"], env=env,
                                 capture_output=True, text=True, timeout=60)
            pod = f"{job['metadata']['name']}-{rtype.lower()}-{index}"
            assert out.returncode == 0, f"{pod}: {out.stderr}"
            said = dict(line.split(" ", 1)
                        for line in out.stdout.splitlines() if " " in line)
            got_jobs = {}
            for part in said["cluster"].split(";"):
                t, addrs = part.split("=", 1)
                got_jobs[t] = addrs.split(",")
            assert got_jobs == want_jobs, f"{pod}: {got_jobs} != {want_jobs}"
            task = f"/job:{rtype.lower()}/replica:0/task:{index}"
            assert said["task"] == task, f"{pod}: {said['task']} != {task}"
            assert said["listen"] == f"0.0.0.0:{port}", \
                f"{pod}: listens on {said['listen']}, which other pods cannot reach"
            pods += 1
    print(f"{manifest}: {pods} pods check out ({json.dumps(cluster)})")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = sys.argv[1]
    manifests = sys.argv[2:] or sorted(
        glob.glob(os.path.join(os.path.dirname(__file__), "*.yaml")))
    assert manifests, "no manifests"
    for m in manifests:
        check(build_dir, m)


if __name__ == "__main__":
    main()
