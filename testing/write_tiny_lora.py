"""Write a random LoRA for the tiny SD 1.5 UNet the way AI Toolkit saves an SD 1.5 LoRA (kohya keys over diffusers
module names, ``training_info`` and ``ss_base_model_version`` in the metadata). The UI's end-to-end test drops one
into a job folder under the training folder, as a finished training run would.

    python testing/write_tiny_lora.py <path.safetensors> [--step 250] [--seed 1]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    from safetensors.torch import save_file

    from testing.test_lora_formats import kohya, peft_lora

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--step", type=int, default=250)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.path)), exist_ok=True)
    metadata = {
        "training_info": json.dumps({"step": args.step, "epoch": 1}),
        "ss_base_model_version": "sd_1.5",
        "ss_output_name": os.path.basename(os.path.dirname(os.path.abspath(args.path))),
    }
    save_file(kohya(peft_lora(args.seed)), args.path, metadata=metadata)


if __name__ == "__main__":
    main()
