#!/usr/bin/env bash
# GPU checks for the telemetry package (tests/gpu): run on a machine with an NVIDIA driver.
# About 60 s: NVML field probe, a 30 s matrix-multiply window (torch CUDA, else cupy),
# and one monitor actor on a local Ray. Everything is skipped when pynvml.nvmlInit() fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
python - <<'PY'
import pynvml
try:
    pynvml.nvmlInit()
except pynvml.NVMLError as exc:
    print("NVML not usable here:", exc)
else:
    print("NVML driver", pynvml.nvmlSystemGetDriverVersion(), "GPUs", pynvml.nvmlDeviceGetCount())
    pynvml.nvmlShutdown()
PY
python -c "import touchstone_ray" 2>/dev/null || {
    echo "touchstone_ray not importable: pip install -e '.[dev]' first" >&2; exit 2; }
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
    2>/dev/null || echo "torch not installed: the load falls back to cupy"
export HOME="${HOME_FOR_RAY:-$(mktemp -d)}"  # Ray writes ~/.ray/auth_token (ray-notes.md)
exec python -m pytest tests/gpu -v -rs -s "$@"
