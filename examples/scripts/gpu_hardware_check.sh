#!/usr/bin/env bash
# Put stagetimer's view of the GPUs beside nvidia-smi's, on a machine with an NVIDIA driver.
# Usage: bash examples/scripts/gpu_hardware_check.sh [OUTDIR]   (run from the repository root)
set -uo pipefail
out=${1:-${OUT:-.}}
python3 -m pip install -q --no-deps --no-index --no-build-isolation . >/dev/null 2>&1 \
    || echo "(pip install failed: using the source tree)"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 -m stagetimer hardware --json | tee "$out/hardware.json"
python3 -m stagetimer hardware | tee "$out/hardware.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv | tee "$out/nvidia-smi.csv"
python3 - <<'PY' | tee "$out/compare.txt"
import json, os, subprocess, sys, time

t0 = time.perf_counter()
import stagetimer
hw = stagetimer.capture_hardware()
print(f"cold capture with NVML: {(time.perf_counter() - t0) * 1e3:.1f} ms")
for gpu in hw.gpus:
    bw = gpu.peak_memory_bandwidth_bytes_per_s
    print(f"{gpu.name}: bus {gpu.memory_bus_width_bits} bits, max memory clock "
          f"{gpu.max_memory_clock_mhz} MHz, usable {gpu.memory_usable_bytes} B, "
          f"derived peak bandwidth {bw / 1e9 if bw else None} GB/s (H200 SXM published: 4800 GB/s)")
uuid = hw.gpus[0].uuid if hw.gpus else None
forms = {"unset": None, "empty": "", "0": "0", "0,-1,0": "0,-1,0", "7": "7"}
if uuid:
    forms["uuid"] = uuid
    forms["uuid prefix"] = uuid[:12]
for label, value in forms.items():
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if value is not None:
        env["CUDA_VISIBLE_DEVICES"] = value
    got = subprocess.run([sys.executable, "-m", "stagetimer", "hardware", "--json"], env=env,
                         capture_output=True, text=True).stdout
    h = json.loads(got)["hardware"]
    print(f"CUDA_VISIBLE_DEVICES {label} ({value!r}): {len(h['gpus'])} GPU(s), "
          f"reason {h['gpu_reason']!r}")
PY
