from glob import glob

from setuptools import find_packages, setup

package_name = "franka_agent"
# launch/ and config/ live at the workspace top (the design card); install the Panda's
# into this package's share so `ros2 launch franka_agent ...` finds them.
WORKSPACE = "../.."

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
        (f"share/{package_name}/launch", glob(f"{WORKSPACE}/launch/panda*.launch.py")),
        (
            f"share/{package_name}/config",
            glob(f"{WORKSPACE}/config/panda*.yaml") + glob(f"{WORKSPACE}/config/think_times_panda*.csv"),
        ),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="spin_decoupler maintainers",
    maintainer_email="maintainers@spin-decoupler.dev",
    description="Panda agent, MuJoCo mock hardware and reach training for spin_decoupler.",
    license="GPL-3.0-only",
    entry_points={
        "console_scripts": [
            "panda_agent = franka_agent.panda_agent_node:main",
            "mock_hardware = franka_agent.mock.mock_hardware_node:main",
            "panda_trainer = franka_agent.train:main",
            "panda_pipeline = franka_agent.pipeline:main",
        ],
    },
)
