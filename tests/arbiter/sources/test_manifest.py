"""Kubernetes manifests as input: every kind that runs a pod template, the serve commands
its containers start, GPU counts, engine variables and the line of the args.

The manifests are written here, modelled on the shapes of real ones (none copied):
- the vLLM production stack's Helm chart, rendered (vllm-project/production-stack
  helm/templates/deployment-vllm-multi.yaml @010004ee: `command: [vllm, serve, MODEL,
  --host, ...]`, resources from the chart, `# Source:` comments between documents);
- SGLang's Kubernetes examples (sgl-project/sglang docker/k8s-sglang-service.yaml @2c7d0a5b,
  a Deployment; docker/k8s-sglang-distributed-sts.yaml @0e6ed14d, a two-node StatefulSet
  whose `command: [/bin/bash, -c]` takes the launch script from `args`);
- LeaderWorkerSet's vLLM example (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml
  @0e2e095a: a leader `sh -c` that starts Ray then the OpenAI server, 8 GPUs a pod, size 2);
- KServe's Hugging Face runtime docs (kserve/website docs/modelserving/v1beta1/llm/
  huggingface/README.md: `predictor.model` with `modelFormat` and `args`), and a vLLM
  ServingRuntime (`python -m vllm.entrypoints.openai.api_server` in `spec.containers`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter.sources import ManifestError, detect, key_lines, read_manifest, scan_manifest

HELM_RENDERED = """\
---
# Source: vllm-stack/templates/service-vllm.yaml
apiVersion: v1
kind: Service
metadata:
  name: demo-llama-engine-service
spec:
  ports: [{port: 80, targetPort: 8000}]
---
# Source: vllm-stack/templates/deployment-vllm-multi.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "demo-llama-deployment-vllm"
  namespace: serving
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: "vllm"
          image: "vllm/vllm-openai:v0.33.0"
          command:
          - "vllm"
          - "serve"
          - "meta-llama/Llama-3.1-8B-Instruct"
          - "--host"
          - "0.0.0.0"
          - "--port"
          - "8000"
          - "--no-enable-prefix-caching"
          - "--max-model-len"
          - "131072"
          - "--tensor-parallel-size"
          - "2"
          - "--gpu_memory_utilization"
          - "0.92"
          env:
          - name: HF_HOME
            value: /data
          - name: VLLM_ALLOW_LONG_MAX_MODEL_LEN
            value: "1"
          - name: HF_TOKEN
            valueFrom: {secretKeyRef: {name: demo-secrets, key: hf_token}}
          resources:
            requests:
              cpu: "8"
              nvidia.com/gpu: "2"
            limits:
              nvidia.com/gpu: "2"
"""

SGLANG_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama-31-8b-sglang}
spec:
  template:
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:latest
          command: ["python3", "-m", "sglang.launch_server"]
          args: ["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--host", "0.0.0.0", "--port", "30000", "--tp-size", "1"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""

SGLANG_TWO_NODES = """\
# two nodes, one pod each
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: distributed-sglang
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: sglang-container
        image: lmsysorg/sglang:latest
        command:
        - /bin/bash
        - -c
        args:
        - |
          python3 -m sglang.launch_server \\
          --model-path /llm-folder \\
          --dist-init-addr sglang-master-pod:5000 \\
          --tp-size 16 \\
          --nnodes 2 \\
          --node-rank $POD_INDEX \\
          --trust-remote-code
        env:
        - name: POD_INDEX
          valueFrom: {fieldRef: {fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']"}}
        resources:
          limits:
            nvidia.com/gpu: "8"
"""

LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        containers:
          - name: vllm-leader
            image: vllm/vllm-openai:v0.33.0
            command:
              - sh
              - -c
              - "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE);
                 python3 -m vllm.entrypoints.openai.api_server --port 8080 --model meta-llama/Llama-3.1-405B-Instruct --tensor-parallel-size 8 --pipeline-parallel-size 2"
            resources:
              limits: {nvidia.com/gpu: "8", memory: 1124Gi}
    workerTemplate:
      spec:
        containers:
          - name: vllm-worker
            image: vllm/vllm-openai:v0.33.0
            command: [sh, -c, "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)"]
            resources:
              limits: {nvidia.com/gpu: "8"}
"""

KSERVE = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: huggingface-llama3}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      args: [--model_name=llama3, --model_id=meta-llama/meta-llama-3-8b-instruct]
      resources:
        limits: {nvidia.com/gpu: "1"}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: custom-vllm}
spec:
  predictor:
    containers:
      - name: kserve-container
        image: vllm/vllm-openai:v0.33.0
        command: [vllm, serve]
        args: [/mnt/models, --served-model-name, llama, --max-num-seqs, "64"]
        resources:
          limits: {nvidia.com/gpu: "4"}
---
apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: vllm-runtime}
spec:
  supportedModelFormats: [{name: vLLM, autoSelect: true}]
  containers:
    - name: kserve-container
      image: vllm/vllm-openai:v0.33.0
      command: [python, -m, vllm.entrypoints.openai.api_server]
      args: [--port=8080, --model=/mnt/models, "--served-model-name={{.Name}}"]
"""

OTHERS = """\
apiVersion: v1
kind: Pod
metadata: {name: trt, namespace: lab}
spec:
  containers:
    - name: trtllm
      image: nvcr.io/nvidia/tensorrt-llm/release:1.2.0
      command: [trtllm-serve, serve, nvidia/Llama-3.1-8B-Instruct-FP8]
      args: [--tp_size, "2", --extra_llm_api_options, /cfg/extra.yaml, --port, $(PORT), --host, $(POD_IP)]
      env:
        - {name: CUDA_VISIBLE_DEVICES, value: "0,1,2"}
        - {name: PORT, value: "8000"}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
      resources: {limits: {nvidia.com/gpu: 2}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: smoke}
spec:
  template:
    spec:
      containers:
        - name: mlc
          command: [bash, -c, "set -e\\nmlc_llm serve HF://mlc-ai/Llama-3-8B-Instruct-q4f16_1-MLC --mode server"]
          resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: List
items:
  - apiVersion: batch/v1
    kind: CronJob
    metadata: {name: nightly}
    spec:
      jobTemplate:
        spec:
          template:
            spec:
              containers:
                - name: bench
                  image: lmsysorg/sglang:latest
                  args: [python3, -m, sglang.launch_server, --model, Qwen/Qwen2-7B, --tp, "2"]
"""


def test_the_rendered_production_stack_chart() -> None:
    manifest = scan_manifest(HELM_RENDERED)
    (w,) = manifest.workloads
    assert (w.dialect, w.kind, w.name, w.container, w.namespace) == (
        "vllm",
        "Deployment",
        "demo-llama-deployment-vllm",
        "vllm",
        "serving",
    )
    assert w.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert (w.gpus, w.gpu_requests, w.total_gpus, w.replicas) == (2, 2, 2, 2)
    assert w.args[:3] == ("meta-llama/Llama-3.1-8B-Instruct", "--host", "0.0.0.0")
    assert w.serve_args.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0")
    assert "--tensor-parallel-size 2" in w.serve_args
    assert set(w.env) == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN"}  # HF_HOME and HF_TOKEN change no setting
    assert "max-model-len" in w.env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"]
    # the container has no args: the line is the command's, in the file's own numbering
    assert HELM_RENDERED.splitlines()[w.line - 1].strip() == "command:"
    assert w.document == 1
    # each flag written as its own list item has its line (SARIF points at it)
    assert (
        HELM_RENDERED.splitlines()[w.flag_lines["max-model-len"] - 1].strip()
        == '- "--max-model-len"'
    )
    assert w.flag_lines["gpu_memory_utilization"] == w.flag_lines["gpu-memory-utilization"]
    assert any("Service/demo-llama-engine-service" in s for s in manifest.skipped)


def test_sglang_deployment_and_two_node_statefulset() -> None:
    (one,) = read_manifest(SGLANG_DEPLOYMENT)
    assert (one.dialect, one.model, one.gpus) == ("sglang", "meta-llama/Llama-3.1-8B-Instruct", 1)
    assert one.serve_args.startswith("python -m sglang.launch_server --model-path")
    assert SGLANG_DEPLOYMENT.splitlines()[one.line - 1].strip().startswith("args:")
    (two,) = read_manifest(SGLANG_TWO_NODES)
    assert (two.kind, two.dialect, two.gpus, two.replicas) == ("StatefulSet", "sglang", 8, 2)
    assert two.check_gpus == 8  # per node: --nnodes 2 names the nodes
    assert two.model == "/llm-folder"
    assert "--nnodes" in two.args and "2" in two.args
    assert "\\" not in " ".join(two.args)  # the script's continuation lines are joined
    # $POD_INDEX comes from the pod-index label: checked as pod 0, the master
    assert two.args[two.args.index("--node-rank") + 1] == "0"
    assert two.unresolved == ()
    assert SGLANG_TWO_NODES.splitlines()[two.line - 1].strip() == "args:"


def test_leader_worker_set_counts_the_workers_gpus() -> None:
    manifest = scan_manifest(LWS)
    (leader,) = manifest.workloads
    assert (leader.kind, leader.role, leader.dialect) == ("LeaderWorkerSet", "leader", "vllm")
    assert leader.model == "meta-llama/Llama-3.1-405B-Instruct"
    assert (leader.gpus, leader.pods, leader.worker_gpus, leader.total_gpus) == (8, 2, 8, 16)
    assert leader.check_gpus == 16
    assert leader.args[-4:] == ("--tensor-parallel-size", "8", "--pipeline-parallel-size", "2")
    assert any("worker of the leader's engine" in s for s in manifest.skipped)


def test_kserve_inference_services_and_runtime() -> None:
    manifest = scan_manifest(KSERVE)
    by_name = {w.name: w for w in manifest.workloads}
    assert set(by_name) == {"custom-vllm", "vllm-runtime"}
    custom = by_name["custom-vllm"]
    assert (custom.role, custom.gpus, custom.model) == ("predictor", 4, "/mnt/models")
    runtime = by_name["vllm-runtime"]
    assert (runtime.kind, runtime.role, runtime.gpus, runtime.model) == (
        "ServingRuntime",
        "runtime",
        None,
        "/mnt/models",
    )
    assert any("GPU count is not in the manifest" in n for n in runtime.notes)
    # the Hugging Face runtime's own server is no engine command line: skipped, with why
    assert any("huggingface-llama3" in s and "no engine server" in s for s in manifest.skipped)


def test_pod_job_and_a_list_with_a_cronjob() -> None:
    found = {w.name: w for w in read_manifest(OTHERS)}
    assert set(found) == {"trt", "smoke", "nightly"}
    trt = found["trt"]
    assert (trt.dialect, trt.model, trt.gpus, trt.namespace) == (
        "trtllm",
        "nvidia/Llama-3.1-8B-Instruct-FP8",
        2,
        "lab",
    )
    assert trt.serve_args.startswith("trtllm-serve nvidia/Llama-3.1-8B-Instruct-FP8 --tp_size 2")
    assert "CUDA_VISIBLE_DEVICES" in trt.env
    # $(PORT) has a value in the manifest, $(POD_IP) only at run time
    assert trt.args[-4:] == ("--port", "8000", "--host", "$(POD_IP)")
    assert trt.unresolved == ("POD_IP",)
    assert any("$POD_IP: no value in the manifest" in n for n in trt.notes)
    assert any("lists 3 GPU(s) of the 2" in n for n in trt.notes)
    assert (found["smoke"].dialect, found["smoke"].kind) == ("mlc", "Job")
    nightly = found["nightly"]
    assert (nightly.kind, nightly.dialect, nightly.model, nightly.gpus) == (
        "CronJob",
        "sglang",
        "Qwen/Qwen2-7B",
        None,
    )
    assert nightly.document == 2 and nightly.path.startswith("items[0].")
    assert OTHERS.splitlines()[nightly.line - 1].strip().startswith("args:")


def test_a_manifest_is_detected_as_one() -> None:
    assert detect(LWS).kind == "manifest"


@pytest.mark.parametrize("written", ['"eight"', '"1.5"', "true", "2.0"])
def test_a_gpu_count_that_is_no_whole_number_is_named(written: str) -> None:
    text = SGLANG_DEPLOYMENT.replace("nvidia.com/gpu: 1", f"nvidia.com/gpu: {written}")
    with pytest.raises(ManifestError) as info:
        read_manifest(text, source="deploy.yaml")
    assert info.value.file == "deploy.yaml"
    assert "nvidia.com/gpu" in str(info.value)
    assert "whole number" in str(info.value)


def test_broken_yaml_is_named() -> None:
    with pytest.raises(ManifestError) as info:
        read_manifest("apiVersion: v1\nkind: Pod\nspec: [unclosed\n", source="bad.yaml")
    assert str(info.value).startswith("bad.yaml: not valid YAML")


def test_key_lines_of_a_manifest_document() -> None:
    lines = key_lines(SGLANG_DEPLOYMENT)
    assert lines["spec.template.spec.containers[0].args"] == 11
    assert lines["spec.template.spec.containers[0].resources.limits.nvidia.com/gpu"] == 14


def _all_workloads() -> list:
    return [
        w
        for text in (HELM_RENDERED, SGLANG_DEPLOYMENT, SGLANG_TWO_NODES, LWS, KSERVE, OTHERS)
        for w in read_manifest(text)
    ]


def test_every_serve_line_reads_with_its_dialects_own_parser() -> None:
    from arbiter.engines.sglang.serve import read_arguments
    from arbiter.engines.trtllm.serve import parse as trtllm_parse
    from arbiter.engines.vllm.serve import parse as vllm_parse

    parsers = {
        "vllm": vllm_parse,
        "trtllm": trtllm_parse,
        "sglang": lambda line: read_arguments(None, line),
    }
    read = 0
    for w in _all_workloads():
        if w.dialect in parsers:
            parsers[w.dialect](w.serve_args)  # raises on a line the dialect cannot read
            read += 1
    assert read == 8


def test_a_workload_checks_with_the_manifests_gpus_and_model() -> None:
    from arbiter.dialects.vllm import check_vllm

    (w,) = read_manifest(HELM_RENDERED)
    llama = Path(__file__).parents[3] / "tests" / "fixtures" / "models" / "llama-3.1-8b.json"
    verdict = check_vllm(
        None, serve_args=w.serve_args, model=llama, device="H100", gpus=w.check_gpus
    )
    assert verdict.verdict == "accept", verdict.reasons
