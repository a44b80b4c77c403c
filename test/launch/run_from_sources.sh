#!/usr/bin/env bash
# The launch tests (test/launch) against ROS 2 launch built from source, where it is not
# installed: ROS 2 from PyPI wheels (./ws). SRC holds the repositories of sources.repos
# (`vcs import SRC < test/launch/sources.repos`); what is built goes to OUT (default
# SRC/../launch_overlay), never into the repository.
#
#   test/launch/run_from_sources.sh SRC [OUT] [pytest args...]
#
# launch_pytest 3.7 needs pytest < 8.4 (ros2/launch#947), so OUT gets pytest 8.3.5 too.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SRC [OUT] [pytest args...]" >&2; exit 2; }
SRC=$(cd "$1" && pwd); shift
OUT=${1:-$SRC/../launch_overlay}; [ $# -gt 0 ] && shift
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
for repo in launch launch_ros osrf_pycommon rcl_interfaces; do
  [ -d "$SRC/$repo" ] || { echo "$SRC/$repo is missing: vcs import $SRC < test/launch/sources.repos" >&2; exit 2; }
done
"$ROOT/ws" exec bash -s "$SRC" "$OUT" "$ROOT" "$@" <<'INNER'
set -euo pipefail
SRC=$1 OUT=$2 ROOT=$3; shift 3
PY="$OUT/python"
if [ ! -d "$PY/launch_ros" ]; then
  for package in osrf_pycommon launch/launch launch/launch_xml launch/launch_yaml launch/launch_testing \
                 launch/launch_pytest launch_ros/launch_ros; do
    python -m pip install -q --no-deps --no-build-isolation --upgrade --target "$PY" "$SRC/$package"
  done
  python -m pip install -q --no-deps --upgrade --target "$PY" "pytest==8.3.5"
fi
if [ ! -f "$OUT/install/local_setup.bash" ]; then
  colcon --log-base "$OUT/log" build --base-paths "$SRC/rcl_interfaces/composition_interfaces" \
    --build-base "$OUT/build" --install-base "$OUT/install" \
    --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$(command -v python)" \
    --event-handlers console_cohesion- summary+ status-
fi
set +u; source "$OUT/install/local_setup.bash"; set -u
export PYTHONPATH="$PY${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
exec python -m pytest -p no:cacheprovider test/launch "$@"
INNER
