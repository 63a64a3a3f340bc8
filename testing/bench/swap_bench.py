"""The component pool at real size on a GPU: the pool stages of gpu_suite.py, on SDXL (+ a fine-tune sharing
its text encoders and VAE, two LoRAs) and Flux (for the RAM-tier return of its 24 GB transformer).

    python testing/bench/swap_bench.py --out RESULTS_DIR [--wheels .whl_engine]

Measures in one run: cold load, pool-hit request vs the bare pipeline call, swap A→B sharing TE+VAE vs loading
B's UNet alone, RAM-tier return, LoRA switch, and VRAM after each swap. Any gpu_suite.py option passes through.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testing.bench.gpu_suite import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--families", "sdxl,flux", "--stages", "bare,pool", *sys.argv[1:]]))
